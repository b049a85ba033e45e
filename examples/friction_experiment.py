"""Write a simulated LuGre friction experiment as a CSV for `jaxid lugre`.

    python examples/friction_experiment.py friction.csv [--noise 0.002]

One axis driven along the S-curve of ``jaxid.excitation.scurve.friction_s_curve`` (3.75 s at
1 kHz: creep dwells, a staircase of slow plateaus, fast reversals), its friction force simulated
with the LuGre model at the reference parameters (``jaxid.friction.lugre.reference_parameters``)
plus Gaussian noise of ``--noise`` N. Columns: t (s), x (m), v (m/s), F (N): the format
``jaxid lugre`` reads for one axis.
"""
import argparse

import numpy as np

import jaxid  # noqa: F401  (float64)
from jaxid.excitation.scurve import friction_s_curve
from jaxid.friction import lugre


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output")
    ap.add_argument("--noise", type=float, default=0.002, help="force noise std, N (default 0.002)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    dt = 1e-3
    t, x, v, _ = (np.asarray(u) for u in friction_s_curve(dt=dt))
    F = np.asarray(lugre.simulate(lugre.reference_parameters(), v, dt, substeps=16))
    F = F + args.noise * np.random.default_rng(args.seed).normal(size=F.shape)
    np.savetxt(args.output, np.column_stack([t, x, v, F]), delimiter=",", header="t,x,v,F", comments="",
               fmt="%.17g")
    print(f"wrote {args.output}: {len(t)} samples at {1 / dt:g} Hz")


if __name__ == "__main__":
    main()

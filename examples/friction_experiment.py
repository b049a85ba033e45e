"""Write a simulated LuGre friction experiment of two axes as a CSV for `jaxid lugre`.

    python examples/friction_experiment.py friction.csv [--noise 0.002]

Two axes driven along the S-curve of ``jaxid.excitation.scurve.friction_s_curve`` (3.75 s at
1 kHz: creep dwells, a staircase of slow plateaus, fast reversals), their friction forces
simulated with the LuGre model (axis 1: ``jaxid.friction.lugre.reference_parameters``; axis 2:
another parameter set) plus Gaussian noise of ``--noise`` N. Columns: t (s), q1, q2 (m),
qd1, qd2 (m/s), F1, F2 (N): the multi-axis format ``jaxid lugre`` reads.
"""
import argparse

import numpy as np

import jaxid  # noqa: F401  (float64)
from jaxid.excitation.scurve import friction_s_curve
from jaxid.friction import lugre

#: The second axis: every parameter differs from the reference set (sigma0 N/m, sigma1 N s/m,
#: alpha0 = Fc N, alpha1 = Fs - Fc N, v0 m/s, vd m/s, alpha2 N s/m, alpha3 N s^2/m^2).
AXIS2 = lugre.LuGre(5e4, 200.0, 0.8, 0.4, 1.5e-3, 0.02, 0.3, 0.05)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output")
    ap.add_argument("--noise", type=float, default=0.002, help="force noise std, N (default 0.002)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    dt = 1e-3
    t, x, v, _ = (np.asarray(u) for u in friction_s_curve(dt=dt))
    F = np.stack([np.asarray(lugre.simulate(p, v, dt, substeps=16)) for p in (lugre.reference_parameters(), AXIS2)], 1)
    F = F + args.noise * np.random.default_rng(args.seed).normal(size=F.shape)
    np.savetxt(args.output, np.column_stack([t, x, x, v, v, F]), delimiter=",", header="t,q1,q2,qd1,qd2,F1,F2",
               comments="", fmt="%.17g")
    print(f"wrote {args.output}: {len(t)} samples at {1 / dt:g} Hz, 2 axes")


if __name__ == "__main__":
    main()

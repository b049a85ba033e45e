"""Regenerate the figures of the documentation site (docs/figures/).

    python docs/figures/make_figures.py          # friction.svg, lugre.svg (seconds)
    python docs/figures/make_figures.py --all    # also excitation-preview.png and report-parameters.svg
                                                 # (runs jaxid excite/simulate/identify: 2 minutes on 2 cores)

Needs matplotlib (the ``report`` extra). ``pipeline.svg`` is drawn by hand (edit it as text).
The figures are committed; the site build does not run this script.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STYLE = {
    "svg.fonttype": "none",  # text stays text: small files, searchable
    "svg.hashsalt": "jaxid-docs",  # stable ids: a rerun without changes rewrites the same file
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _wrote(path: Path) -> None:
    print(f"wrote {path.relative_to(HERE.parents[1])} ({path.stat().st_size / 1024:.1f} kB)")


def _save(fig, name: str) -> None:
    fig.savefig(HERE / name, metadata={"Date": None, "Creator": None})
    _wrote(HERE / name)


def friction_curves(plt) -> None:
    """The static joint friction models of ``jaxid.friction.models`` against the joint velocity."""
    from jaxid.friction import models

    qd = np.linspace(-1.0, 1.0, 801)
    fc, fs, vs, fv = 1.0, 1.6, 0.08, 0.8
    curves = {
        "Coulomb + viscous": models.coulomb(qd, fc) + models.viscous(qd, fv),
        "Stribeck + viscous": models.stribeck(qd, fc, fs, vs) + models.viscous(qd, fv),
        "asymmetric (Coulomb + viscous per direction)": models.asymmetric(qd, 1.2, 0.7, 0.8, 0.5),
    }
    fig, ax = plt.subplots(figsize=(5.2, 2.8), layout="constrained")
    for (label, tau), style in zip(curves.items(), ("-", "--", ":"), strict=True):
        ax.plot(qd, np.asarray(tau), style, lw=1.5, label=label)
    ax.axhline(0, color="0.8", lw=0.6, zorder=0)
    ax.axvline(0, color="0.8", lw=0.6, zorder=0)
    ax.set_xlabel("joint velocity qd (rad/s)")
    ax.set_ylabel("friction torque (N m)")
    ax.set_title(f"static friction: fc = {fc}, fs = {fs} N m, vs = {vs} rad/s, fv = {fv} N m s/rad", fontsize=8)
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    _save(fig, "friction.svg")
    plt.close(fig)


def lugre_curves(plt) -> None:
    """LuGre (``jaxid.friction.lugre``): the steady-state (Stribeck) curve and the force along a
    slow velocity oscillation, which lags it (hysteresis) at low speed."""
    from jaxid.friction import lugre

    p = lugre.reference_parameters()
    v = np.linspace(-0.01, 0.01, 801)
    steady = np.asarray(lugre.stribeck(p, v))
    dt, f = 1e-3, 1.0
    t = np.arange(0.0, 3.0, dt)
    v_t = 0.006 * np.sin(2 * np.pi * f * t)
    force = np.asarray(lugre.simulate(p, v_t, dt))
    last = t >= 1.0  # one period after the start-up transient
    fig, ax = plt.subplots(figsize=(5.2, 2.8), layout="constrained")
    ax.plot(1e3 * v, steady, color="0.5", lw=1.2, label="steady state g(v) sgn(v) + f(v)")
    ax.plot(1e3 * v_t[last], force[last], lw=1.3, label=f"along v(t) = 6 mm/s sin(2π {f:g} Hz t)")
    ax.axhline(0, color="0.8", lw=0.6, zorder=0)
    ax.axvline(0, color="0.8", lw=0.6, zorder=0)
    ax.set_xlabel("velocity v (mm/s)")
    ax.set_ylabel("friction force F (N)")
    ax.set_title("LuGre, parameters of Canudas de Wit et al. (1995)", fontsize=8)
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    _save(fig, "lugre.svg")
    plt.close(fig)


def cli_figures() -> None:
    """excitation-preview.png (``jaxid excite --preview`` of the UR5, quantised to 64 colours) and
    report-parameters.svg (the parameter chart of ``jaxid identify --report``, two-link planar arm)."""
    from PIL import Image

    def jaxid(*args: str, cwd: Path) -> None:
        subprocess.run([sys.executable, "-m", "jaxid", *args], cwd=cwd, check=True)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        jaxid("excite", "--robot", "ur5", "--starts", "2", "--steps", "20", "-o", "ur5.csv",
              "--preview", "preview.png", cwd=work)  # fmt: skip
        image = Image.open(work / "preview.png").convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
        image.save(HERE / "excitation-preview.png", optimize=True)
        _wrote(HERE / "excitation-preview.png")
        jaxid("excite", "--robot", "planar2", "--starts", "2", "--steps", "20", "-o", "traj.csv", cwd=work)
        jaxid("simulate", "--robot", "planar2", "--trajectory", "traj.csv", "--robot-seed", "1", "--noise-seed", "1",
              "-o", "data.csv", cwd=work)  # fmt: skip
        jaxid("identify", "--robot", "planar2", "data.csv", "-o", "params.json", "--report", "report", cwd=work)
        shutil.copyfile(work / "report/figures/parameters.svg", HERE / "report-parameters.svg")
        _wrote(HERE / "report-parameters.svg")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also the figures made by the jaxid command line")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import jaxid  # noqa: F401  (float64, as the library runs)

    with plt.rc_context(STYLE):
        friction_curves(plt)
        lugre_curves(plt)
    if args.all:
        cli_figures()


if __name__ == "__main__":
    main()

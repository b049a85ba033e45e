"""A preview figure of an excitation before it is run on a robot (matplotlib, the ``report`` extra).

Left: joint positions against their limits, velocities and torques (the nominal model's)
as fractions of their limits, and the least clearance of each geometric constraint over
time (pairs and links whose clearance the motion leaves constant are left out). Right: a
3-D view of the arm's capsules at a few instants (a frame strip in one picture, later poses
lighter), with the floor.
"""
from __future__ import annotations

import numpy as np

__all__ = ["preview"]


def preview(robot, excitation, path, *, limits=None, constraints=None, poses=5, fs=20.0):
    """Write the preview PNG of ``excitation`` (an ``Excitation``) for ``robot`` to ``path``.

    limits: the limit overrides it was optimised with; constraints: its ``Constraints``
    (the clearance panel and the capsules; without, the skeleton of joint origins is drawn);
    poses: instants drawn in 3-D (evenly over the period); fs: sample rate of the plots, Hz.
    Raises ImportError naming ``pip install 'jaxid[report]'`` without matplotlib.
    """
    import jax
    import jax.numpy as jnp

    from jaxid.dynamics.rnea import forward_kinematics_rp
    from jaxid.dynamics.terms import rnea
    from jaxid.excitation.optimize import _limits
    from jaxid.report import _save, pyplot

    plt = pyplot()
    t, q, qd, qdd = (np.asarray(x) for x in excitation.trajectory(fs))
    tau = np.asarray(rnea(robot, q, qd, qdd))
    lim = _limits(robot, limits)
    fig = plt.figure(figsize=(15, 9))
    grid = fig.add_gridspec(4, 2, width_ratios=(1.3, 1))
    ax = [fig.add_subplot(grid[k, 0]) for k in range(4)]
    names = getattr(robot, "names", [f"joint {j + 1}" for j in range(robot.n)])
    for j in range(robot.n):
        line, = ax[0].plot(t, q[:, j], label=names[j])
        for b in (lim["q_min"][j], lim["q_max"][j]):
            if np.isfinite(b):
                ax[0].axhline(b, color=line.get_color(), ls="--", lw=0.8)
        ax[1].plot(t, np.abs(qd[:, j]) / lim["qd_max"][j] if np.isfinite(lim["qd_max"][j]) else qd[:, j] * 0)
        ax[2].plot(t, np.abs(tau[:, j]) / lim["tau_max"][j] if np.isfinite(lim["tau_max"][j]) else tau[:, j] * 0)
    ax[0].set_ylabel("q (rad)")
    ax[0].legend(fontsize=7, ncol=min(robot.n, 4), loc="upper right")
    for a, what in ((ax[1], "|qd| / limit"), (ax[2], "|tau| / limit")):
        a.axhline(1.0, color="k", ls="--", lw=0.8)
        a.set_ylabel(what)
    if constraints is not None:
        m = np.asarray(jax.jit(lambda x: constraints.margins(robot, x))(jnp.asarray(q)))
        kinds, _ = constraints.labels(robot.parents)
        moving = np.ptp(m, axis=0) > 1e-6  # pairs whose distance the motion does not change are left out
        for kind in dict.fromkeys(kinds):
            cols = [k for k, kd in enumerate(kinds) if kd == kind and moving[k]]
            if cols:
                ax[3].plot(t, 1e3 * (m[:, cols].min(axis=1) + constraints.clearance), label=kind)
        ax[3].axhline(1e3 * constraints.clearance, color="k", ls="--", lw=0.8)
        ax[3].legend(fontsize=7)
    ax[3].set_ylabel("least clearance (mm)")
    ax[3].set_xlabel("t (s)")

    ax3 = fig.add_subplot(grid[:, 1], projection="3d")
    idx = np.linspace(0, len(t) - 1, poses + 1).astype(int)[:-1] if poses > 1 else [0]
    R, p = jax.jit(jax.vmap(lambda x: forward_kinematics_rp(robot, x)))(jnp.asarray(q[idx]))
    pts = []
    for s, k in enumerate(idx):
        shade = plt.cm.viridis(s / max(len(idx) - 1, 1))
        if constraints is not None:
            A, B = (np.asarray(x) for x in constraints.capsules.world(R[s], p[s]))
            for a, b, r in zip(A, B, constraints.capsules.radius):
                ax3.plot(*np.stack([a, b]).T, color=shade, lw=max(1.0, 150 * r), alpha=0.6, solid_capstyle="round")
            pts += [A, B]
        chain = np.vstack([np.zeros(3), np.asarray(p[s])])
        ax3.plot(*chain.T, "o-", color=shade, ms=2, lw=1, label=f"t = {t[k]:.1f} s")
        pts.append(chain)
    pts = np.vstack(pts)
    half = 0.55 * np.max(pts.max(axis=0) - pts.min(axis=0))
    mid = 0.5 * (pts.max(axis=0) + pts.min(axis=0))
    ax3.set_xlim(mid[0] - half, mid[0] + half)
    ax3.set_ylim(mid[1] - half, mid[1] + half)
    ax3.set_zlim(mid[2] - half, mid[2] + half)
    if constraints is not None and constraints.floor is not None:
        gx, gy = np.meshgrid(*(np.linspace(m_ - half, m_ + half, 2) for m_ in mid[:2]))
        ax3.plot_surface(gx, gy, np.full_like(gx, constraints.floor), color="0.8", alpha=0.3)
    ax3.set_xlabel("x (m)")
    ax3.set_ylabel("y (m)")
    ax3.set_zlabel("z (m)")
    ax3.legend(fontsize=7, loc="upper left")
    verdict = "feasible" if excitation.feasible else "INFEASIBLE"
    fig.suptitle(f"{getattr(robot, 'name', 'robot')} excitation: T = {excitation.period:g} s, "
                 f"cond {excitation.cond:.3g}, {verdict}")
    fig.tight_layout()
    _save(fig, path)

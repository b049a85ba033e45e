"""A preview figure of an excitation before it is run on a robot (matplotlib, the ``report`` extra).

Left: joint positions against their limits; the velocity, acceleration, jerk and torque (the
nominal model's) as the largest fraction of its limit over the joints, against the limit and
the margin the optimiser kept; and the least clearance of each geometric constraint over
time (pairs and links whose clearance the motion leaves constant are left out). With a start
pose the approach move from it to home comes first, shaded. Right: a 3-D view of the arm's
capsules at a few instants (a frame strip in one picture, later poses lighter), with the floor.
"""

from __future__ import annotations

import numpy as np

__all__ = ["preview"]


def preview(robot, excitation, path, *, limits=None, constraints=None, poses=5, fs=20.0, start_from=None):
    """Write the preview PNG of ``excitation`` (an ``Excitation``) for ``robot`` to ``path``.

    limits: the limit overrides it was optimised with; constraints: its ``Constraints``
    (the clearance panel and the capsules; without, the skeleton of joint origins is drawn);
    poses: instants drawn in 3-D (evenly over the period); fs: sample rate of the plots, Hz;
    start_from: the robot's current pose (n,), rad: the approach move from it to home
    (``Excitation.approach_time``, as ``jaxid excite --start-from`` writes it) is drawn first.
    Raises ImportError naming ``pip install 'jaxid[report]'`` without matplotlib.
    """
    import jax
    import jax.numpy as jnp

    from jaxid.dynamics.rnea import forward_kinematics_rp
    from jaxid.dynamics.terms import rnea
    from jaxid.excitation.optimize import LIMITS, _scales, _usage, model_limits
    from jaxid.figures import pyplot
    from jaxid.figures import save_png as _save

    plt = pyplot()
    t, q, qd, qdd, qddd = (np.asarray(x) for x in excitation.trajectory(fs, start_from=start_from, jerk=True))
    t_approach = 0.0 if start_from is None else excitation.approach_time(start_from, fs)
    tau = np.asarray(rnea(robot, q, qd, qdd))
    lim = model_limits(robot, limits)
    centre, bound = _scales(lim)
    # (5, N): the largest fraction of each limit over the joints (an absent limit: 0).
    usage = np.max(np.asarray(_usage(q, qd, qdd, qddd, tau, centre, bound)), axis=2)
    fig = plt.figure(figsize=(15, 9))
    grid = fig.add_gridspec(3, 2, width_ratios=(1.3, 1))
    ax = [fig.add_subplot(grid[k, 0]) for k in range(3)]
    names = getattr(robot, "names", [f"joint {j + 1}" for j in range(robot.n)])
    for j in range(robot.n):
        (line,) = ax[0].plot(t, q[:, j], label=names[j])
        for b in (lim["q_min"][j], lim["q_max"][j]):
            if np.isfinite(b):
                ax[0].axhline(b, color=line.get_color(), ls="--", lw=0.8)
    ax[0].set_ylabel("q (rad)")
    ax[0].legend(fontsize=7, ncol=min(robot.n, 4), loc="upper right")
    for k, kind in enumerate(LIMITS):
        if k and np.any(np.isfinite(bound[k])):
            ax[1].plot(t, usage[k], label=kind)
    ax[1].axhline(1.0, color="k", ls="--", lw=0.8)
    ax[1].axhline(1.0 - excitation.margin, color="k", ls=":", lw=0.8, label=f"margin {excitation.margin:g}")
    ax[1].set_ylabel("max |x| / limit")
    ax[1].legend(fontsize=7, ncol=5, loc="upper right")
    if constraints is not None:
        m = np.asarray(jax.jit(lambda x: constraints.margins(robot, x))(jnp.asarray(q)))
        kinds, _ = constraints.labels(robot.parents)
        moving = np.ptp(m, axis=0) > 1e-6  # pairs whose distance the motion does not change are left out
        for kind in dict.fromkeys(kinds):
            cols = [k for k, kd in enumerate(kinds) if kd == kind and moving[k]]
            if cols:
                ax[2].plot(t, 1e3 * (m[:, cols].min(axis=1) + constraints.clearance), label=kind)
        ax[2].axhline(1e3 * constraints.clearance, color="k", ls="--", lw=0.8)
        ax[2].legend(fontsize=7)
    ax[2].set_ylabel("least clearance (mm)")
    ax[2].set_xlabel("t (s)")
    if t_approach:
        for a in ax:
            a.axvspan(0.0, t_approach, color="0.85", zorder=0)
        ax[0].text(0.5 * t_approach, ax[0].get_ylim()[1], "approach", ha="center", va="top", fontsize=7)

    ax3 = fig.add_subplot(grid[:, 1], projection="3d")
    # The poses are drawn over the excitation's period (the approach's start is the first one drawn).
    first = int(np.searchsorted(t, t_approach))
    last = first + int(round(excitation.period * fs))
    idx = np.linspace(first, last, poses + 1).astype(int)[:-1] if poses > 1 else [first]
    if t_approach:
        idx = np.r_[0, idx]
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
    fig.suptitle(
        f"{getattr(robot, 'name', 'robot')} excitation: T = {excitation.period:g} s, "
        f"cond {excitation.cond:.3g}, {verdict}" + (f", after a {t_approach:g} s approach" if t_approach else "")
    )
    fig.tight_layout()
    _save(fig, path)

"""The physically consistent identification problem, shared by its two solvers
([`jaxid.identification.consistent`][jaxid.identification.consistent]: barrier Newton in JAX, log-Cholesky Gauss-Newton;
[`jaxid.identification.sdp`][jaxid.identification.sdp]: the conic reference).

What is solved, not how: the priors ([`PRIORS`][jaxid.identification.consistent_problem.PRIORS]), the joint terms held >= 0
([`POSITIVE_TERMS`][jaxid.identification.consistent_problem.POSITIVE_TERMS]), the plausibility
[`Bounds`][jaxid.identification.consistent_problem.Bounds] on the bodies, the data misfit in
b-vector form ([`DataTerm`][jaxid.identification.consistent_problem.DataTerm], [`data_term`][jaxid.identification.consistent_problem.data_term],
[`reduced_data_term`][jaxid.identification.consistent_problem.reduced_data_term]), the prior's
reference point ([`prior_reference`][jaxid.identification.consistent_problem.prior_reference]) and the checks of the inputs
([`check_inputs`][jaxid.identification.consistent_problem.check_inputs],
[`check_nominal`][jaxid.identification.consistent_problem.check_nominal]). The problem itself is stated in
[`jaxid.identification.consistent`][jaxid.identification.consistent].
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxid.identification.base import BaseParameters, lift
from jaxid.identification.estimators import Identification, identify
from jaxid.model import inertia

PRIORS = (None, "euclidean", "entropic")
#: Joint terms constrained to be >= 0 (``exp`` parametrisation): inertia, dissipative friction,
#: the Stribeck excess (static friction at least the Coulomb level) and the stiffness of a
#: passive spring (its energy ks (q - q_rest)^2 / 2 is >= 0); offset and the asymmetric viscous
#: term fva are free in sign.
POSITIVE_TERMS = ("ia", "fv", "fc", "fs", "ks")


def project_consistent(pi, rel_floor: float = 1e-6):
    """Nearest-in-eigenvalues consistent bodies: the pseudo-inertia of each pi (..., 10) with
    its eigenvalues raised to ``rel_floor`` times the largest eigenvalue over all bodies
    (so a massless link becomes a small, well-posed one). Consistent input is unchanged
    when its eigenvalues are above the floor."""
    J = jnp.vectorize(inertia.pseudo_inertia, signature="(k)->(a,a)")(jnp.asarray(pi, dtype=float))
    lam, V = jnp.linalg.eigh(J)
    floor = rel_floor * jnp.maximum(jnp.max(jnp.abs(lam)), 1e-300)
    Jp = (V * jnp.maximum(lam, floor)[..., None, :]) @ jnp.swapaxes(V, -1, -2)
    return jnp.vectorize(inertia.from_pseudo_inertia, signature="(a,a)->(k)")(Jp)


def check_nominal(robot, nominal):
    """Raise a one-line ValueError naming the first link whose nominal (CAD) body, the prior's
    reference, is not physically consistent: its pseudo-inertia has a negative eigenvalue
    (below -1e-9 of its largest). A massless link (J = 0) is allowed; it is lifted to a
    small consistent body ([`project_consistent`][jaxid.identification.consistent_problem.project_consistent])."""
    pis = np.asarray(nominal[: 10 * robot.n], dtype=float).reshape(robot.n, 10)
    lam = np.linalg.eigvalsh(np.stack([np.asarray(inertia.pseudo_inertia(jnp.asarray(p))) for p in pis]))
    bad = np.flatnonzero(lam[:, 0] < -1e-9 * np.maximum(np.abs(lam).max(axis=1), 1e-300))
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"link {robot.names[i]}: the nominal (CAD) body is not physically consistent (mass "
            f"{pis[i, 0]:g} kg, pseudo-inertia eigenvalue {lam[i, 0]:.3g} < 0: a negative mass or "
            "an inertia that breaks the triangle inequality); correct its inertial parameters or "
            "pass a consistent nominal"
        )


# ------------------------------------------------------------------------ body bounds


def ellipsoid_matrix(centre, axes) -> np.ndarray:
    """Q (4, 4) of the ellipsoid ``{centre + axes u : |u| <= 1}`` (centre (3,), axes (3, 3), m):
    a body of pseudo-inertia J has its mass inside it iff ``tr(Q J) >= 0`` (Wensing, Kim and
    Slotine 2018), and ``tr(Q J) / m = 1 - E[(x - c)^T P (x - c)]`` over its mass,
    ``P = (axes axes^T)^-1`` (0.4 for a uniform solid filling it, 0 for mass on its shell)."""
    c = np.asarray(centre, dtype=float)
    P = np.linalg.inv(np.asarray(axes, dtype=float) @ np.asarray(axes, dtype=float).T)
    Q = np.zeros((4, 4))
    Q[:3, :3], Q[:3, 3], Q[3, :3], Q[3, 3] = -P, P @ c, P @ c, 1.0 - c @ P @ c
    return Q


@dataclasses.dataclass(frozen=True)
class Bounds:
    """Plausibility bounds on the identified bodies, shared by
    [`identify_consistent`][jaxid.identification.consistent.identify_consistent] and
    [`jaxid.identification.sdp.identify_sdp`][jaxid.identification.sdp.identify_sdp].

    Attributes (numpy arrays; ``-inf``/``inf`` where a side is unbounded):
        mass_min, mass_max: per-link mass bounds (n,), kg.
        com_min, com_max: per-link centre-of-mass box (n, 3), m, in the link (joint) frame.
        total_mass: (lo, hi) bounds on the sum of the link masses, kg, or None.
        link_names: the links' names, for error messages.
        body_min, body_max: per-link box (n, 3), m, link frame, that holds the whole body,
            not only its centre of mass (None: none). Along an axis with both sides finite,
            ``(x - lo)(x - hi) <= 0`` at every point of the body integrates to the linear
            bound ``S_aa - (lo + hi) h_a + lo hi m <= 0`` on the second moment
            ``S_aa = int x_a^2 dm`` (the pseudo-inertia's diagonal): a body cannot spread
            beyond its box (the box case of the density realisability of Wensing, Kim
            and Slotine 2018). With mass bounds it bounds every body, so that pure
            constrained least squares (weight 0) has a finite optimum.
        ellipsoid_center, ellipsoid_axes: per-link bounding ellipsoid
            ``{c + A u : |u| <= 1}`` with centre c (n, 3) m and semi-axes A (n, 3, 3) m (its
            columns), both in the link frame; a link whose A is all zero has none (None: no
            link has one). Every point of the body lies in it: the density-realisability
            condition ``tr(Q J) >= 0`` on the pseudo-inertia J, with
            ``Q = [[-P, P c], [c^T P, 1 - c^T P c]]`` and ``P = (A A^T)^-1``, i.e.
            ``int (1 - (x - c)^T P (x - c)) dm >= 0`` (Wensing, Kim and Slotine, "Linear
            matrix inequalities for physically consistent inertial parameter identification:
            a statistical perspective on the mass distribution", IEEE RA-L 3(1), 2018, eq. 11).
            Linear in the parameters, it bounds the centre of mass and the spread of each body
            to its link's space.
    """

    mass_min: np.ndarray
    mass_max: np.ndarray
    com_min: np.ndarray
    com_max: np.ndarray
    total_mass: tuple | None = None
    link_names: tuple = ()
    body_min: np.ndarray | None = None
    body_max: np.ndarray | None = None
    ellipsoid_center: np.ndarray | None = None
    ellipsoid_axes: np.ndarray | None = None

    def __post_init__(self):
        n = np.shape(self.mass_min)[0]
        defaults = {
            "body_min": np.full((n, 3), -np.inf),
            "body_max": np.full((n, 3), np.inf),
            "ellipsoid_center": np.zeros((n, 3)),
            "ellipsoid_axes": np.zeros((n, 3, 3)),
        }
        for f, default in defaults.items():
            if getattr(self, f) is None:
                object.__setattr__(self, f, default)
        for f in ("mass_min", "mass_max", "com_min", "com_max", *defaults):
            object.__setattr__(self, f, np.array(getattr(self, f), dtype=float))

    @classmethod
    def make(
        cls,
        robot,
        *,
        mass_min=None,
        mass_max=None,
        com_min=None,
        com_max=None,
        total_mass=None,
        body_min=None,
        body_max=None,
        ellipsoid_center=None,
        ellipsoid_axes=None,
    ):
        """Bounds for ``robot`` from per-link arrays (a scalar applies to every link; None:
        unbounded; the ellipsoid's centre (n, 3) and semi-axes (n, 3, 3), m, as in the class),
        checked ([`check`][jaxid.identification.consistent_problem.Bounds.check])."""
        n = robot.n_joints

        def arr(x, shape, default):
            a = (
                np.full(shape, default, dtype=float)
                if x is None
                else np.broadcast_to(np.asarray(x, dtype=float), shape).copy()
            )
            return a

        b = cls(
            arr(mass_min, (n,), 0.0),
            arr(mass_max, (n,), np.inf),
            arr(com_min, (n, 3), -np.inf),
            arr(com_max, (n, 3), np.inf),
            None if total_mass is None else tuple(float(x) for x in total_mass),
            tuple(robot.names),
            arr(body_min, (n, 3), -np.inf),
            arr(body_max, (n, 3), np.inf),
            arr(ellipsoid_center, (n, 3), 0.0),
            arr(ellipsoid_axes, (n, 3, 3), 0.0),
        )
        b.check()
        return b

    @classmethod
    def from_nominal(
        cls, robot, nominal=None, *, mass_tol: float | None = 0.2, com_margin: float | None = None, total_mass=None
    ):
        """Bounds around the nominal (CAD) bodies: each link's mass within ``+-mass_tol``
        (relative) of its nominal mass, its centre of mass within ``+-com_margin`` m of
        the nominal one along each axis (None: unbounded), and optionally the total mass
        within (lo, hi) kg."""
        theta = robot.parameter_vector() if nominal is None else jnp.asarray(nominal, dtype=float)
        pis = np.asarray(theta[: 10 * robot.n_joints]).reshape(robot.n_joints, 10)
        m = pis[:, 0]
        kw: dict[str, np.ndarray] = {}
        if mass_tol is not None:
            if not (math.isfinite(mass_tol) and 0 <= mass_tol):
                raise ValueError(f"mass_tol must be a finite number >= 0, got {mass_tol}")
            bad = np.flatnonzero(m <= 0)
            if bad.size:
                raise ValueError(
                    f"link {robot.names[bad[0]]}: nominal mass {m[bad[0]]:g} kg is not positive; "
                    "relative mass bounds need a positive nominal mass"
                )
            kw.update(mass_min=m * (1 - mass_tol), mass_max=m * (1 + mass_tol))
        if com_margin is not None:
            if not (math.isfinite(com_margin) and com_margin >= 0):
                raise ValueError(f"com_margin must be a finite number >= 0, got {com_margin}")
            c = pis[:, 1:4] / np.where(m > 0, m, 1.0)[:, None]
            kw.update(com_min=c - com_margin, com_max=c + com_margin)
        return cls.make(robot, total_mass=total_mass, **kw)

    @classmethod
    def from_geometry(cls, robot, capsules, *, margin: float = 0.0, body: bool = False):
        """Each link's centre of mass inside the axis-aligned bounding box of the link's
        collision capsules (``jaxid.model.geometry``: segment end points +- radius, in the
        joint frame, the frame of the inertial parameters), grown by ``margin`` m; links
        without capsules are unbounded. A mass distribution inside a convex set has its
        centre of mass in that set (FloBaRoID bounds it to the link's hull likewise).
        ``body=True``: the whole body in that box too (``body_min``, ``body_max``), which also
        bounds its second moments."""
        if not (math.isfinite(margin) and margin >= 0):
            raise ValueError(f"margin must be a finite distance >= 0 m, got {margin}")
        lo, hi = np.full((robot.n, 3), np.inf), np.full((robot.n, 3), -np.inf)
        for k, i in enumerate(np.asarray(capsules.link)):
            if 0 <= i < robot.n:
                r = float(capsules.radius[k]) + margin
                ends = np.stack([capsules.a[k], capsules.b[k]])
                lo[i], hi[i] = np.minimum(lo[i], ends.min(0) - r), np.maximum(hi[i], ends.max(0) + r)
        none = ~np.isfinite(lo)
        lo, hi = np.where(none, -np.inf, lo), np.where(none, np.inf, hi)
        return cls.make(robot, com_min=lo, com_max=hi, **(dict(body_min=lo, body_max=hi) if body else {}))

    def intersect(self, other: Bounds) -> Bounds:
        """Both sets of bounds at once (the tighter side of each), checked."""
        tm = [b.total_mass for b in (self, other) if b.total_mass is not None]
        total = None if not tm else (max(t[0] for t in tm), min(t[1] for t in tm))
        return type(self)(
            np.maximum(self.mass_min, other.mass_min),
            np.minimum(self.mass_max, other.mass_max),
            np.maximum(self.com_min, other.com_min),
            np.minimum(self.com_max, other.com_max),
            total,
            self.link_names or other.link_names,
            np.maximum(self.body_box()[0], other.body_box()[0]),
            np.minimum(self.body_box()[1], other.body_box()[1]),
            *self._ellipsoids_with(other),
        ).check()

    def _ellipsoids_with(self, other: Bounds):
        """(centre, axes) of both bounds' ellipsoids: one per link (two on one link: ValueError)."""
        mine, theirs = self.ellipsoid_links(), other.ellipsoid_links()
        both = np.flatnonzero(mine & theirs)
        if both.size:
            names = self.link_names or other.link_names or tuple(f"link{i + 1}" for i in range(mine.size))
            raise ValueError(
                f"link {names[both[0]]}: two bounding ellipsoids; give one per link (intersect their bodies' "
                "constraints by hand: the intersection of two ellipsoids is not one)"
            )
        pick = lambda a, b: np.where(theirs.reshape((-1,) + (1,) * (a.ndim - 1)), b, a)
        return (
            pick(self.ellipsoid_center, other.ellipsoid_center),
            pick(self.ellipsoid_axes, other.ellipsoid_axes),
        )

    def ellipsoid_links(self) -> np.ndarray:
        """(n,) bool: the links that have a bounding ellipsoid (semi-axes not all zero)."""
        assert self.ellipsoid_axes is not None  # __post_init__ replaces None
        return np.any(self.ellipsoid_axes != 0, axis=(1, 2))

    def ellipsoid_Q(self) -> np.ndarray:
        """(n, 4, 4) the matrices Q of the density-realisability condition ``tr(Q J) >= 0`` (see
        the class), zero for a link without an ellipsoid."""
        assert self.ellipsoid_center is not None and self.ellipsoid_axes is not None
        n = self.ellipsoid_axes.shape[0]
        Q = np.zeros((n, 4, 4))
        for i in np.flatnonzero(self.ellipsoid_links()):
            Q[i] = ellipsoid_matrix(self.ellipsoid_center[i], self.ellipsoid_axes[i])
        return Q

    def _check_ellipsoids(self, names):
        """ValueError naming the link whose ellipsoid is not finite or flat, or misses its boxes."""
        from scipy.optimize import lsq_linear

        assert self.ellipsoid_center is not None and self.ellipsoid_axes is not None
        n = self.mass_min.shape[0]
        if self.ellipsoid_center.shape != (n, 3) or self.ellipsoid_axes.shape != (n, 3, 3):
            raise ValueError("bounds: ellipsoid_center must have shape (n, 3) and ellipsoid_axes (n, 3, 3)")
        for i in np.flatnonzero(self.ellipsoid_links()):
            A, c = self.ellipsoid_axes[i], self.ellipsoid_center[i]
            if not (np.all(np.isfinite(A)) and np.all(np.isfinite(c))):
                raise ValueError(
                    f"link {names[i]}: the bounding ellipsoid is not finite (NaN or inf in its centre or axes)"
                )
            s = np.linalg.svd(A, compute_uv=False)
            if s[-1] <= 1e-9 * max(s[0], 1e-300) or s[-1] < 1e-6:
                raise ValueError(
                    f"link {names[i]}: the bounding ellipsoid is flat (semi-axes {', '.join(f'{v:.3g}' for v in s)} m); "
                    "a body needs room along every axis: give three semi-axes of at least a millimetre"
                )
            # the centre of mass must fit in both its boxes and the ellipsoid: the box point
            # nearest the centre in the ellipsoid's metric, a bounded least-squares problem
            lo = np.maximum(self.com_min[i], self.body_box()[0][i])
            hi = np.minimum(self.com_max[i], self.body_box()[1][i])
            if np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)):
                Ainv = np.linalg.inv(A)
                x = lsq_linear(Ainv, Ainv @ c, bounds=(lo, hi)).x
                d = float(np.linalg.norm(Ainv @ (x - c)))
                if d >= 1.0:
                    raise ValueError(
                        f"link {names[i]}: the centre-of-mass box does not meet the bounding ellipsoid (its nearest "
                        f"point is {d:.3g} ellipsoid radii from the centre); widen the box or the ellipsoid"
                    )

    def check(self):
        """Raise a one-line ValueError naming the link and the bound when bounds contradict
        each other (so that no body satisfies them)."""
        n = self.mass_min.shape[0]
        names = self.link_names or tuple(f"link{i + 1}" for i in range(n))
        if self.mass_max.shape != (n,) or self.com_min.shape != (n, 3) or self.com_max.shape != (n, 3):
            raise ValueError("bounds: mass_min, mass_max must have shape (n,) and com_min, com_max (n, 3)")
        if self.body_min.shape != (n, 3) or self.body_max.shape != (n, 3):
            raise ValueError("bounds: body_min, body_max must have shape (n, 3)")
        for label, x in (
            ("mass_min", self.mass_min),
            ("mass_max", self.mass_max),
            ("com_min", self.com_min),
            ("com_max", self.com_max),
            ("body_min", self.body_min),
            ("body_max", self.body_max),
        ):
            if np.any(np.isnan(x)):
                raise ValueError(f"bounds: {label} contains NaN")
        for i in range(n):
            if self.mass_max[i] <= 0:
                raise ValueError(f"link {names[i]}: mass_max = {self.mass_max[i]:g} kg, a body needs a positive mass")
            if self.mass_min[i] > self.mass_max[i]:
                raise ValueError(
                    f"link {names[i]}: mass_min = {self.mass_min[i]:g} kg > mass_max = {self.mass_max[i]:g} kg"
                )
            for a in range(3):
                if self.com_min[i, a] > self.com_max[i, a]:
                    raise ValueError(
                        f"link {names[i]}: com_min[{'xyz'[a]}] = {self.com_min[i, a]:g} m > "
                        f"com_max[{'xyz'[a]}] = {self.com_max[i, a]:g} m"
                    )
                lo, hi = max(self.com_min[i, a], self.body_min[i, a]), min(self.com_max[i, a], self.body_max[i, a])
                if lo > hi:  # the centre of mass lies in the body's box
                    raise ValueError(
                        f"link {names[i]}: the centre-of-mass box and body box do not overlap along "
                        f"{'xyz'[a]} ({lo:g} m > {hi:g} m)"
                    )
        self._check_ellipsoids(names)
        if self.total_mass is not None:
            lo, hi = self.total_mass
            if not lo <= hi:
                raise ValueError(f"total mass: lower bound {lo:g} kg > upper bound {hi:g} kg")
            smin, smax = float(np.sum(np.maximum(self.mass_min, 0))), float(np.sum(self.mass_max))
            if smin > hi:
                raise ValueError(
                    f"total mass: the links' mass_min sum to {smin:g} kg > total_mass upper bound {hi:g} kg"
                )
            if smax < lo:
                raise ValueError(
                    f"total mass: the links' mass_max sum to {smax:g} kg < total_mass lower bound {lo:g} kg"
                )
        return self

    @property
    def empty(self) -> bool:
        return (
            not np.any(self.mass_min > 0)
            and not np.any(np.isfinite(self.mass_max))
            and not np.any(np.isfinite(self.com_min))
            and not np.any(np.isfinite(self.com_max))
            and self.total_mass is None
            and not any(np.any(np.isfinite(x)) for x in self.body_box())
            and not np.any(self.ellipsoid_links())
        )

    def body_box(self) -> tuple[np.ndarray, np.ndarray]:
        """(body_min, body_max), (n, 3) m each, -inf / inf where unbounded."""
        assert self.body_min is not None and self.body_max is not None  # __post_init__ replaces None
        return self.body_min, self.body_max

    def body_axes(self):
        """(n, 3) bool: the axes along which the body box bounds the second moment (both sides finite)."""
        lo, hi = self.body_box()
        return np.isfinite(lo) & np.isfinite(hi)


# ------------------------------------------------------------- data term and prior reference
class DataTerm(NamedTuple):
    """The whitened least-squares misfit in a form whose size does not grow with the samples:
    ``||Sigma^-1/2 (W theta - tau)||^2 = ||L^-1 ((to_base(theta) - theta_ls) / std)||^2 + rss``.

    Attributes:
        theta_ls: unconstrained (WLS/OLS) base estimate (b,).
        std: its standard deviations (b,).
        L: lower Cholesky factor (b, b) of its correlation matrix ``cov / (std std^T)``.
        rss: the whitened residual of theta_ls (the least value of the misfit).
        ls: the [`jaxid.identification.estimators.Identification`][jaxid.identification.estimators.Identification] it came from.
    """

    theta_ls: jax.Array
    std: jax.Array
    L: jax.Array
    rss: jax.Array
    ls: Identification


def data_term(robot, base: BaseParameters, W, tau, method: str = "wls") -> DataTerm:
    """[`DataTerm`][jaxid.identification.consistent_problem.DataTerm] of standard regressor W (N*n, p) and torques tau (N*n,): the
    unconstrained fit of the reduced regressor ``base.reduce(W)`` by ``method`` ("wls":
    Gautier's two-step weights, "ols": one pooled variance) and its covariance."""
    from jaxid.identification.estimators import wls_variances

    n = robot.n
    Wb = base.reduce(W)
    ls = identify(Wb, tau, method=method, n_joints=n, names=list(base.names))
    r = (tau - Wb @ ls.theta).reshape(-1, n)
    if method == "wls":  # the same per-joint variances as identify's two-step weights
        return _data_term(ls, jnp.sum(jnp.sum(r**2, axis=0) / wls_variances(Wb, tau, n)))
    return _data_term(ls, ls.dof.astype(float))  # ||r||^2 / s^2 with s^2 = ||r||^2 / dof


def reduced_data_term(base: BaseParameters, reduced, method: str = "wls") -> DataTerm:
    """[`data_term`][jaxid.identification.consistent_problem.data_term] of rows held only in reduced form: ``reduced`` is the
    ``jaxid.identification.streaming.Reduced`` of the base columns' rows ``[W_b | tau]`` (per-joint
    R's, N samples), as ``streaming.reduce_runs`` accumulates them chunk by chunk. The misfit
    ``||Sigma^-1/2 (W_b theta_b - tau)||^2`` depends on the rows only through the R's, so the
    consistent fit needs no dense W."""
    from jaxid.identification import streaming
    from jaxid.identification.estimators import reduced_rss, reduced_variances

    ls = streaming.fit(reduced, method, names=list(base.names))
    if method == "wls":
        return _data_term(ls, jnp.sum(reduced_rss(reduced.R, ls.theta) / reduced_variances(reduced.R, reduced.N)))
    return _data_term(ls, ls.dof.astype(float))


def _data_term(ls, rss):
    """[`DataTerm`][jaxid.identification.consistent_problem.DataTerm] of the unconstrained fit ``ls`` and the whitened residual rss of its estimate."""
    std = jnp.where(ls.std > 0, ls.std, 1.0)
    return DataTerm(ls.theta, std, jnp.linalg.cholesky(ls.cov / jnp.outer(std, std)), rss, ls)


def prior_reference(robot, base: BaseParameters, theta_ls, nominal):
    """The prior's reference point: nominal bodies projected to consistent ones
    ([`project_consistent`][jaxid.identification.consistent_problem.project_consistent]), shape (n, 10), and the reference value x0 (n, k) of each
    positive joint term (its nominal value where positive, else |its WLS estimate|,
    at least 1e-12), with the mask (n, k) of positive terms."""
    n, k = robot.n_joints, len(robot.joint_terms)
    nominal = jnp.asarray(nominal, dtype=float)
    pis = project_consistent(nominal[: 10 * n].reshape(n, 10))
    joint0 = lift(base, theta_ls, nominal)[10 * n :].reshape(n, k)
    joint_nom = nominal[10 * n :].reshape(n, k)
    x0 = jnp.where(joint_nom > 0, joint_nom, jnp.maximum(jnp.abs(joint0), 1e-12))
    positive = np.broadcast_to(np.array([t in POSITIVE_TERMS for t in robot.joint_terms], dtype=bool), (n, k))
    return pis, x0, positive


def check_inputs(robot, W, tau, method):
    """W (N*n, p) and tau (N*n,) as float arrays (a 3-D W and 2-D tau are stacked); raises
    ValueError on a bad method or shapes."""
    if method not in ("wls", "ols"):
        raise ValueError(f"method must be 'wls' or 'ols', got {method!r}")
    W, tau = jnp.asarray(W, dtype=float), jnp.asarray(tau, dtype=float)
    n = robot.n
    if W.ndim == 3:
        W, tau = W.reshape(-1, W.shape[-1]), tau.reshape(-1)
    p = len(robot.parameter_names())
    if W.ndim != 2 or W.shape[1] != p:
        raise ValueError(f"W must have shape (N*n, {p}) (the robot's standard regressor), got {W.shape}")
    if tau.shape != (W.shape[0],) or W.shape[0] % n:
        raise ValueError(
            f"tau must have shape ({W.shape[0]},) and W {W.shape} must have a multiple of n={n} rows; "
            f"got tau {tau.shape}"
        )
    return W, tau

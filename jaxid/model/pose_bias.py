"""A pose-dependent bias on any torque model: ``tau = base(q, qd, qdd) + G phi(q)``.

The six-DOF article (seed 000, section 6.5) ends its model with a constant bias g_i that
absorbs gravity, sensor drift and electromagnetic forces, and warns that it is a constant only
in one posture: identified across poses, a constant bias fits acceptably and then predicts
another pose range badly; its remedy is to "model the pose variable explicitly in the basis
functions". [`PoseBias`][jaxid.model.pose_bias.PoseBias] does that for any ``TorqueModel`` (``jaxid.models.Nonlinear6DOF``,
a ``Robot``, a user's own ``equinox`` module): each coordinate i gets a bias that is linear in
its coefficients over a basis of the positions, so the model stays linear in its parameters
and the regressor is still ``jax.jacfwd`` of the torque.

Bases (``basis``; h = 1..``order``):

- ``"fourier"``: cos(h q_j), sin(h q_j): periodic, the shape of a gravity or cogging load on a
  revolute joint (gravity on joint i of an arm is a sum of such products over the joints above);
- ``"poly"``: q_j^h: a drift or spring-like load over a limited range (prismatic joints,
  the six-DOF system's small motions).

``coupled=False``: coordinate i's bias depends on q_i alone (n x 2 order or n x order
coefficients); ``coupled=True``: on every q_j (n x n x ...). No constant column: the base
model carries its own (the six-DOF g_i, a Robot's ``offset`` joint term); with a base that has
none, add it there. A basis column collinear with a base column (``"poly"`` order 1 beside the
six-DOF stiffness k_i q_i) leaves the parameter undetermined: the base-parameter reduction
(``jaxid.identification.base``) drops it and names it.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

BASES = ("fourier", "poly")


def _terms(basis: str, order: int) -> tuple[str, ...]:
    """The names of one position's basis functions, in column order."""
    if basis == "fourier":
        return tuple(f"{f}{h}" for h in range(1, order + 1) for f in ("cos", "sin"))
    return tuple(f"pow{h}" for h in range(1, order + 1))


class PoseBias(eqx.Module):
    """``base`` (a ``TorqueModel``) plus a bias per coordinate over a basis of the positions
    (module docstring). gamma: the bias coefficients, shape (n, m, K), N m per unit of the basis
    function: coordinate i's bias is sum_{j, k} gamma[i, j, k] phi_k(q_j), with m = n when
    ``coupled`` else m = 1 (j = i); K = 2 order (fourier) or order (poly). theta is the base's
    parameters followed by gamma.ravel()."""

    base: eqx.Module
    gamma: jax.Array
    basis: str = eqx.field(static=True)
    order: int = eqx.field(static=True)
    coupled: bool = eqx.field(static=True)

    @property
    def n(self) -> int:
        return self.base.n  # type: ignore[attr-defined]

    def parameter_vector(self) -> jax.Array:
        return jnp.concatenate([self.base.parameter_vector(), self.gamma.ravel()])  # type: ignore[attr-defined]

    def parameter_names(self) -> tuple[str, ...]:
        """The base's names (or theta1..thetap where it has none), then ``g{i}_{term}q{j}``,
        1-based: e.g. ``g2_sin1q2`` (coordinate 2's bias, sin(q_2))."""
        p = self.base.parameter_vector().shape[0]  # type: ignore[attr-defined]
        names = getattr(self.base, "parameter_names", None)
        head = tuple(names()) if names is not None else tuple(f"theta{k + 1}" for k in range(p))
        m = self.n if self.coupled else 1
        return head + tuple(
            f"g{i + 1}_{t}q{(j if self.coupled else i) + 1}"
            for i in range(self.n)
            for j in range(m)
            for t in _terms(self.basis, self.order)
        )

    def features(self, q: jax.Array) -> jax.Array:
        """phi (n, K) of the positions q (n,), rad (or m): row j holds q_j's basis functions."""
        h = jnp.arange(1, self.order + 1, dtype=q.dtype)
        x = q[:, None] * h
        if self.basis == "fourier":
            return jnp.stack([jnp.cos(x), jnp.sin(x)], axis=-1).reshape(q.shape[0], -1)
        return q[:, None] ** h

    def torque(self, theta: jax.Array, q: jax.Array, qd: jax.Array, qdd: jax.Array) -> jax.Array:
        """tau (n,), N m, at theta (p + gamma.size,) for one sample q, qd, qdd (n,)."""
        p = self.base.parameter_vector().shape[0]  # type: ignore[attr-defined]
        g = theta[p:].reshape(self.gamma.shape)
        phi = self.features(q)
        bias = jnp.einsum("ijk,jk->i", g, phi) if self.coupled else jnp.einsum("ik,ik->i", g[:, 0], phi)
        return self.base.torque(theta[:p], q, qd, qdd) + bias  # type: ignore[attr-defined]


def pose_bias(
    base, order: int = 1, basis: str = "fourier", coupled: bool = False, gamma: ArrayLike | None = None
) -> PoseBias:
    """``base`` (any ``TorqueModel``) with a pose-dependent bias ([`PoseBias`][jaxid.model.pose_bias.PoseBias]): ``order`` >= 1
    harmonics (fourier) or powers (poly) of each position, coordinate i's over q_i alone or, with
    ``coupled``, over every q_j; coefficients ``gamma`` (n, m, K), default zeros. Source: the
    six-DOF article's remedy for a bias that varies with the pose (seed 000, section 6.5)."""
    if basis not in BASES:
        raise ValueError(f"basis must be one of {BASES}, got {basis!r}")
    if int(order) != order or order < 1:
        raise ValueError(f"order must be an integer >= 1, got {order}")
    n = int(base.n)
    shape = (n, n if coupled else 1, len(_terms(basis, int(order))))
    g = jnp.zeros(shape) if gamma is None else jnp.asarray(gamma, dtype=float)
    if g.shape != shape:
        raise ValueError(
            f"gamma must have shape {shape} (coordinates, {'positions' if coupled else '1'}, basis functions) "
            f"for {basis} order {order}{' coupled' if coupled else ''}, got {g.shape}"
        )
    if not bool(jnp.all(jnp.isfinite(g))):
        raise ValueError("gamma must be finite")
    return PoseBias(base, g, basis, int(order), bool(coupled))

"""The regressor ``Y(q, qd, qdd)`` with ``tau = Y @ theta``, by forward-mode autodiff.

For any model providing ``torque(theta, q, qd, qdd)``, ``parameter_vector()`` and
``parameter_names()``, ``Y = jax.jacfwd(torque)(theta, ...)``. A model may provide
``regressor(theta, q, qd, qdd)`` that assembles the same Jacobian faster from its
structure (``Robot`` takes ``jax.jacfwd`` link by link); it must equal the plain one. For models linear in
their parameters (rigid bodies in the 10-vector parametrisation, Atkeson et al.
1986) Y is exact and independent of theta; otherwise it is the local Jacobian.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid.dynamics.batching import batched, bucketed_jit

if TYPE_CHECKING:
    from jaxid.dynamics.terms import NamedTorqueModel, TorqueModel


def _regressor(model, theta, q, qd, qdd):
    # A model may assemble the same Jacobian from its structure (Robot does, link by link).
    structured = getattr(model, "regressor", None)
    if structured is not None:
        return structured(theta, q, qd, qdd)
    return jax.jacfwd(model.torque)(theta, q, qd, qdd)


@bucketed_jit
def regressor(
    model: TorqueModel, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, theta: ArrayLike | None = None
) -> jax.Array:
    """Regressor Y, shape (n, p) for one sample or (N, n, p) for a batch.

    q, qd, qdd: (n,) or (N, n), rad, rad/s, rad/s^2. theta: point of linearisation
    (p,), default the model's own parameters (irrelevant for linear models).
    """
    theta = model.parameter_vector() if theta is None else jnp.asarray(theta, dtype=float)
    return batched(lambda m, a, b, c: _regressor(m, theta, a, b, c), model, q, qd, qdd)


@overload
def stack(Y: jax.Array, tau: None = None) -> jax.Array: ...
@overload
def stack(Y: jax.Array, tau: ArrayLike) -> tuple[jax.Array, jax.Array]: ...
def stack(Y: jax.Array, tau: ArrayLike | None = None) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Stack a batch Y `(N, n, p)` sample-major into W `(N*n, p)`; tau `(N, n)` into `(N*n,)`."""
    W = Y.reshape(-1, Y.shape[-1])
    return W if tau is None else (W, jnp.reshape(tau, -1))


def parameter_vector(model: TorqueModel) -> jax.Array:
    """theta (p,) of a model."""
    return model.parameter_vector()


def parameter_names(model: NamedTorqueModel) -> tuple[str, ...]:
    """Names of theta's entries, from the same code that orders the regressor columns."""
    return tuple(model.parameter_names())


def states_rng(key: jax.Array | int | None = None) -> np.random.Generator:
    """numpy's generator for random states of a model analysis, from a ``jax.random`` key,
    an int or None (0).

    The states only have to be generic, and drawing them with numpy at the edge costs no
    compilation: a threefry draw compiles anew for every shape (1-3 s per model on 2 CPU
    cores, in every cold process)."""
    if key is None or isinstance(key, (int, np.integer)):
        return np.random.default_rng(0 if key is None else int(key))
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return np.random.default_rng(np.asarray(data, dtype=np.uint32).ravel().tolist())


def is_linear_in_parameters(
    model: TorqueModel, n_samples: int = 8, key: jax.Array | int | None = None, rtol: float = 1e-9
) -> bool:
    """Numerical check that torque is linear in theta: Y is the same at two parameter points
    and ``Y @ theta == torque`` at random states."""
    rng = states_rng(key)
    n = model.n
    q, qd, qdd = rng.normal(size=(3, n_samples, n))
    theta = model.parameter_vector()
    other = theta * (1.0 + 0.5 * rng.normal(size=theta.shape)) + 0.1
    Y1 = regressor(model, q, qd, qdd, theta)
    Y2 = regressor(model, q, qd, qdd, other)
    tau = jax.vmap(model.torque, in_axes=(None, 0, 0, 0))(other, q, qd, qdd)
    scale = float(jnp.max(jnp.abs(Y1))) + 1e-300
    same = np.allclose(np.asarray(Y1), np.asarray(Y2), rtol=rtol, atol=rtol * scale)
    exact = np.allclose(
        np.asarray(jnp.einsum("knp,p->kn", Y2, other)),
        np.asarray(tau),
        rtol=rtol,
        atol=rtol * scale * float(jnp.max(jnp.abs(other))),
    )
    return bool(same and exact)

"""The autodiff regressor and the model interface."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from strategies import states

import jaxid
from jaxid.dynamics.batching import BUCKET_MAX, CHUNK, bucket


@eqx.filter_jit
def _plain_jacfwd(robot, q, qd, qdd):
    """The regressor as jax.jacfwd of the torque in theta, at a batch of states."""
    theta = robot.parameter_vector()
    return jax.vmap(lambda a, b, c: jax.jacfwd(robot.torque)(theta, a, b, c))(q, qd, qdd)


@given(state=states((8, 6)))
def test_structured_robot_regressor_equals_plain_jacfwd(ur5_friction, state):
    np.testing.assert_allclose(jaxid.regressor(ur5_friction, *state), _plain_jacfwd(ur5_friction, *state), atol=1e-12)


def test_parameter_names_follow_columns(ur5_friction):
    names = jaxid.parameter_names(ur5_friction)
    assert names[:10] == ("m1", "mx1", "my1", "mz1", "Ixx1", "Ixy1", "Iyy1", "Ixz1", "Iyz1", "Izz1")
    assert names[60:64] == ("ia1", "fv1", "fc1", "offset1")
    assert len(names) == len(set(names)) == jaxid.parameter_vector(ur5_friction).shape[0]


def test_stack_is_sample_major(ur5, states):
    Y = jaxid.regressor(ur5, *states)
    tau = jaxid.rnea(ur5, *states)
    W, t = jaxid.stack(Y, tau)
    assert W.shape == (8 * 6, 60)
    np.testing.assert_allclose(W[6:12], Y[1])
    np.testing.assert_allclose(t[6:12], tau[1])


def test_large_batches_run_in_chunks_with_the_same_result(ur5):
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.normal(size=(3, 1500, 6))  # more than one chunk, with a remainder
    tau = jaxid.rnea(ur5, q, qd, qdd)
    np.testing.assert_allclose(tau[1400], jaxid.rnea(ur5, q[1400], qd[1400], qdd[1400]), atol=1e-12)
    # On the CPU, 1500 samples run as two calls of the one-chunk program (the second shifted back
    # to end at 1500), written into one output that jax then uses in place; the overlap is written
    # twice with the same numbers.
    assert tau.shape == (1500, 6) and isinstance(tau, jax.Array)
    short = jaxid.rnea(ur5, q[:1300], qd[:1300], qdd[:1300])
    np.testing.assert_allclose(short, tau[:1300], atol=1e-12)
    np.testing.assert_allclose(jaxid.rnea(ur5, q[:1499], qd[:1499], qdd[:1499]), tau[:1499], atol=1e-12)
    np.testing.assert_allclose(tau[500:], jaxid.rnea(ur5, q[500:], qd[500:], qdd[500:]), atol=1e-12)


def test_host_chunks_use_one_program_for_every_length(ur5, monkeypatch):
    """Concrete batches above a chunk call the one-chunk program from the host (never a program of
    their own length), and the output buffer is aligned for XLA to use it in place."""
    from jaxid.dynamics import batching

    shapes = []
    real = batching._host_chunks

    def spy(jitted, model, arrays, kwargs, N):
        counted = lambda m, *xs, **kw: shapes.append(xs[0].shape) or jitted(m, *xs, **kw)
        return real(counted, model, arrays, kwargs, N)

    monkeypatch.setattr(batching, "_host_chunks", spy)
    rng = np.random.default_rng(6)
    for N in (1025, 2500):
        q = rng.normal(size=(N, 6))
        Y = jaxid.regressor(ur5, q, q, q)
        assert Y.shape == (N, 6, 60)
        np.testing.assert_allclose(Y[-1], jaxid.regressor(ur5, q[-1], q[-1], q[-1]), atol=1e-12)
    assert set(shapes) == {(CHUNK, 6)} and len(shapes) == 2 + 3
    assert batching._aligned((3, 5), np.float64).ctypes.data % batching._ALIGN == 0


def test_bucket_sizes():
    sizes = np.arange(1, 70_000, 37)
    B = np.array([bucket(int(N)) for N in sizes])
    assert np.all(B >= sizes) and np.all(np.diff(B) >= 0)
    small, mid = sizes <= CHUNK, (sizes > CHUNK) & (sizes <= BUCKET_MAX)
    assert np.all(B[small] == CHUNK) and np.all(B[mid] % CHUNK == 0)  # one program up to a chunk
    assert np.all(B[mid] <= 1.25 * sizes[mid] + CHUNK) and np.all(B[sizes > BUCKET_MAX] == sizes[sizes > BUCKET_MAX])
    assert len(set(B[mid])) < 40  # few programs for every record length up to BUCKET_MAX


@pytest.fixture(scope="module")
def nonlinear_6dof():
    return jaxid.models.nonlinear_6dof()


def test_nonlinear_6dof_names(nonlinear_6dof):
    names = nonlinear_6dof.parameter_names()
    assert len(names) == 54 and names[:9] == ("m1", "c1", "d1", "b1", "k1", "k3_1", "h1", "h3_1", "g1")
    assert jaxid.is_linear_in_parameters(nonlinear_6dof)


@given(state=states((5, 6)))
def test_nonlinear_6dof_model(nonlinear_6dof, state):
    model, names = nonlinear_6dof, nonlinear_6dof.parameter_names()
    q, qd, qdd = state
    Y = jaxid.regressor(model, q, qd, qdd)
    np.testing.assert_allclose(Y @ model.parameter_vector(), jaxid.rnea(model, q, qd, qdd), atol=1e-12)
    # coupling: tau_1 depends on q_2 through the ring spring h1 (q1 - q2)
    i = names.index("h1")
    np.testing.assert_allclose(Y[:, 0, i], q[:, 0] - q[:, 1])


class Pendulum(eqx.Module):
    """A researcher's own model, nonlinear in its parameters: tau = J qdd + m g l sin(q) + b tanh(qd / v)."""

    theta: jnp.ndarray
    n: int = eqx.field(static=True, default=1)

    def parameter_vector(self):
        return self.theta

    def parameter_names(self):
        return ("J", "mgl", "b", "v")

    def torque(self, theta, q, qd, qdd):
        J, mgl, b, v = theta
        return J * qdd + mgl * jnp.sin(q) + b * jnp.tanh(qd / v)


def test_custom_model_goes_through_the_same_code():
    model = Pendulum(jnp.array([0.5, 2.0, 0.3, 0.1]))
    Y = jaxid.regressor(model, jnp.ones((4, 1)), 0.2 * jnp.ones((4, 1)), jnp.zeros((4, 1)))
    assert Y.shape == (4, 1, 4)
    np.testing.assert_allclose(Y[0, 0, 1], np.sin(1.0))
    assert not jaxid.is_linear_in_parameters(model)
    assert jaxid.is_linear_in_parameters(jaxid.models.planar(2))
    M = jaxid.mass_matrix(model, jnp.array([0.3]))
    np.testing.assert_allclose(M, [[0.5]])


SHARD_MAP = """
import json, numpy as np, jax, jaxid
from jax.sharding import Mesh, PartitionSpec as P
robot = jaxid.models.ur5()
mesh = Mesh(np.array(jax.devices()), ("s",))
q = np.random.default_rng(0).normal(size=(2 * 1500, 6))  # 1500 per shard: more than one chunk
out = {}
for name, fn in (("regressor", jaxid.regressor), ("rnea", jaxid.rnea)):
    sharded = jax.jit(jax.shard_map(lambda a: fn(robot, a, a, a), mesh=mesh, in_specs=P("s"), out_specs=P("s")))
    out[name] = float(np.abs(np.asarray(sharded(q)) - np.asarray(fn(robot, q, q, q))).max())
print(json.dumps(dict(devices=len(jax.devices()), **out)))
"""


def test_regressor_and_rnea_inside_shard_map():
    """The public per-sample functions inside shard_map with more than a chunk per shard (their
    chunk loop's carry must vary over the mesh axis as the chunks do; it failed to trace before),
    equal to the plain calls."""
    from host_devices import run_on_two_host_devices

    res = run_on_two_host_devices(SHARD_MAP, timeout=300)
    assert res["devices"] == 2 and res["regressor"] <= 1e-12 and res["rnea"] <= 1e-10

"""The identified torque model exported for a controller (jaxid.model.codegen,
jaxid.workflow.export_control, `jaxid export`): each artefact — a numpy module, a C99 file, a
serialised JAX export — reproduces jaxid's predict to 1e-10 relative at random states."""

import ctypes
import importlib.util
import json
import shutil
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxid
from jaxid import data, workflow
from jaxid.cli import main
from jaxid.identification.base import base_from_regressor
from jaxid.model import codegen
from jaxid.model.description import model_description
from jaxid.model.transmission import Transmission
from jaxid.workflow.export_control import control_artefact, write_control

RTOL = 1e-10
#: every per-joint term of JOINT_BASIS, so each generated column is checked
TERMS = ("ia", "fv", "fc", "fs", "fva", "offset", "ks")
N = 6


def _relerr(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(np.asarray(b))))


def _states(n, seed):
    rng = np.random.default_rng(seed)
    # velocities across the smooth sign's and the Stribeck velocity's scales, and exactly 0
    q, qd, qdd = (
        rng.uniform(-3, 3, (N, n)),
        rng.normal(0, 1, (N, n)) * rng.choice([1e-3, 0.05, 2.0], (N, n)),
        rng.normal(0, 5, (N, n)),
    )
    qd[0, 0] = 0.0
    return q, qd, qdd


@pytest.fixture(scope="module", params=["ur5", "planar3"])
def case(request, tmp_path_factory):
    """(model, params saved as params.json, its path, dataset, predict's torques)."""
    name = request.param
    robot = (jaxid.models.ur5() if name == "ur5" else jaxid.models.planar(3)).with_joint_terms(TERMS)
    rng = np.random.default_rng(1)
    theta = np.asarray(robot.parameter_vector()) * (1 + 0.2 * rng.uniform(-1, 1, len(robot.parameter_names())))
    theta[10 * robot.n_joints :] = rng.uniform(0.05, 0.5, robot.n_joints * len(TERMS))
    theta += 0.01 * rng.normal(size=theta.size)  # no exact zeros (their relative std is undefined)
    # An identity base (every standard parameter its own base parameter), as a params.json of
    # standard parameters holds: the QR of the base analysis would add seconds and test nothing here.
    names = robot.parameter_names()
    params = workflow.Params(
        model=model_description(robot, builtin=name),
        parameter_names=names,
        base=base_from_regressor(np.eye(len(names)), names),
        theta=jnp.asarray(theta),
        cov=jnp.eye(len(names)),
        fit={},
    )
    path = tmp_path_factory.mktemp(name) / "params.json"
    workflow.save_params(path, params)
    params = workflow.load_params(path)
    q, qd, qdd = _states(robot.n, 2)
    ds = data.Dataset(jnp.arange(N) * 1e-2, jnp.asarray(q), jnp.zeros((N, robot.n)), jnp.asarray(qd), jnp.asarray(qdd))
    ref = np.asarray(workflow.predict(robot, params, ds))
    return robot, params, path, ds, ref


def _load_module(path):
    spec = importlib.util.spec_from_file_location(f"exported_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _compile(c_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    so = c_path.with_suffix(".so")
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror", "-shared", "-fPIC"]
    subprocess.run([cc, *flags, str(c_path), "-o", str(so), "-lm"], check=True, capture_output=True)
    return ctypes.CDLL(str(so))


def _call_c(lib, fname, q, qd, qdd):
    P = ctypes.POINTER(ctypes.c_double)
    out = np.zeros_like(q)
    for k in range(q.shape[0]):
        o = np.zeros(q.shape[1])
        args = [np.ascontiguousarray(x[k]).ctypes.data_as(P) for x in (q, qd, qdd)]
        getattr(lib, fname)(*args, o.ctypes.data_as(P))
        out[k] = o
    return out


def test_numpy_module_reproduces_predict(case, tmp_path):
    robot, params, _, ds, ref = case
    mod = _load_module(write_control(robot, params, "numpy", tmp_path / "tau_model.py"))
    q, qd, qdd = (np.asarray(x) for x in (ds.q, ds.qd, ds.qdd))
    assert _relerr(mod.tau(q, qd, qdd), ref) < RTOL  # batched (N, n)
    assert _relerr(mod.tau(q[3], qd[3], qdd[3]), ref[3]) < RTOL  # one sample (n,)
    assert "jax" not in (tmp_path / "tau_model.py").read_text().split('"""')[2]  # numpy only
    with pytest.raises(ValueError, match="same shape"):
        mod.tau(q[0, :-1], qd[0], qdd[0])


def test_c_file_reproduces_predict(case, tmp_path):
    robot, params, _, ds, ref = case
    src = write_control(robot, params, "c", tmp_path / "tau_model.c", name="robot_tau")
    text = src.read_text()
    assert "void robot_tau(const double q[N]" in text and robot.name in text and "Params.full()" in text
    lib = _compile(src)
    out = _call_c(lib, "robot_tau", *(np.asarray(x) for x in (ds.q, ds.qd, ds.qdd)))
    assert _relerr(out, ref) < RTOL


def test_jax_export_reproduces_predict(case):
    pytest.importorskip("flatbuffers")
    robot, params, _, ds, ref = case
    one = jax.export.deserialize(bytearray(control_artefact(robot, params, "stablehlo")))
    assert one.in_avals[0].shape == (robot.n,)
    assert _relerr(one.call(ds.q[2], ds.qd[2], ds.qdd[2]), ref[2]) < RTOL
    many = jax.export.deserialize(bytearray(control_artefact(robot, params, "stablehlo", batched=True)))
    assert not isinstance(many.in_avals[0].shape[0], int)  # a symbolic N: any batch size
    assert _relerr(many.call(ds.q, ds.qd, ds.qdd), ref) < RTOL


def test_coupled_joints_and_a_transmission(tmp_path):
    """A mimic joint (3 joints, 2 coordinates) and joint terms on the motors of a coupled
    transmission: the generated code folds and carries torques as Robot.torque does."""
    p = jaxid.models.planar(3)
    mimic = jaxid.Robot(p.placements, p.axes, p.inertial, mimic=[None, None, (1, 0.5, 0.1)], joint_terms=TERMS)
    geared = p.with_joint_terms(TERMS).with_transmission(
        Transmission.from_ratios(
            [50.0, -30.0, 20.0], offset=[0.0, 0.3, -0.2], coupling=[[1, 0, 0], [0, 1, 0], [0, 0.4, 1]]
        )
    )
    for robot in (mimic, geared):
        rng = np.random.default_rng(3)
        theta = np.array(robot.parameter_vector())
        theta[10 * robot.n_joints :] = rng.uniform(0.05, 0.5, theta.size - 10 * robot.n_joints)
        q, qd, qdd = _states(robot.n, 4)
        ref = np.asarray(jax.jit(jax.vmap(lambda a, b, c: robot.torque(jnp.asarray(theta), a, b, c)))(q, qd, qdd))
        ns: dict = {}
        exec(codegen.numpy_source(robot, theta), ns)  # noqa: S102 - the generated module
        assert _relerr(ns["tau"](q, qd, qdd), ref) < RTOL
        if shutil.which("cc"):
            c = tmp_path / f"{len(robot.mimic)}_{robot.transmission is None}.c"
            c.write_text(codegen.c_source(robot, theta))
            assert _relerr(_call_c(_compile(c), "tau", q, qd, qdd), ref) < RTOL


def test_bad_input_is_refused(case):
    robot, params, _, _, _ = case
    with pytest.raises(ValueError, match="unknown export format"):
        control_artefact(robot, params, "matlab")
    with pytest.raises(ValueError, match="theta has shape"):
        codegen.c_source(robot, np.zeros(3))
    with pytest.raises(ValueError, match="not a C identifier"):
        codegen.c_source(robot, params.full(), name="my-tau")
    with pytest.raises(ValueError, match="parameters"):  # identified for another model
        control_artefact(robot.with_joint_terms(("fv",)), params, "numpy")
    with pytest.raises(ValueError, match="another model: export it as stablehlo"):
        codegen.numpy_source(jaxid.models.nonlinear_6dof(), jaxid.models.nonlinear_6dof().parameter_vector())


def test_cli_export(case, tmp_path, capsys):
    robot, params, path, ds, ref = case
    out = tmp_path / "ctrl.py"
    assert main(["export", str(path), "-o", str(out)]) == 0
    assert "numpy module" in capsys.readouterr().out
    assert _relerr(_load_module(out).tau(np.asarray(ds.q), np.asarray(ds.qd), np.asarray(ds.qdd)), ref) < RTOL
    assert main(["export", str(path), "-o", str(tmp_path / "ctrl.txt")]) == 2
    assert "give --format" in capsys.readouterr().err
    assert main(["export", str(path), "--batched", "-o", str(tmp_path / "ctrl.c")]) == 2
    assert "--batched is for --format stablehlo" in capsys.readouterr().err
    assert json.loads(path.read_text())["model"]["builtin"] in ("ur5", "planar3")

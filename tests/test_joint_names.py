"""Joints by name: columns a glob maps are put in the model's joint order by the joint names in
their headers (not by sorting the names), a mismatch is an error naming both lists, and a log is
never fitted to a model nobody named (issue 32, item 1)."""

import dataclasses
import json

import numpy as np
import pytest

import jaxid
from jaxid import data
from jaxid.cli import main
from jaxid.model import dh
from jaxid.workflow import WorkflowError
from jaxid.workflow.commands import run_identify
from jaxid.workflow.requests import NO_MODEL, DataSpec, IdentifyRequest, ModelSpec

UR5 = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")  # jaxid.models.ur5
#: PlotJuggler's column order of a UR5's /joint_states (alphabetical: elbow first).
PLOTJUGGLER = ("elbow", "shoulder_lift", "shoulder_pan", "wrist_1", "wrist_2", "wrist_3")


def _joint_states(path, arrays, names, order, signals=(("q", "position"), ("tau", "effort"))):
    """A PlotJuggler-style CSV: __time, then /joint_states/<name>_joint/<field> in ``order``."""
    header, cols = ["__time"], [arrays["t"]]
    for s, field in signals:
        for j in order:
            header.append(f"/joint_states/{names[j]}_joint/{field}")
            cols.append(arrays[s][:, j])
    np.savetxt(path, np.column_stack(cols), delimiter=",", header=",".join(header), comments="", fmt="%.17g")
    return path


def _arrays(n=6, N=30, seed=0):
    rng = np.random.default_rng(seed)
    return dict(t=0.01 * np.arange(N), q=rng.normal(size=(N, n)), tau=rng.normal(size=(N, n)) * 10)


MAP = "t=__time,q=/joint_states/*/position,tau=/joint_states/*/effort"


def test_the_permutation_follows_the_names():
    headers = [f"/joint_states/{x}_joint/position" for x in PLOTJUGGLER]
    expected = [PLOTJUGGLER.index(x) for x in UR5]
    assert data.order_by_joint_names(headers, UR5) == expected  # the built-in names, inside '<name>_joint'
    assert data.order_by_joint_names(headers, [x + "_joint" for x in UR5]) == expected  # a URDF's names
    # Whole tokens: joint1 is not inside joint10, and the longest whole name wins.
    assert data.order_by_joint_names(["j/joint10/pos", "j/joint1/pos"], ["joint1", "joint10"]) == [1, 0]
    assert data.order_by_joint_names(["wrist_elbow_joint", "ELBOW_JOINT"], ["elbow_joint", "wrist_elbow_joint"]) == [
        1,
        0,
    ]
    assert data.order_by_joint_names(["pos_1", "pos_2"], ["shoulder", "elbow"]) is None  # no names: caller's order


@pytest.mark.parametrize(
    "headers, names, problem",
    [
        (["a_b_pos", "c_pos"], ["a", "b"], "column 'a_b_pos' names joints 'a', 'b' of the model: ambiguous"),
        (["a_pos", "b_pos"], ["a", "b", "c"], "joint 3 (c) of the model is named by no column"),
        (["elbow_joint", "wrist_elbow_joint"], ["elbow_joint"], "joint 1 (elbow_joint) of the model is named by 2"),
        (["a_pos", "other"], ["a"], "column 'other' names none of the model's joints"),
    ],
)
def test_a_mismatch_names_both_lists(headers, names, problem):
    with pytest.raises(data.DatasetError) as e:
        data.order_by_joint_names(headers, names)
    message = str(e.value)
    assert problem in message and "\n" not in message
    assert (
        f"the model's joints are {', '.join(names)}" in message and f"the columns are {', '.join(headers)}" in message
    )


def test_shuffled_named_columns_read_as_the_model_ordered_file(tmp_path):
    a = _arrays()
    path = _joint_states(tmp_path / "ordered.csv", a, UR5, range(6))
    ordered = data.read(path, columns=MAP, joint_names=UR5, derivatives=None)
    rng = np.random.default_rng(1)
    for k, order in enumerate([[UR5.index(x) for x in PLOTJUGGLER], list(rng.permutation(6))]):
        path = _joint_states(tmp_path / f"shuffled{k}.csv", a, UR5, order)
        ds = data.read(path, columns=MAP, joint_names=UR5, derivatives=None)
        for s in ("t", "q", "tau"):
            assert np.array_equal(np.asarray(getattr(ds, s)), np.asarray(getattr(ordered, s))), s
            if s != "t":
                assert np.array_equal(np.asarray(getattr(ds, s)), a[s]), s
        assert "q <- columns in the model's joint order, matched by joint name" in ds.notes
    # Without the model's names the glob's columns are in name order: elbow first, the joints permuted.
    plain = data.read(tmp_path / "shuffled0.csv", columns=MAP, derivatives=None)
    assert np.array_equal(np.asarray(plain.q)[:, 0], a["q"][:, UR5.index("elbow")])


def test_headers_without_joint_names_keep_name_order_and_say_so(tmp_path):
    a = _arrays(n=2)
    header = ["time", "pos_2", "pos_1", "eff_1", "eff_2"]
    table = np.column_stack([a["t"], a["q"][:, 1], a["q"][:, 0], a["tau"]])
    path = tmp_path / "log.csv"
    np.savetxt(path, table, delimiter=",", header=",".join(header), comments="", fmt="%.17g")
    ds = data.read(path, columns="t=time,q=pos_*,tau=eff_*", joint_names=("shoulder", "elbow"), derivatives=None)
    assert np.array_equal(np.asarray(ds.q), a["q"])
    assert any(n.startswith("q <- columns in name order") and "pos_1, pos_2" in n for n in ds.notes)


def test_named_columns_that_do_not_match_the_model_are_an_error(tmp_path):
    a = _arrays()
    names = UR5[:5] + ("gripper",)
    path = _joint_states(tmp_path / "other.csv", a, names, range(6))
    with pytest.raises(data.DatasetError) as e:
        data.read(path, columns=MAP, joint_names=UR5, derivatives=None)
    message = str(e.value)
    assert "other.csv: columns: q: joint 6 (wrist_3) of the model is named by no column" in message
    assert "shoulder_pan, shoulder_lift" in message and "/joint_states/gripper_joint/position" in message


# ------------------------------------------------------------------------------ the workflow
DH = """
name = "arm2"
[[joint]]
name = "shoulder"
dh = [0, 0, 0.5, 0]
mass = 2.0
com = [-0.25, 0.01, 0]
inertia = [0.01, 0, 0, 0.05, 0, 0.05]
[[joint]]
name = "elbow"
dh = [0, 0, 0.4, 0]
mass = 1.2
com = [-0.2, 0.0, 0.01]
inertia = [0.005, 0, 0, 0.02, 0, 0.02]
"""


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """A 2R arm whose joint names sort the wrong way round (elbow < shoulder), and its exact torques."""
    d = tmp_path_factory.mktemp("names")
    (d / "arm.toml").write_text(DH)
    robot = dh.load(d / "arm.toml")
    t = np.arange(0.0, 6.0, 0.01)
    w = 2 * np.pi * np.array([1 / 6, 2 / 6, 3 / 6])
    amp = np.random.default_rng(2).normal(size=(3, 2)) * 0.8
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    q, qd, qdd = s @ amp, (c * w) @ amp, (-s * w**2) @ amp
    tau = np.asarray(jaxid.rnea(robot, q, qd, qdd))
    return d, robot, dict(t=t, q=q, qd=qd, qdd=qdd, tau=tau)


def test_shuffled_named_columns_give_the_same_fit(arm):
    d, robot, a = arm
    assert robot.coordinate_names == ("shoulder", "elbow")
    signals = (("q", "position"), ("qd", "velocity"), ("qdd", "acceleration"), ("tau", "effort"))
    columns = MAP + ",qd=/joint_states/*/velocity,qdd=/joint_states/*/acceleration"
    model = ModelSpec(dh=str(d / "arm.toml"), joint_terms=())
    theta = {}
    for name, order in (("ordered", [0, 1]), ("shuffled", [1, 0])):
        path = _joint_states(d / f"{name}.csv", a, ("shoulder", "elbow"), order, signals)
        out = run_identify(
            IdentifyRequest(
                data=(str(path),),
                model=model,
                prepare=DataSpec(columns=columns),
                method="ols",
                output=str(d / f"{name}.json"),
            )
        )
        theta[name] = np.asarray(out.params.theta)
    np.testing.assert_array_equal(theta["shuffled"], theta["ordered"])
    # Exact torques of the model: the fit reproduces its base parameters.
    base = jaxid.base_parameters(robot)
    np.testing.assert_allclose(theta["ordered"], np.asarray(base.to_base(robot.parameter_vector())), atol=1e-8)


def test_no_model_no_fit(arm, capsys):
    d, robot, a = arm
    plain = d / "plain.csv"
    data.write(data.from_arrays(a["t"], a["q"], a["tau"], a["qd"], a["qdd"]), plain)  # no sidecar
    assert main(["identify", str(plain), "-o", str(d / "p.json"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip().endswith(NO_MODEL)
    # A second run (a copy of the first would be refused as the same run given twice, first).
    data.write(data.from_arrays(a["t"], a["q"], 1.01 * a["tau"], a["qd"], a["qdd"]), d / "plain2.csv")
    for command in (["crossval", str(plain), str(d / "plain2.csv")], ["payload", str(plain)]):
        assert main(command + ["--quiet"]) == 2
        assert NO_MODEL in capsys.readouterr().err
    with pytest.raises(WorkflowError, match="no robot model given: pass --urdf PATH"):
        run_identify(IdentifyRequest(data=(str(plain),), output=str(d / "p.json")))
    assert not (d / "p.json").exists()


def test_a_simulated_file_carries_its_model(arm, capsys):
    d, robot, a = arm
    traj = d / "traj.csv"
    header = ["t"] + [f"{k}{j + 1}" for k in ("q", "qd", "qdd") for j in range(2)]
    cols = np.column_stack([a["t"], a["q"], a["qd"], a["qdd"]])
    np.savetxt(traj, cols, delimiter=",", header=",".join(header), comments="", fmt="%.17g")
    sim = d / "sim.csv"
    assert main(["simulate", "--dh", str(d / "arm.toml"), "--trajectory", str(traj), "-o", str(sim), "--quiet"]) == 0
    recorded = data.read_model(sim)
    assert recorded["dh"] == str((d / "arm.toml").resolve()) and recorded["n"] == 2
    assert data.read_excitation(sim) == (None, None)  # a sidecar of the model alone
    assert main(["identify", str(sim), "--cutoff", "5", "-o", str(d / "sim.json"), "--quiet"]) == 0
    params = json.loads((d / "sim.json").read_text())
    assert params["model"]["dh"] == recorded["dh"] and params["model"]["fingerprint"] == recorded["fingerprint"]
    # Two files recording different models: name one.
    other = d / "other.csv"
    run = data.read(sim, derivatives=None)
    run = dataclasses.replace(run, tau=1.01 * run.tau)  # another run: a byte copy is refused as the same run
    data.write(run, other, model={**recorded, "dh": None, "builtin": "planar2"})
    with pytest.raises(WorkflowError, match="the data files record different models"):
        run_identify(IdentifyRequest(data=(str(sim), str(other)), output=str(d / "x.json")))

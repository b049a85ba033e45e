"""Verdicts in parts (issue 31): the named checks consistent, converged and plausible, each with its
numbers, and the joints a validation flags."""

from __future__ import annotations

import json
from types import SimpleNamespace

import jax
import numpy as np
import pytest

from jaxid import models, simulation
from jaxid.model import inertia, library
from jaxid.workflow import params as _params
from jaxid.workflow import records, validation, verdicts

UR5 = {"builtin": "ur5"}


def _params_of(robot, standard, model=UR5, converged=None):
    """The fields of a Params that the checks read."""
    consistency = None if converged is None else SimpleNamespace(converged=converged, steps=40, grad_norm=1e-9)
    return SimpleNamespace(
        standard=np.asarray(standard, dtype=float),
        parameter_names=tuple(robot.parameter_names()),
        consistency=consistency,
        model=model,
    )


def _set_link(robot, theta, j, *, mass=None, com=None, inertia_com=None):
    """theta with link j's body replaced (mass kg, centre of mass m, inertia about it kg m^2)."""
    theta = np.array(theta, dtype=float)
    m0, c0, I0 = (np.asarray(x) for x in inertia.to_mass_com_inertia(theta[10 * j : 10 * j + 10]))
    m = m0 if mass is None else mass
    I = I0 * (m / m0) if inertia_com is None else np.asarray(inertia_com)
    theta[10 * j : 10 * j + 10] = np.asarray(
        inertia.from_mass_com_inertia(m, c0 if com is None else np.asarray(com), I)
    )
    return theta


@pytest.fixture(scope="module")
def ur5():
    robot = models.ur5()
    true = simulation.perturb(robot, jax.random.PRNGKey(0), scale=0.2, friction=())
    return robot, np.asarray(true.parameter_vector())


def _by_name(checks):
    return {c["name"]: c for c in checks}


def test_true_like_bodies_pass_every_check(ur5):
    robot, theta = ur5
    checks = verdicts.verdict_checks(robot, _params_of(robot, theta, converged=True))
    by = _by_name(checks)
    assert [c["name"] for c in checks] == list(verdicts.CHECKS)
    assert all(c["passed"] is True for c in checks), [c["failures"] for c in checks]
    assert by["plausible"]["nominal"] == "CAD" and "UR5 capsules" in by["plausible"]["geometry"]
    assert all(0.8 - 1e-9 <= r["mass_ratio"] <= 1.2 + 1e-9 for r in by["plausible"]["links"])
    lines = verdicts.verdict_lines(checks)
    assert lines[-1].strip() == "verdict: plausible (every check passed)"
    assert not any("physically consistent" in line for line in lines)
    json.dumps(checks)  # plain JSON values, stored as they are in params.json


@pytest.mark.parametrize(
    "change, words",
    [
        (dict(mass=50 * 8.393), ["mass 420 kg is 50x the nominal 8.39 kg"]),
        (dict(com=(0.0, 1.0, 0.0)), ["centre of mass", "outside the link's geometry", "margin 0.05 m"]),
        (dict(inertia_com=np.diag([1e-8, 1e-8, 1e-8])), ["degenerate body: smallest principal moment 1e-08 kg m^2"]),
    ],
    ids=["mass 50x", "com 1 m out", "point mass"],
)
def test_an_implausible_body_is_named_with_its_number(ur5, change, words):
    robot, _ = ur5
    theta = _set_link(robot, robot.parameter_vector(), 1, **change)  # link 2, the upper arm
    checks = verdicts.verdict_checks(robot, _params_of(robot, theta, converged=True))
    by = _by_name(checks)
    assert by["consistent"]["passed"] and by["converged"]["passed"] and by["plausible"]["passed"] is False
    failing = [f for f in by["plausible"]["failures"] if f.startswith("link 2 (upper_arm_link)")]
    assert failing and all(w in " ".join(failing) for w in words), by["plausible"]["failures"]
    assert not any(f.startswith(("link 1 ", "link 3 ")) for f in by["plausible"]["failures"])
    lines = verdicts.verdict_lines(checks)
    assert "plausible: FAIL" in lines[2] and lines[-1].strip() == "verdict: not plausible (failed: plausible)"
    assert verdicts.summary_line(checks) == "consistent: pass, converged: pass, plausible: FAIL; verdict: not plausible"
    assert not verdicts.overall(checks)


def test_the_total_mass_and_a_non_physical_body_are_checks_of_their_own(ur5):
    robot, _ = ur5
    theta = np.asarray(robot.parameter_vector()) * np.r_[np.full(60, 2.5), np.ones(len(robot.parameter_names()) - 60)]
    by = _by_name(verdicts.verdict_checks(robot, _params_of(robot, theta)))
    assert by["plausible"]["failures"] == ["total mass 42.6 kg is 2.5x the nominal 17 kg (allowed 1/2x to 2x)"]
    assert by["converged"]["passed"] is None  # no consistent fit was run: not judged, not failed
    bad = _set_link(robot, robot.parameter_vector(), 3, inertia_com=np.diag([0.01, 0.01, 0.05]))  # triangle broken
    by = _by_name(verdicts.verdict_checks(robot, _params_of(robot, bad, converged=False)))
    assert by["consistent"]["passed"] is False and "link 4 (wrist_1_link)" in by["consistent"]["failures"][0]
    assert by["converged"]["failures"] == ["the consistent fit did not converge in 40 steps"]


def test_a_body_on_its_boundary_fails_unless_the_data_put_it_there(ur5):
    """A flat body (all mass on a plane: the pseudo-inertia's boundary) passes only when the
    least-squares estimate lies beyond that boundary, along the way into the feasible set, by more
    than BOUNDARY_Z std; the score is that distance in std (every parameter identifiable here)."""
    from jaxid.identification.base import BaseParameters

    robot, _ = ur5
    plate = np.diag([0.004, 0.006, 0.010])  # Izz = Ixx + Iyy: a plate in the flange's xy plane
    theta = _set_link(robot, robot.parameter_vector(), 5, inertia_com=plate)
    p = theta.size
    base = BaseParameters(
        indices=np.arange(p),
        dependent=np.zeros(0, int),
        K=np.zeros((p, 0)),
        r_diag=np.ones(p),
        gap=np.inf,
        rank=p,
        names=tuple(robot.parameter_names()),
        standard_names=tuple(robot.parameter_names()),
    )
    std = 1e-3 * np.abs(theta) + 1e-5
    size = verdicts._size(verdicts.link_geometry(robot, UR5)[0][5])
    d = np.zeros(p)
    d[50:60] = verdicts._inside(theta[50:60], size, None, 5) - theta[50:60]
    step = np.linalg.norm(d / std)  # one unit along d is this many std

    def check(ls):
        params = _params_of(robot, theta, converged=True)
        params.base, params.cov = base, np.diag(std**2)
        params.consistency.estimate_ls, params.consistency.bounds = list(ls), None
        by = _by_name(verdicts.verdict_checks(robot, params))
        return by["plausible"], by["plausible"]["links"][5]

    for ls, z in ((theta, 0.0), (theta + 5 * d / step, -5.0)):  # the estimate on it, or inside: not the data
        check_, row = check(ls)
        assert row["boundary"] == ["pseudo-inertia"] and row["boundary_z"] == pytest.approx(z, abs=1e-6)
        assert not check_["passed"] and check_["failures"][0].startswith("link 6 (wrist_3_link): on the boundary of")
        assert "the data do not put it there" in check_["failures"][0], check_["failures"]
    check_, row = check(theta - 5 * d / step)  # 5 std beyond the boundary: the data put it there
    assert row["boundary_ok"] and row["boundary_z"] == pytest.approx(5.0) and check_["passed"], check_["failures"]
    # no least-squares estimate recorded: nothing says it was the data
    check_ = _by_name(verdicts.verdict_checks(robot, _params_of(robot, theta, converged=True)))["plausible"]
    assert "no least-squares estimate is recorded" in check_["failures"][0]


def test_a_placeholder_nominal_is_judged_against_the_geometry():
    robot = library.planar(3)  # 1 kg thin rods on every link: a placeholder
    assert verdicts.is_placeholder(robot) and not verdicts.is_placeholder(models.ur5())
    model = {"builtin": "planar3"}
    ok = verdicts.plausible_check(robot, robot.parameter_vector(), model=model)
    assert ok["passed"] and ok["nominal"] == "placeholder" and "placeholder nominal" in ok["detail"]
    assert "kinematic skeleton" in ok["geometry"] and all("mass_bound" in r for r in ok["links"])
    heavy = _set_link(robot, robot.parameter_vector(), 2, mass=1e5)
    bad = verdicts.plausible_check(robot, heavy, model=model)
    assert bad["failures"][0].startswith("link 3 (joint3): mass 1e+05 kg is above its geometry bound")
    assert bad["failures"][1].startswith("total mass 1e+05 kg is above the sum of the links' geometry bounds")
    assert "the nominal is a placeholder" in bad["failures"][0] and len(bad["failures"]) == 2


def test_checks_are_stored_and_older_files_still_load(tmp_path):
    doc = json.loads(open("tests/data/params_v1.json").read())
    old = _params.load_params("tests/data/params_v1.json")
    assert old.physics is None or old.physics.checks is None  # written before the named checks
    physics = records.PhysicsCheck(True, [], None, [{"name": "plausible", "passed": True}], True)
    assert records.PhysicsCheck.from_dict(physics.to_dict()) == physics
    assert records.PhysicsCheck.from_dict({"consistent": True, "problems": []}).checks is None
    assert doc["format"] == "jaxid.params"


def test_a_validation_flags_the_joint_far_from_the_others():
    rng = np.random.default_rng(0)
    tau = rng.normal(size=(400, 4)) * [10.0, 8.0, 5.0, 2.0]
    pred = tau + rng.normal(size=tau.shape) * [0.3, 0.25, 0.15, 0.06]  # ~3 % on every joint
    clean = validation.validation_metrics(tau, pred)
    assert validation.joint_flags(clean) == []
    pred[:, 2] = 0.4 * tau[:, 2]  # joint 3 predicted badly: NRMSE 60 %, R^2 0.64
    flags = validation.joint_flags(validation.validation_metrics(tau, pred), ["a", "b", "elbow", "d"])
    assert [f["joint"] for f in flags] == [3] and flags[0]["name"] == "elbow"
    assert "NRMSE 60" in flags[0]["line"] and "the median of the other joints" in flags[0]["line"]
    assert "R^2 0.639 < 0.8" in flags[0]["line"]


def test_a_urdf_model_is_judged_on_its_collision_geometry_and_link_names():
    from jaxid import workflow

    robot, desc = workflow.model(urdf="examples/data/kuka_lwr4/kuka_lwr4.urdf")
    nominal = np.asarray(robot.parameter_vector())
    by = _by_name(verdicts.verdict_checks(robot, _params_of(robot, nominal, model=desc, converged=True)))
    assert by["plausible"]["passed"] and "URDF's collision/visual geometry" in by["plausible"]["geometry"]
    heavy = _set_link(robot, nominal, 1, mass=314.0)
    by = _by_name(verdicts.verdict_checks(robot, _params_of(robot, heavy, model=desc, converged=True)))
    assert (
        by["plausible"]["failures"][0]
        == "link 2 (lwr_2_link): mass 314 kg is 116x the nominal 2.7 kg (allowed 1/3x to 3x)"
    )
    assert by["plausible"]["failures"][-1].startswith("total mass 326 kg is 22.6x the nominal 14.4 kg")


def test_a_nominal_centre_of_mass_outside_a_thin_skeleton_widens_the_margin():
    robot = library.puma560()  # no geometry: skeleton capsules, the shoulder's CAD centre of mass beyond them
    ok = verdicts.plausible_check(robot, robot.parameter_vector(), model={"builtin": "puma560"})
    assert ok["passed"] and "kinematic skeleton" in ok["geometry"]
    assert ok["links"][1]["com_allowed_m"] > verdicts.COM_MARGIN + 0.05
    far = _set_link(robot, robot.parameter_vector(), 1, com=(0.0, 0.0, 1.0))
    bad = verdicts.plausible_check(robot, far, model={"builtin": "puma560"})
    assert bad["failures"][0].startswith("link 2 (") and "+ the nominal's own" in bad["failures"][0]

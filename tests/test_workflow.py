"""jaxid.workflow: the data-driven preprocessing choices, the library path read -> prepare ->
identify_experiment -> validate on a simulated planar arm, and its checks."""

import dataclasses
import warnings

import equinox as eqx
import jax
import numpy as np
import pytest

import jaxid
from jaxid import data, results, signals, simulation, workflow

FS = 100.0


def _trajectory(seed=0, duration=12.0, n=2):
    """Three sines per joint (0.25-0.75 Hz) with exact derivatives."""
    t = np.arange(0.0, duration, 1.0 / FS)
    w = 2 * np.pi * np.array([0.25, 0.5, 0.75])
    a = np.random.default_rng(seed).normal(size=(3, n)) * 0.6
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    return t, s @ a, (c * w) @ a, (-s * w**2) @ a


@pytest.fixture(scope="module")
def experiment():
    """A true planar2 robot measured (q, tau only) on two trajectories: same robot, other noise."""
    robot, desc = workflow.model(builtin="planar2", joint_terms=("fv", "fc", "offset"))
    key = jax.random.PRNGKey(3)
    runs = []
    for k in (1, 2):
        t, q, qd, qdd = _trajectory(seed=k)
        m = simulation.simulate(
            robot.with_joint_terms(()), t, q, qd, qdd, key, noise_key=jax.random.PRNGKey(10 + k), sigma_q=1e-5
        )
        runs.append(m)
    assert np.allclose(runs[0].robot.parameter_vector(), runs[1].robot.parameter_vector())  # same true robot
    prepared = workflow.prepare([r.data for r in runs[:1]], robot)
    params = workflow.identify_experiment(robot, prepared, description=desc)
    return robot, desc, runs, prepared, params


def test_cutoff_follows_the_noise_floor():
    t, q, _, _ = _trajectory(duration=40.0)
    rng = np.random.default_rng(0)
    cut = [workflow.choose_cutoff(q + s * rng.normal(size=q.shape), FS) for s in (1e-6, 1e-4, 1e-2)]
    # A margin above the signal band (0.75 Hz) that leaves it unattenuated, lower for noisier
    # positions, below the noise-only band.
    assert workflow.EXCITATION_CUTOFF * 0.75 <= cut[2] <= cut[1] <= cut[0] <= FS / 4 and cut[2] < cut[0], cut
    # Round-off is the only floor: the roll-off of the windowed band is read as its edge, and the
    # cut still passes the band.
    assert workflow.EXCITATION_CUTOFF * 0.75 <= workflow.choose_cutoff(q, FS) < FS / 4


def test_cutoff_reads_coloured_noise_as_noise():
    # Position noise that is not white (low-passed inside the drive, or by resampling jittered
    # stamps: the Panda log of Gaz et al. 2019 has a floor 6-8 times higher below 100 Hz than
    # above fs/4): a floor read only above fs/4 would call all of it signal and cut at fs/4.
    from scipy import signal

    t, q, _, _ = _trajectory(duration=40.0)
    rng = np.random.default_rng(1)
    b, a = signal.butter(1, 0.3)  # first order: noise power / 4 per octave above 15 Hz
    noisy = q + signal.lfilter(b, a, 1e-4 * rng.normal(size=q.shape), axis=0)
    cut = workflow.choose_cutoff(noisy, FS)
    assert workflow.EXCITATION_CUTOFF * 0.75 <= cut < 0.2 * FS / 4, cut  # the floor above fs/4 alone: fs/4


def test_edge_trim_removes_the_filter_transient():
    t, q, qd, qdd = _trajectory(duration=20.0)
    cutoff = 5.0
    k = workflow.edge_trim(FS, cutoff)
    _, _, qdd_f = (np.asarray(x) for x in signals.derivatives(q, 1 / FS, cutoff=cutoff))
    err = np.abs(qdd_f - qdd)
    interior = err[len(t) // 4 : -len(t) // 4].max()
    # Past the trim the edge transient has died out: the kept samples are as good as the interior
    # (the filter's own attenuation); the dropped edge is far worse.
    assert err[k:-k].max() < 1.5 * interior
    assert err[:k].max() > 10 * interior and err[-k:].max() > 10 * interior
    assert k >= 3 * (4 + 1)


def test_prepare_records_its_choices_and_aligns(experiment):
    robot, _, runs, prepared, _ = experiment
    c = prepared.choices[0]
    assert c["derivatives"] == "butterworth" and c["cutoff_from"] == "spectrum" and 0.75 < c["cutoff_hz"] < FS / 4
    assert c["samples"] == c["samples_read"] - 2 * c["trim"] and c["index"] == [
        c["trim"],
        c["samples_read"] - c["trim"],
        1,
    ]
    assert np.array_equal(prepared.align(0, runs[0].data.tau), np.asarray(prepared.datasets[0].tau))
    assert "from the position spectrum" in prepared.describe()[0]
    # Logged derivatives are used as they are: no filter, no trim.
    logged = data.from_arrays(runs[0].data.t, runs[0].q, runs[0].tau, runs[0].qd, runs[0].qdd)
    p = workflow.prepare(logged, robot, workflow.Policy(step=2))
    assert p.choices[0]["derivatives"] == "logged" and len(p.datasets[0]) == (len(logged) + 1) // 2


def test_identifies_and_validates_on_the_same_robot(experiment):
    robot, _, runs, prepared, params = experiment
    true = runs[0].robot
    assert tuple(true.parameter_names()) == tuple(params.parameter_names)
    theta_true = np.asarray(params.base.to_base(np.asarray(true.parameter_vector())))
    z = np.abs(np.asarray(params.theta) - theta_true) / np.asarray(params.std)
    assert z.max() < 5, z
    held_out = workflow.prepare([runs[1].data], robot)
    val = workflow.validate(robot, params, held_out, truth=[runs[1].tau])
    assert val.warnings == [] and val.worst("nrmse") < 1.0
    assert params.preprocessing[0].cutoff_hz == prepared.choices[0]["cutoff_hz"]
    assert isinstance(params.physics.problems, list)
    # Base parameters only (no consistent bodies): the body checks are not judged, and not "plausible".
    assert [c["passed"] for c in params.physics.checks] == [None, None, None] and not params.physics.plausible
    assert workflow.verdict_lines(params.physics.checks)[-1].strip().startswith("verdict: not judged")
    assert val.flagged() == [] and all(r["flagged"] == [] for r in val.runs)
    # A joint predicted badly is flagged by name, with its numbers.
    bad = workflow.validate(robot, params, held_out, truth=[runs[1].tau * np.array([1.0, 3.0])])
    assert [(f["joint"], f["name"]) for _, f in bad.flagged()] == [(2, robot.coordinate_names[1])]
    assert "R^2" in bad.flagged()[0][1]["line"]


def test_other_kinematics_are_named(experiment):
    robot, _, runs, _, params = experiment
    longer = dataclasses.replace(robot, placements=robot.placements.at[1, 0, 3].add(0.1))
    val = workflow.validate(longer, params, workflow.prepare([runs[1].data], longer))
    assert len(val.warnings) == 1 and "other kinematics" in val.warnings[0]


def test_bad_input_is_named(experiment):
    robot, _, runs, _, params = experiment
    ur5 = jaxid.models.ur5()
    with pytest.raises(workflow.WorkflowError, match="the data have 2 joints but the model 'ur5' has 6"):
        workflow.prepare([runs[0].data], ur5)
    with pytest.raises(workflow.WorkflowError, match="cutoff must be a finite frequency"):
        workflow.Policy(cutoff=-1.0)
    with pytest.raises(workflow.WorkflowError, match="step must be an integer >= 1"):
        workflow.Policy(step=0)
    short = runs[0].data.slice(0, 40)
    with pytest.raises(workflow.WorkflowError, match="40 samples; differentiating q"):
        workflow.prepare([short], robot, workflow.Policy(cutoff=1.0))
    jitter = data.from_arrays(
        np.asarray(runs[0].data.t) + 1e-4 * np.sin(np.arange(len(runs[0].data))), runs[0].data.q, runs[0].data.tau
    )
    with pytest.raises(workflow.WorkflowError, match="irregular time stamps"):
        workflow.prepare([jitter], robot)
    with pytest.raises(workflow.WorkflowError, match="method must be one of"):
        workflow.identify_experiment(robot, workflow.prepare([runs[0].data], robot), method="lasso")


def test_params_round_trip_keeps_the_fingerprint(experiment, tmp_path):
    robot, _, _, _, params = experiment
    results.save_params(tmp_path / "p.json", params)
    back = results.load_params(tmp_path / "p.json")
    assert back.model["fingerprint"] == results.fingerprint(robot)
    assert results.model_mismatches(results.model_from_description(back.model), back) == []


def test_faulty_torque_channels_are_named_or_screened(experiment):
    """A dead channel and a 1e8 N m cell are errors naming run and joint; a spike within the
    physical bound is dropped as an outlier, and the fit stays near the clean estimate."""
    robot, desc, runs, prepared, clean = experiment
    ds = prepared.datasets[0]
    tau = np.asarray(ds.tau)
    dead = dataclasses.replace(ds, tau=tau * np.array([1.0, 0.0]))
    with pytest.raises(workflow.WorkflowError, match="joint2.*all zero"):
        workflow.identify_experiment(robot, workflow.Prepared((dead,), prepared.choices), description=desc)
    huge = tau.copy()
    huge[100, 0] = 1e8
    with pytest.raises(workflow.WorkflowError, match="sample 100"):
        workflow.identify_experiment(
            robot, workflow.Prepared((dataclasses.replace(ds, tau=huge),), prepared.choices), description=desc
        )
    spike = tau.copy()
    spike[100, 0] += 1e3
    p = workflow.identify_experiment(
        robot, workflow.Prepared((dataclasses.replace(ds, tau=spike),), prepared.choices), description=desc
    )
    assert p.screening.method == "wls" and 100 in p.screening.outlier_samples
    z = np.abs(np.asarray(p.theta) - np.asarray(clean.theta)) / np.asarray(clean.std)
    assert z.max() < 3, z


def test_base_parameters_are_remembered_by_model_value():
    robot = jaxid.models.planar(2)
    base = workflow.base_of(robot)
    assert workflow.base_of(jaxid.models.planar(2)) is base  # an equal model, built again
    heavier = robot.with_parameters(2.0 * robot.parameter_vector())
    other = workflow.base_of(heavier)
    assert other is not base and other.names == base.names  # other values: computed again, same structure
    fresh = jaxid.base_parameters(robot)
    assert fresh.names == base.names and np.array_equal(np.asarray(fresh.K), np.asarray(base.K))


def test_implausible_positions_are_named(experiment):
    """A log whose positions leave the model's range (here q in degrees) is named, with the
    joint, both ranges and the likely unit, in a warning and in the run's description; so is a
    joint that does not move at all (a dead encoder channel)."""
    robot, _, runs, _, _ = experiment
    limited = eqx.tree_at(lambda r: (r.q_min, r.q_max), robot, (np.full(2, -2.0), np.full(2, 2.0)))
    r = runs[0]
    logged = data.from_arrays(r.data.t, np.degrees(r.q), r.tau, r.qd, r.qdd)
    with pytest.warns(UserWarning, match=r"joint1 spans .* against the model's \[-2, 2\] \(degrees\? --units q=deg\)"):
        p = workflow.prepare(logged, limited)
    assert "positions outside the model's range" in p.describe()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # in range: nothing said
        workflow.prepare(data.from_arrays(r.data.t, r.q, r.tau, r.qd, r.qdd), limited)
    dead = np.asarray(r.q).copy()
    dead[:, 1] = dead[0, 1]  # a dead encoder channel
    with pytest.warns(UserWarning, match="joint2 does not move"):
        workflow.prepare(data.from_arrays(r.data.t, dead, r.tau, r.qd, r.qdd), limited)


def test_friction_against_the_motion_names_an_inverted_torque_sign(experiment):
    """Viscous and Coulomb friction of one joint both far below zero read as that joint's torque
    sign inverted in the log (physics_report), not only as two negative parameters."""
    robot, _, _, _, params = experiment
    names = list(params.base.names)
    theta = np.asarray(params.theta).copy()
    for name in ("fv2", "fc2"):
        theta[names.index(name)] = -abs(theta[names.index(name)])
    lines = workflow.physics_report(robot, dataclasses.replace(params, theta=theta))
    assert any(line.startswith("joint 2 (joint2): viscous and Coulomb friction both negative") for line in lines)
    assert not any("viscous and Coulomb" in line for line in workflow.physics_report(robot, params))


def test_estimate_scale_against_the_model_flags_a_torque_unit(experiment):
    """The identified inertial base parameters are about the model's nominal ones (the simulated
    robot is the model, perturbed); torques logged in mN m scale all of them by 1000, which
    scale_vs_model reads and identify_experiment would warn about."""
    robot, _, _, _, params = experiment
    assert 1 / 3 < params.physics.scale_vs_model < 3
    milli = dataclasses.replace(params, theta=1e3 * np.asarray(params.theta), cov=1e6 * np.asarray(params.cov))
    assert abs(workflow.scale_vs_model(robot, milli) / params.physics.scale_vs_model - 1e3) < 1e-6
    assert not workflow.scale_vs_model(robot, milli) < workflow.SCALE_WARN


def test_a_robot_with_coupled_joints_goes_through_the_workflow():
    """A third joint coupled to the second (a gripper's mimic finger; 3 joints, 2 coordinates):
    simulated (perturb draws friction per joint), prepared, identified and validated on the
    coordinates, with the per-coordinate names where the data are per coordinate."""
    p = jaxid.models.planar(3)
    robot = jaxid.Robot(
        p.placements,
        p.axes,
        p.inertial,
        mimic=[None, None, (1, 0.5, 0.1)],
        names=("shoulder", "elbow", "finger"),
        joint_terms=("fv", "fc"),
    )
    t, q, qd, qdd = _trajectory(seed=4, duration=6.0, n=2)
    m = simulation.simulate(
        robot.with_joint_terms(()), t, q, qd, qdd, jax.random.PRNGKey(5), noise_key=jax.random.PRNGKey(6), sigma_q=1e-5
    )
    assert m.robot.joint_params.shape == (3, 3)  # fv, fc, offset drawn for every joint
    prepared = workflow.prepare(data.from_arrays(t, m.q, m.tau, m.qd, m.qdd), robot)
    params = workflow.identify_experiment(robot, prepared)
    val = workflow.validate(robot, params, prepared)
    assert val.runs[0]["relative_error"] < 2.0 and len(val.runs[0]["rmse"]["per_joint"]) == 2  # % of the torque


def test_identification_runs_its_host_linear_algebra_on_one_blas_thread(experiment, monkeypatch):
    """``workflow.identify`` limits numpy's and scipy's BLAS to one thread while it runs (its
    factorisations are small; OpenBLAS's other threads only wait) and gives each library its
    threads back afterwards, also when the identification raises."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import scipy.linalg  # noqa: F401  (scipy's own OpenBLAS loaded, as identify loads it)

    from jaxid.workflow import pipeline

    robot, desc, _, prepared, _ = experiment
    blas = lambda: {i["filepath"]: i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
    seen = []
    fit_rows = pipeline.fit_rows
    monkeypatch.setattr(pipeline, "fit_rows", lambda *a, **k: seen.append(blas()) or fit_rows(*a, **k))
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        # the libraries that took two threads (an OpenBLAS built for one, as cvxpy's, stays at 1)
        before = {lib: n for lib, n in blas().items() if n == 2}
        assert before
        workflow.identify_experiment(robot, prepared, description=desc)
        assert seen and all(seen[0][lib] == 1 for lib in before), seen
        assert {lib: blas()[lib] for lib in before} == before
        monkeypatch.setattr(pipeline, "fit_rows", lambda *a, **k: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            workflow.identify_experiment(robot, prepared, description=desc)
        assert {lib: blas()[lib] for lib in before} == before

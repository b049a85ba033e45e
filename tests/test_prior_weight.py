"""The prior weight of a consistent fit chosen from the data: cross-validation over the runs (or
time blocks of one run) and the one-standard-error rule (Hastie et al., ESL 7.10)."""

import json

import numpy as np
import pytest
from test_consistent import arm3, random_runs

import jaxid
from jaxid import workflow
from jaxid.cli import main
from jaxid.data import Dataset
from jaxid.model.description import builtin_model
from jaxid.workflow import consistency

T = 10.0  # s, the period of the test trajectory


def loop(t, noise=0.0, seed=0):
    """A closed path of three joints with period T (rad), its phase 2 pi t / T recoverable as
    atan2(q0, q1), plus white noise."""
    w = 2 * np.pi * np.asarray(t) / T
    q = np.stack([np.sin(w), np.cos(w), 0.5 * np.sin(2 * w)], axis=1)
    return q + noise * np.random.default_rng(seed).normal(size=q.shape)


def record(t, q, source, f0=None):
    import dataclasses

    ds = Dataset(t=np.asarray(t), q=q, tau=np.zeros_like(q), qd=np.zeros_like(q), qdd=np.zeros_like(q), source=source)
    return dataclasses.replace(ds, base_frequency=f0)


def phases(ds):
    return np.mod(np.arctan2(np.asarray(ds.q)[:, 0], np.asarray(ds.q)[:, 1]), 2 * np.pi) * T / (2 * np.pi)


def test_repeat_lag_finds_a_trajectory_run_again():
    rng = np.random.default_rng(3)
    t_a = np.arange(0, T, 0.01)
    t_b = np.sort(rng.uniform(0, T, 1000))  # other, jittered stamps; the motion started 2.37 s later in phase
    lag = consistency.repeat_lag(t_a, loop(t_a, 0.002), t_b, loop(t_b + 2.37, 0.002, 1))
    # q_b(s + tau) = q_a(tau): s = T - 2.37 (mod T); whichever shift overlaps more, within one sample step.
    assert lag is not None and min(abs(lag - (T - 2.37)), abs(lag + 2.37)) <= 0.011
    other = loop(t_b) * np.array([1.0, 1.0, -1.0])  # the third joint moves the other way: not a repeat
    assert consistency.repeat_lag(t_a, loop(t_a), t_b, other) is None
    # A path that does not close: runs that share 60 % of it repeat it there; 20 % is too little to tell.
    path = lambda t: np.stack([0.1 * t, np.sin(t), 0.01 * t**2], axis=1)
    assert consistency.repeat_lag(t_a, path(t_a), t_a, path(t_a + 4.0)) == pytest.approx(-4.0, abs=0.011)
    assert consistency.repeat_lag(t_a, path(t_a), t_a, path(t_a + 8.0)) is None


def test_repeated_runs_are_folded_by_phase():
    # Two runs of one periodic trajectory (the second started 3 s later in phase): leaving one run out would
    # hold out a motion still in training, so the folds are phase blocks, each holding that span of both
    # runs, and no phase is in two folds.
    t = np.arange(0, T, 0.01)
    runs = (record(t, loop(t, 0.002), "a", f0=1 / T), record(t, loop(t + 3.0, 0.002, 1), "b", f0=1 / T))
    prepared = workflow.Prepared(runs, (dict(source="a", parallel=None), dict(source="b", parallel=None)))
    assert [len(g) for g in consistency.motions(prepared)] == [2]
    folded = consistency.folds(prepared)
    B = consistency.BLOCKS
    assert len(folded.datasets) == B and folded.choices[0]["source"] == f"a + b [block 1/{B}]"
    assert sum(len(d) for d in folded.datasets) == 2 * len(t)
    for k, d in enumerate(folded.datasets):
        # each fold one arc of phase 1/B of the period, the same for both runs (its start: run a's block)
        arc = np.mod(phases(d) - k * T / B, T)
        assert np.all((arc < T / B + 0.05) | (arc > T - 0.05)), k
    # A third run of another motion: leave one motion out (the repeats together), no phase blocks.
    other = record(t, loop(t) * np.array([1.0, 1.0, -1.0]), "c", f0=1 / T)
    three = workflow.Prepared((*runs, other), (*prepared.choices, dict(source="c", parallel=None)))
    by_motion = consistency.folds(three)
    assert [c["source"] for c in by_motion.choices] == ["a + b", "c"]
    assert [len(d) for d in by_motion.datasets] == [2 * len(t), len(t)]
    # Runs of different motions, each whole: leave one run out, the runs as they are.
    two = workflow.Prepared((runs[0], other), (prepared.choices[0], three.choices[2]))
    assert consistency.folds(two) is two
    # Repeats of a path that does not close (no period): blocks of the span both cover on one clock.
    path = lambda t: np.stack([0.1 * t, np.sin(t), 0.01 * t**2], axis=1)
    later = workflow.Prepared(
        (record(t, path(t), "a"), record(t, path(t + 2.0), "b")), prepared.choices
    )  # b runs from 2 s into a's path to 2 s past its end
    folded = consistency.folds(later)
    assert len(folded.datasets) == consistency.BLOCKS and sum(len(d) for d in folded.datasets) == 2 * len(t)
    span = (T + 2.0) / consistency.BLOCKS
    for k, d in enumerate(folded.datasets):
        at = np.asarray(d.q)[:, 0] / 0.1  # the path's own time, 0 to 12 s
        assert np.all((at >= k * span - 0.02) & (at <= (k + 1) * span + 0.02)), k


def test_periods_of_one_run_are_folded_by_phase():
    # Three periods of a known excitation (base frequency 1 / T) in one run: time blocks of the run would put
    # each phase in a training block again; the folds are phase blocks across the periods.
    t = np.arange(0, 3 * T, 0.01)
    run = record(t, loop(t, 0.002), "p", f0=1 / T)
    prepared = workflow.Prepared((run,), (dict(source="p", parallel=None),))
    assert [len(g) for g in consistency.motions(prepared)] == [1]
    folded = consistency.folds(prepared)
    assert len(folded.datasets) == consistency.BLOCKS
    for k, d in enumerate(folded.datasets):
        arc = np.mod(phases(d) - k * T / consistency.BLOCKS, T)
        assert np.all((arc < T / consistency.BLOCKS + 0.05) | (arc > T - 0.05)), k


def test_one_se_rule_takes_the_largest_weight_within_one_standard_error():
    weights = [1e-3, 1e-2, 1e-1, 1.0, 10.0]
    # Least mean at 1e-2 (1.0) with folds 0.9, 1.1: standard error std (ddof 1) / sqrt(2) = 0.1;
    # 1e-1 (mean 1.05) and 1 (1.09) are within 1.1 of it, 10 (1.5) is not: 1 is chosen.
    errors = [[1.2, 1.2], [0.9, 1.1], [1.0, 1.1], [1.04, 1.14], [1.4, 1.6]]
    rule = workflow.one_se_choice(weights, errors)
    assert rule["least"] == 1e-2 and rule["tolerance"] == pytest.approx(1.1)
    assert rule["se"][1] == pytest.approx(0.1) and rule["chosen"] == 1.0
    # Only eligible weights (converged in every fold) are chosen.
    assert workflow.one_se_choice(weights, errors, [True, True, True, False, True])["chosen"] == 1e-1
    # No spread at the least mean: nothing else is within it.
    flat = [[1.2, 1.2], [1.0, 1.0], [1.01, 1.01], [1.0, 1.0], [1.5, 1.5]]
    assert workflow.one_se_choice(weights, flat)["chosen"] == 1.0  # ties with the least count
    assert workflow.one_se_choice(weights, [[1.2, 1.2], [1.0, 1.0], [1.01, 1.01], [1.1, 1.1], [1.5, 1.5]])[
        "chosen"
    ] == pytest.approx(1e-2)
    with pytest.raises(ValueError, match="at least two folds"):
        workflow.one_se_choice(weights, [[1.0]] * 5)


def test_prior_grid_runs_from_the_default_to_the_data():
    grid = workflow.prior_grid(35_000)
    assert len(grid) == 7 and grid[0] == workflow.DEFAULT_PRIOR_WEIGHT and grid[-1] == pytest.approx(35_000)
    assert np.allclose(np.diff(np.log(grid)), np.log(grid[1] / grid[0]))


@pytest.fixture(scope="module")
def unexcited():
    """arm3 (nominal = truth) on two short noisy runs of random states: the mass of link 2 is not a
    base parameter (it lumps into link 1's and its own first moments), and the data leave it free."""
    robot = arm3()
    prepared = random_runs(robot, runs=2, samples=80, noise=0.3, seed=0)
    nominal = np.asarray(robot.parameter_vector())[:30].reshape(3, 10)[:, 0]

    def fit(**kw):
        return workflow.identify_experiment(robot, prepared, consistent=True, **kw)

    masses = lambda p: np.asarray(p.standard)[:30].reshape(3, 10)[:, 0] / nominal
    default = fit()  # the library's default weight: cross-validated as the command line's
    return workflow.crossval(robot, prepared), default, masses(default), masses(fit(prior_weight=1e-8))


def test_cross_validated_weight_keeps_an_unexcited_mass_near_nominal(unexcited):
    cv, default, chosen, tiny = unexcited
    assert default.extra["prior_weight_choice"]["chosen"] == cv["chosen"] == default.consistency.prior_weight
    assert [r["test"] for r in cv["rotations"]] == ["run1", "run2"]
    assert cv["chosen"] >= cv["least"] and cv["weights"][0] == workflow.DEFAULT_PRIOR_WEIGHT
    assert cv["mean_nrms_limits"][cv["chosen"]] <= cv["tolerance"]
    assert tiny[1] > 10  # a tiny weight lets the free mass run off (hundreds of times its nominal)
    assert np.all((chosen > 0.8) & (chosen < 1.25))  # the chosen weight holds every mass


def test_one_run_is_cross_validated_over_time_blocks():
    robot = arm3()
    rng = np.random.default_rng(1)
    q, qd, qdd = (rng.normal(size=(91, 3)) for _ in range(3))
    tau = np.asarray(jaxid.rnea(robot, q, qd, qdd)) + 0.1 * rng.normal(size=(91, 3))
    run = Dataset(t=np.arange(91) * 0.01, q=q, tau=tau, qd=qd, qdd=qdd, source="one")
    prepared = workflow.Prepared((run,), (dict(source="one", parallel=None),))
    cv = workflow.crossval(robot, prepared, weights=(1e-3, 1.0))
    B = consistency.BLOCKS
    assert [r["test"] for r in cv["rotations"]] == [f"one [block {k}/{B}]" for k in range(1, B + 1)]
    assert all(len(r["train"]) == B - 1 for r in cv["rotations"]) and cv["chosen"] in (1e-3, 1.0)


def test_prior_weight_given_skips_the_cross_validation(tmp_path, capsys):
    """identify --consistent chooses its weight by cross-validation (table printed, kept in
    params.json); --prior-weight W fixes it and runs none."""
    robot = builtin_model("planar2")
    rng = np.random.default_rng(2)
    paths = []
    for k in range(2):
        t = np.arange(300) * 0.01
        a, w = rng.uniform(0.5, 1.5, size=(2, 2))
        q, qd, qdd = a * np.sin(w * t[:, None]), a * w * np.cos(w * t[:, None]), -a * w**2 * np.sin(w * t[:, None])
        tau = np.asarray(jaxid.rnea(robot, q, qd, qdd)) + 0.05 * rng.normal(size=(300, 2))
        path = tmp_path / f"run{k}.csv"
        jaxid.data.write(Dataset(t=t, q=q, tau=tau, qd=qd, qdd=qdd), path)
        paths.append(str(path))
    args = ["identify", "--robot", "planar2", *paths, "--consistent", "--quiet"]
    assert main([*args, "--prior-weights", "1e-3,1", "-o", str(tmp_path / "cv.json")]) == 0
    out = capsys.readouterr().out
    assert "prior weight chosen by cross-validation (2 folds" in out and "<- chosen" in out
    choice = json.loads((tmp_path / "cv.json").read_text())["extra"]["prior_weight_choice"]
    assert choice["weights"] == [1e-3, 1.0] and choice["chosen"] in choice["weights"] and len(choice["rotations"]) == 2
    assert main([*args, "--prior-weight", "0.01", "-o", str(tmp_path / "fixed.json")]) == 0
    out = capsys.readouterr().out
    assert "cross-validation" not in out
    doc = json.loads((tmp_path / "fixed.json").read_text())
    assert "prior_weight_choice" not in doc.get("extra", {})
    assert main([*args, "--prior-weight", "0.01", "--prior-weights", "1,2", "-o", str(tmp_path / "x.json")]) != 0


def test_an_estimate_held_at_its_bound_is_reported_as_such_not_with_a_std():
    """Torques whose joint-1 viscous friction is negative (a model error the data insist on): the
    consistent fit holds fv1 at 0, which is named "at bound" with no std (100 std / ~1e-8 would be
    a relative std of ~1e9 %), while the other estimates keep theirs."""
    from jaxid.report import parameter_rows
    from jaxid.workflow.check import FLAG_AT_BOUND

    robot = arm3()
    theta = np.asarray(robot.parameter_vector()).copy()
    fv1 = robot.parameter_names().index("fv1")
    theta[fv1] = -0.3
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.normal(size=(80, 3)) for _ in range(3))
    tau = np.asarray(jaxid.stack(jaxid.regressor(robot, q, qd, qdd)) @ theta).reshape(80, 3)
    tau = tau + 0.05 * rng.normal(size=tau.shape)
    run = Dataset(t=np.arange(80) * 0.01, q=q, tau=tau, qd=qd, qdd=qdd, source="run")
    prepared = workflow.Prepared((run,), (dict(source="run", parallel=None),))
    params = workflow.identify_experiment(robot, prepared, consistent=True, prior_weight=1e-3)
    bound = workflow.at_bound(params)
    k = [robot.parameter_names()[int(i)] for i in np.asarray(params.base.indices)].index("fv1")
    assert bound[k] and bound.sum() == 1
    _, rows = parameter_rows(params)
    assert rows[k][4] == "at bound" and FLAG_AT_BOUND in rows[k][6]
    assert all(r[4] != "at bound" for i, r in enumerate(rows) if i != k)
    # least squares alone has no bound: nothing is "at bound"
    assert not workflow.at_bound(workflow.identify_experiment(robot, prepared)).any()

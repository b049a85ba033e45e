"""The command line end to end on a planar 2R arm: simulate -> identify -> validate, and bad input."""

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxid
import jaxid.data
from jaxid import results
from jaxid.cli import main


def write_trajectory(path, seed, n=2, fs=100.0, duration=6.0):
    """Three sines per joint with exact derivatives, as 'jaxid excite' writes them (no tau)."""
    t = np.arange(0.0, duration, 1.0 / fs)
    w = 2 * np.pi * np.array([1 / 6, 2 / 6, 3 / 6])
    a = np.random.default_rng(seed).normal(size=(3, n)) * 0.6
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    cols = [t, s @ a, (c * w) @ a, (-s * w**2) @ a]
    header = ["t"] + [f"{k}{j + 1}" for k in ("q", "qd", "qdd") for j in range(n)]
    np.savetxt(path, np.column_stack(cols), delimiter=",", header=",".join(header), comments="", fmt="%.17g")
    return str(path)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    f = lambda name: str(d / name)
    for k in (1, 2):
        traj = write_trajectory(d / f"traj{k}.csv", seed=k)
        assert (
            main(
                [
                    "simulate",
                    "--robot",
                    "planar2",
                    "--trajectory",
                    traj,
                    "--seed",
                    "3",
                    "-o",
                    f(f"data{k}.csv"),
                    "--truth",
                    f(f"truth{k}.csv"),
                    "--true-params",
                    f("true.json"),
                    "--sigma-q",
                    "1e-5",
                ]
            )
            == 0
        )
    assert (
        main(["identify", "--robot", "planar2", f("truth1.csv"), "--method", "ols", "-o", f("exact.json"), "--quiet"])
        == 0
    )
    assert (
        main(
            [
                "identify",
                "--robot",
                "planar2",
                f("data1.csv"),
                f("data2.csv"),
                "--cutoff",
                "3",
                "-o",
                f("params.json"),
                "--quiet",
            ]
        )
        == 0
    )
    return d


def test_exact_data_recover_the_true_base_parameters(run):
    true = json.loads((run / "true.json").read_text())
    params = results.load_params(run / "exact.json")
    robot = results.model_from_description(params.model)
    assert list(robot.parameter_names()) == true["names"]
    base = jaxid.base_parameters(robot)
    np.testing.assert_allclose(
        np.asarray(params.theta), np.asarray(base.to_base(np.array(true["theta"]))), rtol=1e-7, atol=1e-9
    )


def test_noisy_data_predict_held_out_torques(run, capsys):
    out = run / "val"
    assert (
        main(
            [
                "validate",
                "--params",
                str(run / "params.json"),
                str(run / "truth2.csv"),
                "--out",
                str(out),
                "--json",
                str(run / "metrics.json"),
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert "RMSE N m" in table and "joint2" in table
    doc = json.loads((run / "metrics.json").read_text())
    m = doc["files"][0]
    # Identified on both noisy runs (0.5 % torque noise), predicting the noise-free truth of run 2.
    assert m["nrmse"]["overall"] < 3.0 and m["r2"]["overall"] > 0.99
    assert abs(m["relative_error"] - m["nrmse"]["overall"]) < 1e-9
    # Every joint judged on its own: none far from the others here, and the table says so.
    assert m["flagged"] == [] and "no joint flagged (NRMSE within 3x the other joints' median" in table
    # The identification's own checks, named with its file (least squares only: the bodies not judged).
    assert "consistent: not judged, converged: not judged, plausible: not judged; verdict: not judged" in table
    assert doc["checks"]["plausible"] is None  # not judged (null), as the line says: not failed
    assert (out / "truth2_torques.png").stat().st_size > 1000
    assert json.loads((out / "metrics.json").read_text()) == doc
    # --robot given explicitly: the same model, the same figures.
    assert (
        main(
            [
                "validate",
                "--robot",
                "planar2",
                "--params",
                str(run / "params.json"),
                str(run / "truth2.csv"),
                "--no-figures",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["files"][0]["rmse"] == m["rmse"]


def test_identify_json_and_table(run, capsys):
    assert (
        main(
            ["identify", "--robot", "planar2", str(run / "truth1.csv"), "-o", str(run / "p.json"), "--json", "--quiet"]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["base_parameters"] == 12 and doc["samples"] == 600 and len(doc["base"]) == 12
    assert main(["identify", "--robot", "planar2", str(run / "truth1.csv"), "-o", str(run / "p.json"), "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "std %" in table and "Izz2" in table and "wrote" in table


def test_consistent_identification_writes_a_urdf(run, capsys):
    args = [
        "identify",
        "--robot",
        "planar2",
        str(run / "truth1.csv"),
        "--consistent",
        "--urdf-out",
        str(run / "arm.urdf"),
        "-o",
        str(run / "c.json"),
        "--quiet",
    ]
    code = main(args)
    out = capsys.readouterr().out
    params = results.load_params(run / "c.json")
    assert params.fit["method"] == "wls+consistent" and params.standard is not None
    # The consistent estimate's own covariance is its mean squared error: its spread (first order
    # under its constraints and prior, at most the least-squares covariance, which stays in the file
    # and is the payload's robot prior) plus its shift from the least-squares estimate, squared.
    cov, cov_ls = np.asarray(params.cov), np.asarray(params.consistency.cov_ls)
    d = np.asarray(params.theta) - np.asarray(params.consistency.estimate_ls)
    assert np.max(np.abs(d)) > 0 and np.all(np.diag(cov) >= d**2)
    Li = np.linalg.inv(np.linalg.cholesky(cov_ls))
    assert np.linalg.eigvalsh(Li @ (cov - np.outer(d, d)) @ Li.T).max() <= 1 + 1e-9
    i = np.asarray(params.base.indices)
    np.testing.assert_array_equal(np.asarray(params.full_cov(error=True))[np.ix_(i, i)], cov_ls)
    # "not identified" asks what the data alone determine: the least-squares std, not the prior's
    from jaxid.workflow import check

    np.testing.assert_array_equal(check.data_std(params), np.sqrt(np.diag(cov_ls)))
    # Named checks instead of one word: "plausible" only when every check passes; a fit that
    # stopped early is named as such, is an error (exit 1) and writes no URDF.
    assert "physically consistent" not in out
    assert "consistent: pass" in out and "plausible:" in out
    assert ("verdict: plausible" in out) == params.fit["physics"]["plausible"]
    assert ("converged: FAIL" in out) == (not params.fit["converged"])
    # The true robot's links are within 20 % of the nominal: a converged fit of its data is plausible.
    assert params.fit["physics"]["plausible"] == params.fit["converged"]
    assert ("PHYSICS: the consistent fit did not converge" in out) == (not params.fit["converged"])
    assert code == (0 if params.fit["converged"] else 1) and (run / "arm.urdf").exists() == params.fit["converged"]
    if not params.fit["converged"]:
        assert main(args + ["--accept-unconverged"]) == 0
    true = json.loads((run / "true.json").read_text())
    # Exact data of a consistent robot: the consistent bodies reproduce its torques.
    robot = results.model_from_description(params.model)
    back = jaxid.Robot.from_urdf(run / "arm.urdf", gravity=robot.gravity)
    truth = jaxid.data.read(run / "truth2.csv")
    rigid_true = robot.with_parameters(np.array(true["theta"])).with_joint_terms(())
    np.testing.assert_allclose(
        np.asarray(jaxid.rnea(back, truth.q, truth.qd, truth.qdd)),
        np.asarray(jaxid.rnea(rigid_true, truth.q, truth.qd, truth.qdd)),
        atol=1e-3,
    )


def test_unconverged_consistent_fit_is_an_error(run, capsys, monkeypatch):
    from jaxid import workflow

    real = workflow.identify_experiment

    def stopped_early(*a, **k):  # the same fit, as if the iteration limit had been reached
        params = real(*a, **k)
        return dataclasses.replace(params, fit={**params.fit, "converged": False, "steps": 7})

    monkeypatch.setattr(workflow, "identify_experiment", stopped_early)
    args = [
        "identify",
        "--robot",
        "planar2",
        str(run / "truth1.csv"),
        "--consistent",
        # a fixed weight skips the cross-validation (run by test_consistent_identification_writes_a_urdf,
        # the choice asserted in tests/test_prior_weight.py): this test is about the final fit
        "--prior-weight",
        "1e-3",
        "--urdf-out",
        str(run / "stopped.urdf"),
        "-o",
        str(run / "stopped.json"),
        "--quiet",
    ]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "did not converge in 7 steps" in err and "no URDF was written" in err and "--accept-unconverged" in err
    assert not (run / "stopped.urdf").exists() and (run / "stopped.json").exists()
    assert main(args + ["--accept-unconverged"]) == 0 and (run / "stopped.urdf").exists()
    assert "standard parameters: physically consistent" not in capsys.readouterr().out
    # validate refuses the unconverged params.json unless told, naming both ways out
    check = ["validate", str(run / "truth2.csv"), "--params", str(run / "stopped.json"), "--no-figures", "--quiet"]
    assert main(check) != 0
    err = capsys.readouterr().err
    assert "did not converge in 7 steps" in err and "--max-steps" in err and "--accept-unconverged" in err
    assert main(check + ["--accept-unconverged"]) == 0


def test_implausible_consistent_fit_writes_no_model(run, capsys, monkeypatch):
    """A consistent fit whose named checks fail ("not plausible") is kept in params.json but is
    not written as a URDF (exit 1, the message names the failed check and the way out) unless
    --accept-implausible; without --urdf-out nothing is refused."""
    from jaxid import workflow

    real = workflow.identify_experiment
    failed = {"name": "plausible", "passed": False, "detail": "masses", "failures": ["link 2 (link2): mass 9x"]}

    def implausible(*a, **k):  # the same fit, as if a link had failed its plausibility check
        params = real(*a, **k)
        checks = [c for c in params.physics.checks if c["name"] != "plausible"] + [failed]
        return dataclasses.replace(params, physics=dataclasses.replace(params.physics, checks=checks, plausible=False))

    monkeypatch.setattr(workflow, "identify_experiment", implausible)
    args = ["identify", "--robot", "planar2", str(run / "truth1.csv"), "--consistent", "--prior-weight", "1e-3"]
    args += ["-o", str(run / "implausible.json"), "--quiet"]
    assert main(args) == 0  # no model file asked for
    urdf = ["--urdf-out", str(run / "implausible.urdf")]
    capsys.readouterr()
    assert main(args + urdf) == 1
    err = capsys.readouterr().err
    assert "not plausible (failed: plausible" in err and "no URDF was written" in err and "--accept-implausible" in err
    assert not (run / "implausible.urdf").exists() and (run / "implausible.json").exists()
    assert results.load_params(run / "implausible.json").physics.plausible is False
    assert main(args + urdf + ["--accept-implausible"]) == 0 and (run / "implausible.urdf").exists()
    # the flag alone, with no model file to write, is refused by name before any work
    capsys.readouterr()
    assert main(args + ["--accept-implausible"]) == 2
    assert "--accept-implausible writes the model file" in capsys.readouterr().err


def test_max_steps_limits_the_consistent_fit(run, capsys):
    """--max-steps is the consistent fit's Newton budget: 2 steps stop it unconverged (exit 1,
    the message says to raise it); without --consistent it is refused. (At a fixed prior weight:
    the cross-validation that chooses it is tests/test_prior_weight.py's.)"""
    args = ["identify", "--robot", "planar2", str(run / "truth1.csv"), "-o", str(run / "two.json"), "--quiet"]
    assert main(args + ["--consistent", "--prior-weight", "1e-3", "--max-steps", "2"]) == 1
    err = capsys.readouterr().err
    assert "did not converge in 2 steps" in err and "raise --max-steps (now 2)" in err
    assert main(args + ["--max-steps", "2"]) != 0
    assert "--max-steps limits the Newton steps of --consistent" in capsys.readouterr().err


def test_fit_gravity_is_kept_for_validate(run, capsys, tmp_path, monkeypatch):
    """identify --fit-gravity on a level simulation finds no tilt; validate predicts with the
    stored gravity (the file's model, not the built-in's), and writes nothing without --out."""
    out = str(run / "g.json")
    assert (
        main(
            [
                "identify",
                "--robot",
                "planar2",
                str(run / "truth1.csv"),
                "--method",
                "ols",
                "--fit-gravity",
                "-o",
                out,
                "--json",
                "--quiet",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["gravity"]["tilt_deg"] < 1e-3
    assert np.allclose(results.load_params(out).model["gravity"], doc["gravity"]["vector"])
    # Without --out, validate prints and writes nothing (no ./validation folder unasked).
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--params", out, str(run / "truth2.csv"), "--json", "--quiet"]) == 0
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())


def test_identify_and_validate_write_reports(run, capsys):
    """--report DIR on identify (the fit) and validate (held-out): report.html, report.md, figures."""
    assert (
        main(
            [
                "identify",
                "--robot",
                "planar2",
                str(run / "truth1.csv"),
                "--method",
                "ols",
                "-o",
                str(run / "r.json"),
                "--report",
                str(run / "fit_report"),
                "--quiet",
            ]
        )
        == 0
    )
    assert "fit_report/report.html" in capsys.readouterr().out
    assert (
        main(
            [
                "validate",
                "--params",
                str(run / "params.json"),
                str(run / "truth2.csv"),
                "--no-figures",
                "--report",
                str(run / "val_report"),
                "--quiet",
            ]
        )
        == 0
    )
    params = results.load_params(run / "params.json")
    assert len(params.fit["singular_values"]) == len(params.base.names)  # recorded for the report
    for d, heading in (("fit_report", "## Torque fit"), ("val_report", "## Held-out torque prediction")):
        md = (run / d / "report.md").read_text()
        page = (run / d / "report.html").read_text()
        assert heading in md and "| base parameter | unit |" in md and "```" not in md
        assert page.count("data:image/png;base64,") == 3 == len(list((run / d / "figures").glob("*.png")))
        assert page.count("data:image/svg+xml;base64,") == len(list((run / d / "figures").glob("*.svg"))) >= 5
        assert f"jaxid {'identify' if d == 'fit_report' else 'validate'} " in md.split("## Commands", 1)[1]
    # The held-out result leads the validate report; the spectrum is the identification data's.
    assert (run / "val_report" / "report.md").read_text().split("\n## ")[1].startswith("Held-out torque prediction")
    assert (run / "val_report" / "figures" / "prediction.pdf").exists()
    assert (run / "fit_report" / "figures" / "spectrum.svg").exists()


def test_help_has_an_example(capsys):
    for cmd in ("simulate", "identify", "validate"):
        with pytest.raises(SystemExit) as e:
            main([cmd, "--help"])
        assert e.value.code == 0
        assert f"jaxid {cmd} " in capsys.readouterr().out


def _subparsers():
    from jaxid.cli import build_parser

    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_help_fits_the_terminal(capsys, monkeypatch):
    """Every subcommand's help fits an 80-column terminal: its descriptions are wrapped (argparse's
    raw formatter would print each as one line), its example commands (indented) kept as written."""
    from jaxid.cli import COMMANDS

    monkeypatch.setenv("COLUMNS", "80")
    subs = _subparsers()
    for cmd in COMMANDS:
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        text = capsys.readouterr().out
        assert f"usage: jaxid {cmd}" in text
        raw = f"{subs[cmd].description}\n{subs[cmd].epilog}".splitlines()
        indented = {line for line in raw if line[:1].isspace()}  # examples: kept as written
        long = [line for line in text.splitlines() if len(line) > 80 and line not in indented]
        assert not long, (cmd, long)


def test_console_script_help():
    script = shutil.which("jaxid", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the jaxid console script is not installed")
    r = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and all(c in r.stdout for c in ("simulate", "identify", "validate"))


def _bad_cases(d):
    data, truth = str(d / "data1.csv"), str(d / "truth1.csv")
    lines = Path(truth).read_text().splitlines()
    nan = d / "nan.csv"
    cells = lines[3].split(",")
    cells[-1] = "nan"
    nan.write_text("\n".join(lines[:3] + [",".join(cells)] + lines[4:]) + "\n")
    notau = d / "notau.csv"
    notau.write_text("\n".join(",".join(l.split(",")[:-2]) for l in lines) + "\n")
    short = d / "short.csv"
    short.write_text("\n".join(lines[:13]) + "\n")
    q_only = d / "q_only.csv"
    q_only.write_text("\n".join(",".join(l.split(",")[:3] + l.split(",")[-2:]) for l in lines[:21]) + "\n")
    broken = d / "broken.json"
    broken.write_text('{"format": "jaxid.params", ')
    params = str(d / "params.json")
    ident = ["identify", "--robot", "planar2", "-o", str(d / "x.json"), "--quiet"]
    return [
        (ident + [str(d / "absent.csv")], "absent.csv: no such file"),
        (ident + [str(nan)], "column 'tau2', row 3 (line 4): value nan is not finite"),
        (ident + [str(notau)], "missing column(s) tau1, tau2"),
        (ident + [str(q_only)], "needs more than"),
        (["identify", "--robot", "ur5", data, "--quiet"], "the data have 2 joints but the model 'ur5' has 6"),
        (["identify", "--robot", "puma", data], "unknown built-in robot 'puma'"),
        (["identify", "--tip-link", "tool0", data], "--tip-link selects the chain of a URDF file"),
        (["identify", "--urdf", str(d / "absent.urdf"), data], "--urdf: no such file"),
        (ident + ["--joint-terms", "fv,stiction", data], "unknown term(s) ['stiction']"),
        (["validate", "--robot", "ur5", "--params", params, data], "identified for a model with 26 parameters"),
        (["validate", "--params", str(broken), data], "not valid JSON"),
        (["validate", "--params", str(d / "none.json"), data], "none.json: no such file"),
        (
            [
                "simulate",
                "--robot",
                "planar2",
                "--trajectory",
                str(d / "traj1.csv"),
                "-o",
                str(d / "s.csv"),
                "--payload-com",
                "0",
                "0",
                "0.1",
            ],
            "give its --payload-mass too",
        ),
        (
            ["excite", "--robot", "ur5", "--payload", "--payload-mass", "0", "-o", str(d / "p.csv")],
            "--payload-*: payload mass must be > 0 kg",
        ),
        (
            ["simulate", "--robot", "planar2", "--trajectory", str(short), "-o", str(d / "s.txt")],
            "must end in .csv or .npz",
        ),
        (
            [
                "simulate",
                "--robot",
                "planar2",
                "--trajectory",
                str(d / "traj1.csv"),
                "-o",
                str(d / "s.csv"),
                "--stribeck-vs",
                "0.02",
            ],
            "add fs to --friction",
        ),
        (
            [
                "simulate",
                "--robot",
                "planar2",
                "--trajectory",
                str(d / "traj1.csv"),
                "-o",
                str(d / "s.csv"),
                "--rate",
                "inf",
            ],
            "--rate must be a finite rate > 0 Hz",
        ),
        (["excite", "--robot", "planar2", "--fs", "nan", "-o", str(d / "e.csv")], "--fs must be a finite sample rate"),
        (["excite", "--robot", "ur5", "--home", "0,0", "-o", str(d / "e.csv")], "--home must be 6 comma-separated"),
        (
            ["excite", "--robot", "ur5", "--home", "0,-0.4,2.8,-1.57,-1.57,0", "-o", str(d / "e.csv")],
            "home pose violates the self-collision constraint at base_link/forearm_link: clearance -21 mm",
        ),
        (
            ["excite", "--robot", "ur5", "--home", "0,-3,1.57,-1.57,-1.57,0", "-o", str(d / "e.csv")],
            "home pose outside the position limits at shoulder_lift",
        ),
        (
            ["excite", "--robot", "planar2", "--obstacle", "0,0,0,1,1,1", "-o", str(d / "e.csv")],
            "planar2 has no collision geometry",
        ),
        (
            ["excite", "--robot", "ur5", "--workspace", "0,0,0,-1,1,1", "-o", str(d / "e.csv")],
            "workspace must be a box",
        ),
        (
            ["excite", "--robot", "ur5", "--srdf", "ur5.srdf", "-o", str(d / "e.csv")],
            "--srdf names link pairs of a URDF",
        ),
        (ident + ["--stribeck-vs", "fit", data], "--stribeck-vs fit identifies the Stribeck velocity of the fs term"),
        (
            ["excite", "--robot", "planar2", "--joint-terms", "fv,fs", "--stribeck-vs", "fit", "-o", str(d / "e.csv")],
            "--stribeck-vs fit is for 'jaxid identify'",
        ),
        (
            [
                "identify",
                "--robot",
                "planar2",
                "--urdf-out",
                str(d / "a.urdf"),
                truth,
                "-o",
                str(d / "x.json"),
                "--quiet",
            ],
            "not physically consistent, so no URDF",
        ),
    ]


def test_bad_input_exits_2_with_one_line(run, capsys):
    for argv, message in _bad_cases(run):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"jaxid {argv[0]}: error: ") and "\n" not in err, err
        assert message in err, (message, err)


def test_stribeck_velocity_fitted_from_data(run, capsys):
    d = run / "stribeck"
    d.mkdir()
    assert (
        main(
            [
                "simulate",
                "--robot",
                "planar2",
                "--trajectory",
                str(run / "traj1.csv"),
                "--seed",
                "4",
                "--friction",
                "fv,fc,fs",
                "--stribeck-vs",
                "0.02",
                "-o",
                str(d / "data.csv"),
                "--truth",
                str(d / "truth.csv"),
                "--true-params",
                str(d / "true.json"),
            ]
        )
        == 0
    )
    true = json.loads((d / "true.json").read_text())
    assert true["model"]["stribeck_vs"] == 0.02 and "fs2" in true["names"]
    assert (
        main(
            [
                "identify",
                "--robot",
                "planar2",
                "--joint-terms",
                "fv,fc,fs",
                "--stribeck-vs",
                "fit",
                str(d / "truth.csv"),
                "-o",
                str(d / "p.json"),
                "--method",
                "ols",
                "--quiet",
            ]
        )
        == 0
    )
    assert "(fitted: separable least squares)" in capsys.readouterr().out
    params = results.load_params(d / "p.json")
    # Noise-free data: vs and the linear parameters come back exactly.
    assert abs(params.model["stribeck_vs"] / 0.02 - 1) < 1e-6
    theta = dict(zip(true["names"], true["theta"]))
    est = dict(zip(params.base.names, np.asarray(params.theta)))
    for k in ("fs1", "fs2", "fc1", "fv2"):
        assert abs(est[k] - theta[k]) < 1e-6 * abs(theta[k]) + 1e-9, k
    # validate rebuilds the model with the fitted vs from params.json.
    assert main(["validate", "--params", str(d / "p.json"), str(d / "truth.csv"), "--no-figures", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"][0]["nrmse"]["overall"] < 1e-4


def test_log_formats_and_paths_exit_2_with_one_line(run, capsys):
    """Column mapping, units, gains, and an output that is an input: one line naming the value."""
    d = run
    data = str(d / "data1.csv")
    ident = ["identify", "--robot", "planar2", "-o", str(d / "x.json"), "--quiet"]
    cases = [
        (ident + ["--columns", "q=pos_*,tau=tau*", data], "pattern 'pos_*'"),
        (ident + ["--units", "q=degree", data], "unknown unit 'degree'"),
        (ident + ["--units", "tau=A", "--gains", "10,10,10", data], "3 values for 2 joints"),
        # A list whose first entry is negative is the option's value, not an unknown option.
        (ident + ["--units", "tau=A", "--gains", "-12.5,10,3", data], "3 values for 2 joints"),
        (ident + ["--mapping", str(d / "absent.toml"), data], "absent.toml"),
        (["identify", "--robot", "planar2", data, "-o", data, "--quiet"], "would destroy the data"),
        (
            ["simulate", "--robot", "planar2", "--trajectory", str(d / "traj1.csv"), "-o", str(d / "traj1.csv")],
            "would destroy the data",
        ),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"jaxid {argv[0]}: error: ") and "\n" not in err, err
        assert message in err, (message, err)
    # Degrees are converted: the same data written in degrees identify the same parameters.
    table = np.loadtxt(data, delimiter=",", skiprows=1)
    header = (d / "data1.csv").read_text().splitlines()[0]
    deg = table.copy()
    deg[:, 1:3] = np.rad2deg(deg[:, 1:3])
    np.savetxt(d / "deg.csv", deg, delimiter=",", header=header, comments="", fmt="%.17g")
    for name, extra in (("rad.json", [data]), ("deg.json", ["--units", "q=deg", str(d / "deg.csv")])):
        assert main(["identify", "--robot", "planar2", "--cutoff", "3", "-o", str(d / name), "--quiet", *extra]) == 0
    a, b = (results.load_params(d / n) for n in ("rad.json", "deg.json"))
    np.testing.assert_allclose(np.asarray(a.theta), np.asarray(b.theta), rtol=1e-6, atol=1e-9)


def test_joint_trajectory_export():
    from jaxid.workflow.commands import joint_trajectory

    t = np.array([0.0, 0.008, 1.5])
    q = np.arange(6.0).reshape(3, 2)
    msg = json.loads(json.dumps(joint_trajectory(("a", "b"), t, q, 2 * q, 3 * q)))
    assert msg["joint_names"] == ["a", "b"] and len(msg["points"]) == 3
    assert msg["points"][1]["time_from_start"] == {"sec": 0, "nanosec": 8_000_000}
    assert msg["points"][2]["time_from_start"] == {"sec": 1, "nanosec": 500_000_000}
    assert msg["points"][2]["positions"] == [4.0, 5.0] and msg["points"][2]["accelerations"] == [12.0, 15.0]


def test_an_infeasible_excitation_is_not_written(tmp_path, capsys, monkeypatch):
    import importlib
    from types import SimpleNamespace

    opt = importlib.import_module("jaxid.excitation.optimize")  # the module, not the function

    seen = {}

    def infeasible(robot, **kwargs):
        seen.update(kwargs, model=robot)
        margin = {"self-collision": (0.01, "base_link/forearm_link", 0.02), "floor": (-0.03, "wrist_1_link", 0.02)}
        feasibility = opt.Feasibility.from_arrays(np.zeros(5), np.zeros(5), margin)
        return SimpleNamespace(feasible=False, feasibility=feasibility)

    monkeypatch.setattr(opt, "optimize", infeasible)
    out = tmp_path / "traj.csv"
    assert main(["excite", "--robot", "ur5", "--quiet", "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxid excite: error: no start meets") and "\n" not in err
    assert "floor wrist_1_link: -10 mm  VIOLATED: 30 mm short of 20 mm" in err and "forearm" not in err
    assert not out.exists()
    # What it was asked: the UR5's capsules and ranges, a home at their centres.
    np.testing.assert_allclose(seen["home"], [0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0])
    assert seen["constraints"].floor == 0.0 and len(seen["constraints"].capsules) == 8
    assert seen["objective"] == "cond" and seen["regressor_fn"] is None
    # --payload: the information on the payload's 10 parameters, each joint's rows over its torque limit,
    # and the torque limits checked with the load attached (the robot's torque plus the payload's).
    assert main(["excite", "--robot", "ur5", "--payload", "--quiet", "-o", str(out)]) == 2
    assert "--payload: give the load's --payload-mass" in capsys.readouterr().err
    assert (
        main(
            [
                "excite",
                "--robot",
                "ur5",
                "--payload",
                "--payload-mass",
                "3",
                "--payload-com",
                "0",
                "0.02",
                "0.05",
                "--quiet",
                "-o",
                str(out),
            ]
        )
        == 1
    )
    assert seen["objective"] == "information"
    from jaxid.identification.payload import payload_regressor, payload_torque
    from jaxid.simulation import payload_vector

    ur5 = jaxid.models.ur5()
    q = np.random.default_rng(0).normal(size=(3, 3, 6))
    np.testing.assert_allclose(seen["regressor_fn"](*q), payload_regressor(ur5, *q) / ur5.tau_max[:, None], rtol=1e-12)
    load = payload_torque(ur5, payload_vector(3.0, (0.0, 0.02, 0.05)), *q)
    np.testing.assert_allclose(jaxid.rnea(seen["model"], *q), jaxid.rnea(ur5, *q) + load, rtol=1e-10, atol=1e-10)


def _resting_excitation(robot, home, limits, a=None):
    """An Excitation at rest at home (a = b = 0, or the given a with b = 0: the zero-start
    series is then a sum of sines about home), with the dense-check fields filled in."""
    from jaxid.excitation.optimize import Excitation, Feasibility, model_limits

    a = np.zeros((robot.n, 3)) if a is None else np.asarray(a, dtype=float)
    one = np.ones(1)
    return Excitation(
        a=a,
        b=np.zeros_like(a),
        q0=np.asarray(home, dtype=float),
        omega_f=2 * np.pi / 2.0,
        objective="cond",
        value=1.0,
        cond=1.0,
        logdet=0.0,
        feasibility=Feasibility.from_arrays(np.zeros(5), np.zeros(5)),
        columns=np.arange(1),
        initial_cond=one,
        initial_logdet=one,
        initial_feasible=one > 0,
        final_cond=one,
        final_logdet=one,
        final_feasible=one > 0,
        best_start=0,
        time_s=0.0,
        steps=0,
        home=np.asarray(home, dtype=float),
        limits=model_limits(robot, limits),
        margin=0.05,
    )


def test_start_from_prepends_a_checked_move_to_home():
    from jaxid.excitation.constraints import Constraints
    from jaxid.model import geometry
    from jaxid.workflow import WorkflowError
    from jaxid.workflow.commands import with_approach

    robot = jaxid.models.ur5()
    limits = dict(q_min=geometry.UR5_RANGES[0], q_max=geometry.UR5_RANGES[1])
    cons = Constraints(geometry.ur5())
    home = 0.5 * (geometry.UR5_RANGES[0] + geometry.UR5_RANGES[1])
    res = _resting_excitation(robot, home, limits)
    lim = res.limits
    # Both moves below are as long (the largest step is 1.229 rad in both): one compiled check.
    start = np.array([1.2292, -1.2, 1.2, -1.5, -1.5, 0.3])
    T, (t2, q, qd, qdd) = with_approach(res, robot, start, 100.0, 1, limits, cons)
    assert T > 0 and np.all(np.diff(t2) > 0) and len(t2) == 201 + round(T * 100)
    np.testing.assert_allclose(q[0], start)
    np.testing.assert_allclose(np.r_[qd[0], qdd[0]], 0.0, atol=1e-12)
    assert np.max(np.abs(np.diff(q, axis=0))) < 0.05  # no jump where the excitation begins
    assert np.all(np.abs(qd) <= lim["qd_max"]) and np.all(np.abs(qdd) <= lim["qdd_max"])
    # From a pose with the wrist in the table, the move is refused, naming the constraint.
    with pytest.raises(
        WorkflowError, match="--start-from: the .* s move to home violates self-collision base_link/forearm"
    ):
        with_approach(res, robot, np.array([0, -0.4, 2.8, -1.57, -1.57, 0]), 100.0, 1, limits, cons)


def test_preview_draws_the_approach_and_its_jerk(tmp_path):
    """The samples the preview draws with a start pose: the approach (rest to rest, within (1 -
    margin) of the velocity, acceleration and jerk limits, its jerk the derivative of qdd)
    joined without a jump to the excitation, whose jerk is the derivative of its qdd too."""
    from jaxid.excitation.preview import preview

    pytest.importorskip("matplotlib")
    robot = jaxid.models.planar(2)
    limits = dict(
        q_min=[-2.0, -2.0],
        q_max=[2.0, 2.0],
        qd_max=[2.0, 2.0],
        qdd_max=[6.0, 6.0],
        qddd_max=[30.0, 30.0],
        tau_max=[100.0, 100.0],
    )
    home = np.array([0.3, 0.4])
    res = _resting_excitation(robot, home, limits, a=[[0.2, -0.1, -0.1], [0.1, 0.1, -0.2]])
    start, fs = np.array([-0.9, 1.2]), 2000.0
    T = res.approach_time(start, fs)
    t, q, qd, qdd, qddd = res.trajectory(fs, start_from=start, jerk=True)
    a = t < T
    assert T > 0 and a.sum() == round(T * fs) and t[a][-1] < T <= t[~a][0]
    np.testing.assert_allclose(q[0], start, atol=1e-12)
    np.testing.assert_allclose(q[~a][0], home, atol=1e-12)  # the excitation starts at home, at rest
    np.testing.assert_allclose(np.r_[qd[0], qdd[0], qd[~a][0], qdd[~a][0]], 0.0, atol=1e-12)
    use = [np.max(np.abs(x[a]) / limits[k][0]) for x, k in ((qd, "qd_max"), (qdd, "qdd_max"), (qddd, "qddd_max"))]
    assert max(use) == pytest.approx(0.95, abs=2e-3) and all(u <= 0.95 + 1e-9 for u in use)
    # Derivatives along the whole record; the jerk of a rest-to-rest move jumps at its ends (qdd
    # has a corner there), so the samples next to the junction are left out of its check.
    inner = np.ones(len(t), bool)
    inner[[0, -1]] = False
    for x, dx, ok in ((q, qd, inner), (qd, qdd, inner), (qdd, qddd, inner & (np.abs(t - T) > 1.5 / fs))):
        np.testing.assert_allclose(np.gradient(x, t, axis=0)[ok], dx[ok], atol=2e-3 * np.abs(dx).max())
    out = tmp_path / "preview.png"
    preview(robot, res, out, limits=limits, start_from=start)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_identify_and_validate_a_robot_from_its_dh_file(run, capsys):
    """planar2 given by its DH table (degrees, no inertials): the same base parameters from the
    same data as --robot planar2, and validate rebuilds the model from the params' description."""
    dh = run / "planar2.toml"
    dh.write_text(
        'name = "planar2"\nangle_unit = "deg"\ngravity = [0, -9.81, 0]\n' + "[[joint]]\ndh = [0, 0, 1, 0]\n" * 2
    )
    out = run / "dh.json"
    assert (
        main(["identify", "--dh", str(dh), str(run / "truth1.csv"), "--method", "ols", "-o", str(out), "--quiet"]) == 0
    )
    params, exact = results.load_params(out), results.load_params(run / "exact.json")
    assert params.base.names == exact.base.names and params.model["dh"] == str(dh.resolve())
    np.testing.assert_allclose(np.asarray(params.theta), np.asarray(exact.theta), rtol=1e-9, atol=1e-12)
    assert main(["validate", "--params", str(out), str(run / "truth2.csv")]) == 0
    capsys.readouterr()
    assert main(["identify", "--dh", str(run / "absent.toml"), str(run / "truth1.csv")]) == 2
    assert "--dh: no such file" in capsys.readouterr().err


def test_negative_lists_are_option_values():
    from jaxid.cli import _join_negative_lists

    assert _join_negative_lists(["payload", "--gains", "-12.5,21.6", "--home", "-0.5,1e-3", "x.csv"]) == [
        "payload",
        "--gains=-12.5,21.6",
        "--home=-0.5,1e-3",
        "x.csv",
    ]
    # A single negative number, an option after an option and a value with '=' are left to argparse.
    for argv in (["--seed", "-3"], ["--quiet", "--json"], ["--gains=-1,2"], ["-o", "-1,2"]):
        assert _join_negative_lists(argv) == argv


_BLAS_THREADS = """
import ctypes, os, sys
sys.orig_argv = [sys.executable, "-m", "jaxid", "identify"]  # as the command sees it
import jaxid
counts = []
for path in sorted({l.split()[-1] for l in open("/proc/self/maps") if "openblas" in l.lower() and "/" in l}):
    lib = ctypes.CDLL(path)
    for name, t in (("openblas_get_num_threads", ctypes.c_int), ("scipy_openblas_get_num_threads", ctypes.c_int),
                    ("openblas_get_num_threads64_", ctypes.c_int64), ("scipy_openblas_get_num_threads64_", ctypes.c_int64)):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = t
            counts.append(fn())
            break
print(" ".join(map(str, counts)))
"""


def test_the_command_is_recognised_by_its_argv():
    import jaxid

    assert jaxid._command_line(["/usr/bin/python3", "-m", "jaxid", "identify"])
    assert jaxid._command_line(["/venv/bin/python", "/venv/bin/jaxid", "demo"])
    assert not jaxid._command_line(["/venv/bin/python", "-m", "pytest", "tests"])
    assert not jaxid._command_line(["/venv/bin/python", "script.py"]) and not jaxid._command_line([])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the loaded libraries from /proc")
def test_the_command_uses_one_blas_thread_unless_told(tmp_path):
    """The jaxid command's process starts numpy's OpenBLAS with one thread (its other threads only
    busy-wait on a command's small QRs), unless OPENBLAS_NUM_THREADS says how many."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    runs = [
        subprocess.run([sys.executable, "-c", _BLAS_THREADS], env=e, capture_output=True, text=True)
        for e in (env, dict(env, OPENBLAS_NUM_THREADS="2"))
    ]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    default, told = ([int(c) for c in r.stdout.split()] for r in runs)
    if not default:
        pytest.skip("numpy is not linked against OpenBLAS here")
    assert set(default) == {1} and set(told) == {2}

"""Payload experiment design (``jaxid.identification.payload_design``): the expected std against the
Monte-Carlo spread of ``identify_payload``, its 1/sqrt(periods) scaling, the refusal of what the
joints cannot see, the record's noise RMS and smoothing loss, and the CLI lines."""

import functools
import json

import jax.numpy as jnp
import numpy as np
import pytest

import jaxid
from jaxid.excitation import fourier
from jaxid.identification import payload as P
from jaxid.identification import payload_design as D
from jaxid.model import inertia

# A 3 kg tool, 0.08 x 0.10 x 0.12 m, centre of mass (0.01, -0.02, 0.06) m from the flange.
THETA_L = np.asarray(
    inertia.from_mass_com_inertia(3.0, jnp.array([0.01, -0.02, 0.06]), inertia.box_inertia(3.0, (0.08, 0.10, 0.12)))
)
F0, FS, PER = 0.2, 50.0, 250  # Hz, Hz, samples per period
SIGMA = np.array([0.4, 0.4, 0.2, 0.05, 0.05, 0.05])  # N m


@pytest.fixture(scope="module")
def motion(ur5):
    """One period (PER samples) of a 4-harmonic Fourier excitation of every joint: t, q, qd, qdd."""
    rng = np.random.default_rng(3)
    a, b = 0.8 * rng.uniform(-1, 1, (2, 6, 4))
    traj = functools.partial(fourier, a, b, np.zeros(6), 2 * np.pi * F0, zero_start=True)
    t = np.arange(PER) / FS
    return (t, *(np.asarray(x) for x in traj(jnp.asarray(t))))


@pytest.mark.filterwarnings("ignore::UserWarning")  # noisy fits are often not bodies: theta is what is compared
def test_predicted_std_matches_the_monte_carlo_spread(ur5, motion):
    _, q, qd, qdd = motion
    design = D.design_payload(ur5, q, qd, qdd, SIGMA, nominal=THETA_L)
    assert design.rank == 10 and design.determined.all()
    clean = np.asarray(jaxid.rnea(P.attach_payload(ur5, THETA_L), q, qd, qdd))
    rng = np.random.default_rng(0)
    runs = 40
    est = np.array(
        [
            np.asarray(
                P.identify_payload(
                    ur5, None, (q, qd, qdd, clean + SIGMA * rng.normal(size=clean.shape)), cov=SIGMA**2
                ).theta
            )
            for _ in range(runs)
        ]
    )
    spread = np.sqrt(np.mean((est - THETA_L) ** 2, axis=0))
    ratio = spread / design.std
    # 40 runs: a std estimated to about 1 / sqrt(2 * 40) = 11 %; pooled over the ten parameters to ~4 %.
    assert np.all((ratio > 0.7) & (ratio < 1.3)), ratio
    assert abs(np.sqrt(np.mean(ratio**2)) - 1) < 0.2, ratio


def test_std_scales_as_one_over_root_periods(ur5, motion):
    _, q, qd, qdd = motion
    one = D.design_payload(ur5, q, qd, qdd, SIGMA, nominal=THETA_L)
    four = D.design_payload(ur5, q, qd, qdd, SIGMA, periods=4, nominal=THETA_L)
    np.testing.assert_allclose(four.std, one.std / 2, rtol=1e-12)
    np.testing.assert_allclose(one.at(4).std, four.std, rtol=1e-12)
    np.testing.assert_allclose(four.inertia_pct, one.inertia_pct / 2, rtol=1e-12)
    # Four times the periods of what one period needs meets a target of half the one-period std.
    need = one.periods_needed(inertia=np.max(one.inertia_pct) / 200)
    assert need["inertia"] == 4
    # Repeating the samples is the same information as more periods.
    tiled = D.design_payload(ur5, *(np.tile(x, (4, 1)) for x in (q, qd, qdd)), SIGMA, nominal=THETA_L)
    np.testing.assert_allclose(tiled.std, four.std, rtol=1e-8)


def test_joints_that_cannot_see_a_parameter_are_not_promised(ur5, motion):
    # Only the base joint moves, about the vertical: its torque sees the payload's inertia about
    # that axis and nothing else (no gravity torque), however many periods are recorded.
    q, qd, qdd = (x * (np.arange(6) == 0) for x in motion[1:])
    d = D.design_payload(ur5, q, qd, qdd, SIGMA, joints=(0,), periods=50, nominal=THETA_L)
    assert d.rank < 10
    missing = ~d.determined
    assert missing.any()
    assert np.all(np.isnan(d.std[missing])) and np.all(np.isinf(d.std_fisher[missing]))
    for i in np.flatnonzero(missing):
        assert d.reasons[i].startswith("not determined by joints 1 with this trajectory")
    assert d.seen and all(r == "" for r, ok in zip(d.reasons, d.determined) if ok)
    assert d.periods_needed()["inertia"] is None  # no number of periods is enough
    doc = d.to_json()
    assert all(doc["std"][i] is None for i in np.flatnonzero(missing))
    json.dumps(doc, allow_nan=False)
    # Seen but beyond the bound: not promised either, with the periods that would do.
    tight = D.design_payload(ur5, *motion[1:], SIGMA, nominal=THETA_L, bound=1e-6)
    assert not tight.determined.any() and np.all(np.isnan(tight.std))
    assert "not determined at this noise" in tight.reasons[4]
    assert tight.periods_needed()["inertia"] >= 1


def test_bad_input_is_a_value_error(ur5, motion):
    _, q, qd, qdd = motion
    with pytest.raises(ValueError, match="noise must be finite and > 0"):
        D.design_payload(ur5, q, qd, qdd, 0.0)
    with pytest.raises(ValueError, match="noise must be a scalar"):
        D.design_payload(ur5, q, qd, qdd, [0.1, 0.2])
    with pytest.raises(ValueError, match="periods must be an integer"):
        D.design_payload(ur5, q, qd, qdd, 0.1, periods=0)
    with pytest.raises(ValueError, match=r"q must have shape \(N, 6\)"):
        D.design_payload(ur5, q[:, :3], qd, qdd, 0.1)
    with pytest.raises(ValueError, match="nominal must be"):
        D.design_payload(ur5, q, qd, qdd, 0.1, nominal=np.zeros(10))
    with pytest.raises(ValueError, match="joints must be distinct"):
        D.design_payload(ur5, q, qd, qdd, 0.1, joints=(0, 0))
    with pytest.raises(ValueError, match="target inertia"):
        D.design_payload(ur5, q, qd, qdd, 0.1, nominal=THETA_L).periods_needed(inertia=0)


def test_noise_rms_and_smoothing_loss(motion):
    rng = np.random.default_rng(1)
    t = np.arange(4 * PER) / FS
    clean = np.column_stack([np.sin(2 * np.pi * F0 * t), 3 * np.cos(2 * np.pi * 2 * F0 * t)])
    noisy = clean + np.array([0.02, 0.05]) * rng.normal(size=clean.shape)
    np.testing.assert_allclose(D.torque_noise_rms(noisy), [0.02, 0.05], rtol=0.08)
    np.testing.assert_allclose(D.torque_noise_rms(noisy, period=PER), [0.02, 0.05], rtol=0.08)
    # A signal sampled far above its bandwidth loses nothing; white noise loses most of its energy.
    assert np.all(D.smoothing_loss(clean, 5, period=PER) < 1e-6)
    assert np.all(D.smoothing_loss(clean, 0) == 0)
    white = rng.normal(size=(2000, 1))
    assert D.smoothing_loss(white, 5)[0] > 0.5
    assert D.smoothing_noise_gain(0) == 1.0
    g = D.smoothing_noise_gain(5)
    assert 0 < g < 1
    np.testing.assert_allclose(np.std(np.asarray(jaxid.signals.five_point_cubic(white, 5))[20:-20]), g, rtol=0.1)
    with pytest.raises(ValueError, match="whole periods"):
        D.torque_noise_rms(noisy[:-1], period=PER)


def test_cli_prints_the_design_and_the_noise(ur5, motion, tmp_path, capsys):
    from jaxid import data as jdata
    from jaxid.cli import main

    t1, q1, qd1, qdd1 = motion
    periods = 3
    t = np.arange(periods * PER) / FS
    q, qd, qdd = (np.tile(x, (periods, 1)) for x in (q1, qd1, qdd1))
    rng = np.random.default_rng(2)
    files = {}
    for name, robot in (("loaded", P.attach_payload(ur5, THETA_L)), ("unloaded", ur5)):
        tau = np.asarray(jaxid.rnea(robot, q, qd, qdd)) + SIGMA * rng.normal(size=q.shape)
        files[name] = str(tmp_path / f"{name}.csv")
        ds = jdata.Dataset(jnp.asarray(t), jnp.asarray(q), jnp.asarray(tau), jnp.asarray(qd), jnp.asarray(qdd))
        jdata.write(ds, files[name])
    out = tmp_path / "payload.json"
    argv = ["payload", "--robot", "ur5", files["loaded"], "--unloaded", files["unloaded"], "--no-align"]
    argv += ["--period", str(PER), "--average", "--smooth", "2", "-o", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "expected" in text and "noise RMS" in text and "residual RMS" in text
    assert "information loss" in text and "(limit 10 %)" in text
    doc = json.loads(out.read_text())
    # the difference of two runs: sqrt(2) times one run's noise
    np.testing.assert_allclose(doc["noise_rms"], np.sqrt(2) * SIGMA, rtol=0.15)
    assert doc["noise_method"].startswith("spread across the 3 periods")
    assert doc["smoothing_loss"]["limit"] == 0.1 and max(doc["smoothing_loss"]["tau"]) < 0.1
    assert doc["design"]["rank"] == 10 and all(s is not None for s in doc["design"]["std"])

    # jaxid excite --payload prints the expected stds of its trajectory before the experiment.
    traj = tmp_path / "ptraj.csv"
    argv = ["excite", "--robot", "ur5", "--payload", "--payload-mass", "3", "--payload-com", "0.01", "-0.02", "0.06"]
    argv += ["--payload-box", "0.08", "0.10", "0.12", "--starts", "1", "--steps", "0", "--fs", "20", "--quiet"]
    argv += ["--periods", "2", "--payload-joints", "1,2,3", "--torque-noise", "0.4,0.4,0.2,0.05,0.05,0.05"]
    assert main([*argv, "-o", str(traj)]) == 0
    text = capsys.readouterr().out
    assert "expected payload std after 2 period(s), joints 1,2,3" in text
    assert "periods needed" in text and "torque noise: --torque-noise" in text
    assert main(["excite", "--robot", "ur5", "--torque-noise", "0.1", "-o", str(traj)]) == 2
    assert "add --payload" in capsys.readouterr().err
    # The file it wrote (2 periods) is a design input too: the same figures as the excite's JSON says.
    from jaxid.workflow.commands.payload import design_from_trajectory

    d = design_from_trajectory(ur5, str(traj), SIGMA, joints=(0, 1, 2), nominal=THETA_L)
    assert d.rank == 10 and d.periods == 1 and np.all(np.isfinite(d.std_fisher))
    np.testing.assert_allclose(d.at(2).std_fisher, d.std_fisher / np.sqrt(2), rtol=1e-12)

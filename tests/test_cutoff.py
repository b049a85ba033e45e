"""The derivative filter's cutoff (jaxid.workflow.preprocess): per joint, from the band that holds
the position power, robust to resonance lines, coloured and quantised noise, across sample rates;
ambiguity warned; validate reusing params.json's preprocessing; true descriptions of logged
signals."""

import warnings

import jax
import numpy as np
import pytest

from jaxid import data, simulation, workflow
from jaxid.workflow import commands

F = np.array([0.1, 0.2, 0.3, 0.4, 0.5])  # an excitation band: 5 harmonics of 0.1 Hz


def _band(t, n=3, seed=0, freqs=F):
    """Fourier positions (N, n) rad over ``freqs`` Hz, velocity amplitude equal per harmonic (the
    position amplitude falls as 1/k), 0.5 rad rms per joint."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(len(freqs), n)) / freqs[:, None]
    phase = rng.uniform(0, 2 * np.pi, size=(len(freqs), n))
    q = np.stack([np.sin(2 * np.pi * np.outer(t, freqs) + phase[:, j]) @ a[:, j] for j in range(n)], axis=1)
    return 0.5 * q / q.std(axis=0)


@pytest.mark.parametrize("fs", [100.0, 1000.0, 5000.0])
def test_a_resonance_line_does_not_move_the_cutoffs(fs):
    t = np.arange(0, 20.0, 1 / fs)
    rng = np.random.default_rng(1)
    q = _band(t) + 1e-4 * rng.normal(size=(len(t), 3))
    clean = workflow.choose_cutoffs(q, fs)
    line = q.copy()
    line[:, 1] += 5e-4 * np.sin(2 * np.pi * 0.37 * fs / 2 * t)  # 50 x the noise floor, 5e-7 of the power
    hit = workflow.choose_cutoffs(line, fs)
    # No joint's cutoff moves by more than 1.5x, the resonant joint's included; all pass the band.
    ratio = np.asarray(hit.cutoffs) / np.asarray(clean.cutoffs)
    assert np.all((ratio < 1.5) & (ratio > 1 / 1.5)), (clean.cutoffs, hit.cutoffs)
    assert min(hit.cutoffs) >= 2 * F.max() and max(hit.cutoffs) < fs / 4 / workflow.preprocess.AMBIGUOUS_NYQUIST
    assert any("q2" in n and "resonance" in n for n in hit.notes), hit.notes
    # The line is read as motion once it holds a real share of the position power.
    strong = q.copy()
    strong[:, 1] += 0.05 * np.sin(2 * np.pi * 0.37 * fs / 2 * t)
    assert workflow.choose_cutoffs(strong, fs).edges[1] > 0.3 * fs / 2


def test_a_joint_with_its_own_band_gets_its_own_cutoff():
    fs = 1000.0
    t = np.arange(0, 20.0, 1 / fs)
    q = _band(t) + 1e-4 * np.random.default_rng(2).normal(size=(len(t), 3))
    q[:, 2] = _band(t, n=1, seed=3, freqs=20 * F)[:, 0]  # a joint moving at 2-10 Hz
    c = workflow.choose_cutoffs(q, fs)
    assert c.cutoffs[0] < 3 and c.cutoffs[1] < 3 and 30 <= c.cutoffs[2] < 60, c.cutoffs
    assert any("band edges differ" in w and "--cutoff" in w for w in c.warnings), c.warnings


@pytest.mark.parametrize("noise", ["random walk", "quantised"])
def test_coloured_and_quantised_noise_are_not_read_as_signal(noise):
    fs = 1000.0
    t = np.arange(0, 20.0, 1 / fs)
    rng = np.random.default_rng(4)
    q = _band(t)
    if noise == "random walk":
        walk = np.cumsum(rng.normal(size=q.shape), axis=0)
        q = q + 1e-4 * walk / walk.std(axis=0) + 1e-5 * rng.normal(size=q.shape)
    else:
        step = 2 * np.pi / 2**17
        q = np.round(q / step) * step
    c = workflow.choose_cutoffs(q, fs)
    assert all(2 * F.max() <= x < 10 * F.max() for x in c.cutoffs), c.cutoffs
    assert not c.warnings


def test_the_cutoff_does_not_depend_on_the_rate():
    cuts = []
    for fs in (100.0, 1000.0):
        t = np.arange(0, 20.0, 1 / fs)
        q = _band(t) + 1e-4 * np.random.default_rng(5).normal(size=(len(t), 3))
        cuts.append(np.asarray(workflow.choose_cutoffs(q, fs).cutoffs))
    assert np.all(np.abs(np.log(cuts[1] / cuts[0])) < np.log(1.5)), cuts


def test_an_ambiguous_cutoff_is_warned_with_the_flag():
    fs = 100.0
    t = np.arange(0, 20.0, 1 / fs)
    q = _band(t, seed=6, freqs=16 * F)  # a band up to 8 Hz, noise-free: 3 x 8 Hz is near fs/4
    ds = data.from_arrays(t, q, np.zeros_like(q))
    with pytest.warns(UserWarning, match=r"within 1.5x of fs/4.*--cutoff HZ"):
        p = workflow.prepare(ds)
    assert any("--cutoff HZ" in n for n in p.choices[0]["notes"])
    assert "--cutoff HZ" in p.describe()[0]


def test_the_description_says_what_was_logged():
    fs = 100.0
    t = np.arange(0, 20.0, 1 / fs)
    q = _band(t, n=2)
    qd, qdd = np.gradient(q, 1 / fs, axis=0), np.zeros_like(q) + 0.25
    tau = np.zeros_like(q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = {
            "none": workflow.prepare(data.from_arrays(t, q, tau)),
            "qd": workflow.prepare(data.from_arrays(t, q, tau, qd)),
            "qdd": workflow.prepare(data.from_arrays(t, q, tau, qdd=qdd)),
            "both": workflow.prepare(data.from_arrays(t, q, tau, qd, qdd)),
        }
    line = {k: p.describe()[0] for k, p in runs.items()}
    assert "q filtered by butterworth" in line["none"] and "qd, qdd from the filtered q" in line["none"]
    assert "qd as logged, qdd from the filtered q" in line["qd"]
    assert "qdd as logged, qd from the filtered q" in line["qdd"]
    assert "q, qd, qdd as logged" in line["both"]
    # ... and it is what was done: the logged signal is kept sample for sample (trimmed), the other computed.
    start, stop, _ = runs["qd"].choices[0]["index"]
    assert np.array_equal(np.asarray(runs["qd"].datasets[0].qd), qd[start:stop])
    assert np.allclose(np.asarray(runs["qdd"].datasets[0].qdd), 0.25)
    assert runs["qd"].choices[0]["logged"] == ["qd"] and runs["none"].choices[0]["logged"] == []


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    """A planar2 run and a held-out run as CSV files, identified with the default cutoff."""
    work = tmp_path_factory.mktemp("cutoff")
    robot, _ = workflow.model(builtin="planar2", joint_terms=("fv", "fc", "offset"))
    fs = 200.0
    t = np.arange(0, 15.0, 1 / fs)
    files = []
    for k in range(2):
        q = _band(t, n=2, seed=10 + k) * 0.6
        qd = np.gradient(q, 1 / fs, axis=0)
        qdd = np.gradient(qd, 1 / fs, axis=0)
        m = simulation.simulate(
            robot.with_joint_terms(()), t, q, qd, qdd, jax.random.PRNGKey(0), noise_key=jax.random.PRNGKey(k + 1)
        )
        path = work / f"run{k}.csv"
        data.write(m.data, path)
        files.append(str(path))
    model = commands.ModelSpec(robot="planar2")
    params = str(work / "params.json")
    out = commands.run_identify(commands.IdentifyRequest(data=(files[0],), model=model, output=params))
    return files, params, out


def test_validate_reuses_the_stored_cutoff(identified):
    files, params, out = identified
    stored = out.params.preprocessing[0]
    assert stored.cutoff_from == "spectrum" and stored.cutoffs_hz and stored.order == 4
    lines = []
    res = commands.run_validate(commands.ValidateRequest(data=(files[1],), params=params), log=lines.append)
    c = res.prepared.choices[0]
    # Each joint as identified, or raised to what the held-out run's own band needs (noted).
    assert c["cutoff_from"] == "params" and len(c["cutoffs_hz"]) == len(stored.cutoffs_hz)
    raised = [j for j, (a, b) in enumerate(zip(c["cutoffs_hz"], stored.cutoffs_hz)) if a != b]
    assert all(a > b for a, b in zip(c["cutoffs_hz"], stored.cutoffs_hz) if a != b)
    assert bool(raised) == any("cutoff raised above params.json's" in n for n in c["notes"]), c["notes"]
    assert "from params.json" in res.prepared.describe()[0]
    assert any("from params.json" in line for line in lines), lines
    # A cutoff given on the command line replaces it, and says so.
    lines = []
    spec = commands.DataSpec(cutoff=7.0)
    res = commands.run_validate(
        commands.ValidateRequest(data=(files[1],), params=params, prepare=spec), log=lines.append
    )
    assert res.prepared.choices[0]["cutoffs_hz"] == [7.0, 7.0] and "(given)" in res.prepared.describe()[0]
    assert any("cutoff 7 Hz given" in line for line in lines), lines


def test_policy_from_preprocessing_repeats_the_identification():
    runs = [
        dict(derivatives="savgol", cutoff_hz=6.0, cutoffs_hz=[4.0, 6.0], order=4, trim=30, trim_from="policy"),
        dict(derivatives="savgol", cutoff_hz=8.0, cutoffs_hz=[6.0, 8.0], order=4, trim=30, trim_from="policy"),
    ]
    p = workflow.policy_from_preprocessing(runs, workflow.Policy(step=2))
    assert (p.derivatives, p.cutoff, p.trim, p.step, p.settings_from) == ("savgol", (5.0, 7.0), 30, 2, "params.json")
    assert workflow.policy_from_preprocessing([dict(derivatives="logged", cutoff_hz=None)]) is None


def test_a_stored_cutoff_is_raised_where_the_held_out_run_moves_faster():
    """Prepared as identified (a params.json's policy), a held-out run keeps the stored cutoff of
    each joint unless its own band needs more: a run moving at 1-5 Hz is not filtered at the
    0.6 Hz chosen for a 0.1-0.5 Hz run (its accelerations would be cut by the filter)."""
    fs = 200.0
    t = np.arange(0, 20.0, 1 / fs)
    q = _band(t, n=2, freqs=10 * F) + 1e-5 * np.random.default_rng(4).normal(size=(len(t), 2))
    ds = data.from_arrays(t, q, np.zeros_like(q))
    stored = workflow.Policy(cutoff=(0.6, 40.0), settings_from="params.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = workflow.prepare([ds], None, stored).choices[0]
    own = workflow.choose_cutoffs(q, fs).cutoffs
    assert c["cutoffs_hz"][0] == pytest.approx(own[0]) and own[0] > 3 * 5.0 * 0.9, (c, own)
    assert c["cutoffs_hz"][1] == 40.0  # above the run's need: kept as identified
    assert any("q1 0.6 -> " in n for n in c["notes"]), c["notes"]


def test_a_short_run_keeps_most_of_its_samples():
    fs = 100.0
    t = np.arange(0, 10.0, 1 / fs)  # one period of the 0.1 Hz base: 3 x 0.5 Hz would trim 19 % per end
    q = _band(t) + 1e-4 * np.random.default_rng(7).normal(size=(len(t), 3))
    c = workflow.prepare(data.from_arrays(t, q, np.zeros_like(q))).choices[0]
    assert c["trim"] <= workflow.preprocess.TRIM_SHARE * len(t)
    # ... raised no further than that takes, and noted.
    assert workflow.edge_trim(fs, min(c["cutoffs_hz"]) / 1.05) > workflow.preprocess.TRIM_SHARE * len(t)
    assert any("raised" in n for n in c["notes"]), c
    # A long run of the same band is not raised: its trim is a small share of it.
    t = np.arange(0, 60.0, 1 / fs)
    q = _band(t) + 1e-4 * np.random.default_rng(7).normal(size=(len(t), 3))
    long = workflow.prepare(data.from_arrays(t, q, np.zeros_like(q))).choices[0]
    assert max(long["cutoffs_hz"]) < 2.5 and not any("raised" in n for n in long["notes"]), long

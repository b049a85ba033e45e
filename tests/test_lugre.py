"""LuGre friction: ODE integration against closed forms and scipy, gradients, identification."""

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxid  # noqa: F401  (float64)
from jaxid.excitation.scurve import friction_s_curve, s_curve
from jaxid.friction import lugre as L
from jaxid.identification import lugre as I

DT = 1e-3
P = L.reference_parameters()
# A second axis, different in every parameter, for the multi-joint identification.
P2 = L.LuGre(5e4, 200.0, 0.8, 0.4, 1.5e-3, 0.02, 0.3, 0.05)
N_SHORT = 225  # one length for the short records: the unbatched simulation compiles once for them


def _short(levels, holds):
    """Velocity of an S-curve at 10 m/s^2, 200 m/s^3, then at rest up to N_SHORT samples, m/s."""
    v = np.asarray(s_curve(levels, holds, 10.0, 200.0)[2])
    return np.pad(v, (0, N_SHORT - v.shape[0]))


@pytest.fixture(scope="module")
def experiment():
    """Noiseless two-axis friction data on the identification S-curve."""
    t, x, v, a = (np.asarray(u) for u in friction_s_curve())
    # 16 sub-steps for the data, 8 in the identification: not the same discretisation.
    F = np.stack([np.asarray(L.simulate(p, v, DT, substeps=16)) for p in (P, P2)], 1)
    return t, np.stack([x, x], 1), np.stack([v, v], 1), F


@pytest.fixture(scope="module")
def fit(experiment):
    t, x, v, F = experiment
    return I.identify_joints(x, v, F, DT, jax.random.key(0))


def test_steady_state_is_the_stribeck_curve():
    # Constant velocity from z = 0: the bristle settles to z = sgn(v) g(v) / sigma0 and
    # F to the Stribeck curve. The exponential update is exact for constant v, even
    # with 10 ms steps.
    speeds = np.array([-1.0, -3e-3, -1e-3, -2e-4, 2e-4, 5e-4, 1e-3, 2e-3, 0.05, 1.5])
    v = jnp.asarray(np.repeat(speeds[:, None], 600, axis=1))
    F = jax.vmap(lambda u: L.simulate(P, u, 1e-2, substeps=2, z0=0.0))(v)
    assert np.allclose(F[:, -1], L.stribeck(P, jnp.asarray(speeds)), rtol=0, atol=1e-12)
    expected = (1.0 + 0.5 * np.exp(-((speeds / 1e-3) ** 2)) + 0.1 * speeds**2) * np.sign(speeds) + 0.4 * speeds
    assert np.allclose(L.stribeck(P, jnp.asarray(speeds)), expected, rtol=1e-14)


def test_integration_matches_radau():
    # Creep reversal at 1e-5 m/s (presliding), a Stribeck plateau and a 1 m/s^2 reversal.
    v = _short([1e-5, -1e-5, 2e-3, -0.2, 0.0], [0.03, 0.03, 0.02, 0.01, 0.0])
    F_ref, z_ref = L.simulate_reference(P, v, DT)  # Radau, rtol 1e-10, max step 1e-4 s
    F, z = L.simulate(P, v, DT, return_state=True)
    assert np.max(np.abs(np.asarray(F) - F_ref)) < 1e-5
    assert np.max(np.abs(np.asarray(z) - z_ref)) < 1e-5 / P.sigma0


def test_gradients_match_finite_differences():
    t, x, v, a = s_curve([1e-5, -2e-3, 0.05], [0.02, 0.02, 0.01], 10.0, 200.0)

    def force(log_p):
        return L.simulate(L.LuGre.from_vector(jnp.exp(log_p)), v, DT)

    check_grads(jax.jit(force), (jnp.log(P.vector()),), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5, eps=1e-5)


def test_vmap_over_parameter_sets_and_joints():
    v = _short([1e-4, -0.1], [0.02, 0.02])  # then a stop from 0.1 m/s in one sample
    both = L.LuGre.from_vector(jnp.stack([P.vector(), P2.vector()]))
    one_by_one = np.stack([np.asarray(L.simulate(p, v, DT)) for p in (P, P2)])
    sets = jax.vmap(L.simulate, in_axes=(0, None, None))(both, v, DT)
    joints = jax.vmap(L.simulate, in_axes=(0, 1, None), out_axes=1)(both, jnp.stack([v, v], 1), DT)
    assert np.allclose(sets, one_by_one, rtol=0, atol=1e-12)
    assert np.allclose(joints.T, one_by_one, rtol=0, atol=1e-12)


def test_identification_steps_on_noiseless_data(experiment):
    t, x, v, F = experiment
    steady, shape = I.shape_factors(x[:, 0], v[:, 0], F[:, 0])
    assert np.allclose(steady, [P.alpha0, P.alpha2, P.alpha3], rtol=1e-6)  # exact where |v| > 3 deg/s
    assert shape[0] == pytest.approx(float(P.alpha1), rel=0.1)  # Stribeck amplitude ~ alpha1
    assert shape[1] == pytest.approx(float(P.v0), rel=0.1)  # Stribeck velocity ~ v0
    assert shape[3] == pytest.approx(float(P.sigma0), rel=0.3)  # presliding stiffness ~ sigma0


def test_pso_and_golden_section_find_minima():
    best, val = I.pso(
        lambda u: jnp.sum((u - 0.3) ** 2, axis=1),
        jnp.zeros(3),
        jnp.ones(3),
        jax.random.key(1),
        n_particles=20,
        n_iter=60,
    )
    assert np.allclose(best, 0.3, atol=1e-3) and val < 1e-5
    assert I.golden_section(lambda u: (u - 1.7) ** 2, -3.0, 5.0, 60) == pytest.approx(1.7, abs=1e-9)


def test_exact_recovery_from_noiseless_data(fit):
    # Both axes in one vmapped call; data and model differ only in the sub-steps.
    truth = np.stack([P.vector(), P2.vector()])
    err = np.abs(np.asarray(fit.params.vector()) / truth - 1)
    assert np.all(err < 1e-3), err


def test_cli_identifies_and_validates(experiment, fit, tmp_path, capsys):
    from jaxid.cli import main

    t, x, v, F = experiment
    path = tmp_path / "friction.csv"
    cols = np.column_stack([t, x, v, F])
    np.savetxt(path, cols, delimiter=",", header="t,q1,q2,qd1,qd2,F1,F2", comments="", fmt="%.17g")
    tv, xv, vv, av = (np.asarray(u) for u in friction_s_curve("validation"))
    Fv = np.stack([np.asarray(L.simulate(p, vv, DT)) for p in (P, P2)], 1)
    vpath = tmp_path / "validation.csv"
    np.savetxt(
        vpath,
        np.column_stack([tv, xv, xv, vv, vv, Fv]),
        delimiter=",",
        header="t,q1,q2,qd1,qd2,F1,F2",
        comments="",
        fmt="%.17g",
    )
    out = tmp_path / "lugre.json"
    assert main(["lugre", str(path), "--validation", str(vpath), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [a["axis"] for a in doc["axes"]] == ["q1", "q2"]
    for axis, p in zip(doc["axes"], (P, P2)):
        assert axis["params"]["sigma0"] == pytest.approx(float(p.sigma0), rel=1e-3)
        assert axis["lugre"]["wape_pct"] < 0.1 < axis["coulomb_viscous"]["wape_pct"]
        # Noiseless data: the residual is integration error only, every parameter determined.
        assert axis["converged"] and axis["warnings"] == [] and axis["at_bound"] == []
        assert axis["physically_consistent"] and axis["physics_problems"] == []
        assert all(0 <= axis["rel_std"][n] < 1e-3 for n in L.NAMES)
        assert np.allclose(np.diag(axis["correlation"]), 1)
    printed = capsys.readouterr()
    assert "WAPE" in printed.out and "rel std" in printed.out and "warning" not in printed.err
    assert printed.out.count("converged, physically consistent") == 2

    bad = cols.copy()
    bad[10, 5] = np.nan
    np.savetxt(path, bad, delimiter=",", header="t,q1,q2,qd1,qd2,F1,F2", comments="", fmt="%.17g")
    assert main(["lugre", str(path)]) == 2
    assert "F1" in capsys.readouterr().err


def test_unphysical_estimate_is_named(fit):
    """A fit whose viscous friction came out negative says so by name, and the model still simulates."""
    import jax

    one = jax.tree_util.tree_map(lambda a: a[0], fit)
    bad = eqx.tree_at(lambda f: f.params.alpha2, one, -abs(one.params.alpha2))
    assert one.physical_problems() == []
    problems = bad.physical_problems()
    assert len(problems) == 1 and problems[0].startswith("negative viscous friction alpha2")
    assert any(w.startswith("q1: NOT physically consistent: negative viscous") for w in bad.warnings(axis="q1"))


def test_bad_input_raises():
    v = jnp.linspace(-0.1, 0.1, N_SHORT)
    with pytest.raises(ValueError, match="sigma0"):
        L.simulate(L.LuGre(-1e5, 316.0, 1.0, 0.5, 1e-3, 1e-2, 0.4, 0.1), v, DT)
    with pytest.raises(ValueError, match="v0"):
        L.simulate(L.LuGre(1e5, 316.0, 1.0, 0.5, 0.0, 1e-2, 0.4, 0.1), v, DT)
    with pytest.raises(ValueError, match="NaN"):
        L.simulate(P, v.at[7].set(jnp.nan), DT)
    x = np.cumsum(np.asarray(v)) * DT
    F = np.asarray(L.simulate(P, v, DT))
    with pytest.raises(ValueError, match="NaN"):
        I.identify(x, v, np.where(np.arange(N_SHORT) == 50, np.nan, F), DT)
    with pytest.raises(ValueError, match="same shape"):
        I.identify(x, v[:-1], F, DT)
    with pytest.raises(ValueError, match="method"):
        I.identify(x, v, F, DT, method="magic")
    with pytest.raises(ValueError, match="threshold must be a finite velocity"):
        I.identify(x, v, F, DT, threshold=0.0)


SIGMA_F = 2e-3  # force noise of the uncertainty tests, N (0.2 % of Fc)


def _refits(experiment, seeds):
    """Levenberg-Marquardt from the truth on noise seeds ``seeds`` of axis 0, and the
    uncertainty each fit reports; one more entry: the first seed's fit with sigma1 moved 1 %."""
    t, x, v, F = experiment
    v = jnp.asarray(v[:, 0])
    Fn = jnp.asarray(F[:, 0] + SIGMA_F * np.stack([np.random.default_rng(i).standard_normal(len(t)) for i in seeds]))
    steps = L.integration_steps(v, 8, P.v0 / 3)
    est, ok = jax.vmap(lambda f: I.refine(P, v, f, DT, steps=steps))(Fn)
    est = jnp.concatenate([est.vector(), est.vector()[:1].at[0, 1].multiply(1.01)])
    Fn = jnp.concatenate([Fn, Fn[:1]])
    out = jax.vmap(lambda p, f: I.uncertainty(L.LuGre.from_vector(p), v, f, DT, steps=steps))(est, Fn)
    return (np.asarray(est), np.asarray(ok), *(np.asarray(a) for a in out))


@pytest.fixture(scope="module")
def noisy_refits(experiment):
    """``_refits`` of noise seed 0 (and its fit with sigma1 moved)."""
    return _refits(experiment, [0])


@pytest.mark.slow  # a noise-seed study: five refits
def test_reported_std_matches_the_spread_over_noise_seeds(experiment):
    est, ok, std, corr, s, to_optimum = (a[:5] for a in _refits(experiment, range(5)))
    assert ok.all() and np.all(to_optimum < 0.05)  # at the least-squares optimum
    assert np.allclose(s, SIGMA_F, rtol=0.05)  # the residual estimates the force noise
    err = est - np.asarray(P.vector())
    rms = np.sqrt(np.mean(err**2, axis=0))  # 5 seeds: a chi(5) spread, ~0.4..1.6 at 95 %
    ratio = rms / np.median(std, axis=0)
    assert np.all((ratio > 1 / 3) & (ratio < 3)), ratio
    assert 1 / 2 < np.mean((err / std) ** 2) < 2  # 40 normalised errors, one per parameter and seed
    assert np.allclose(np.diagonal(corr, axis1=1, axis2=2), 1) and np.all(np.abs(corr) <= 1 + 1e-9)


def test_a_record_without_fast_reversals_flags_vd(experiment, noisy_refits):
    # Reversals at 0.02 m/s^2: the bristles settle at |v| ~ 1e-4 m/s << vd, where
    # sigma1(v) = sigma1 exp(-(v/vd)^2) does not depend on vd. The identification S-curve
    # (reversals at 10 m/s^2) determines every parameter to better than 1 %.
    v = s_curve([1e-5, -1e-5, 5e-3, -5e-3, 0.06, 0.0], [0.1] * 5 + [0.0], 0.02, 0.5)[2]
    F = L.simulate(P, v, DT) + SIGMA_F * np.random.default_rng(0).standard_normal(v.shape)
    std, corr, s, _ = I.uncertainty(P, v, F, DT)
    slow = I.Fit(P, s**2, jnp.zeros(6), 0, True, I.at_bound(P.vector()), std, corr, s, jnp.zeros(8))
    assert slow.rel_std()[L.NAMES.index("vd")] > 0.05
    (warning,) = slow.warnings(axis="q1")
    assert warning.startswith("q1: poorly determined") and "vd (" in warning and "sigma0" not in warning
    est, std, corr, s, to_optimum = (a[[0, 1]] for i, a in enumerate(noisy_refits) if i != 1)
    good, moved = (
        I.Fit(
            L.LuGre.from_vector(est[i]),
            s[i] ** 2,
            jnp.zeros(6),
            0,
            True,
            I.at_bound(est[i]),
            std[i],
            corr[i],
            s[i],
            to_optimum[i],
        )
        for i in (0, 1)
    )
    assert np.all(good.rel_std() < 0.01) and good.warnings() == []
    # sigma1 1 % (~20 std) off the optimum: the Gauss-Newton step names it.
    (short,) = moved.warnings()
    assert "short of the least-squares optimum" in short and "sigma1 (" in short
    # The last stage of "shape" fits sigma1 and vd to the force with the other six held: here
    # those six are at the record's least-squares optimum, so the two return to it too.
    t, x, v, F = experiment
    v, Fn = jnp.asarray(v[:, 0]), jnp.asarray(F[:, 0] + SIGMA_F * np.random.default_rng(0).standard_normal(len(t)))
    back = np.asarray(I.fit_damping(moved.params, v, Fn, DT, steps=L.integration_steps(v, 8, P.v0 / 3)).vector())
    damping = [L.NAMES.index("sigma1"), L.NAMES.index("vd")]
    assert np.all(np.abs(back - est[0])[damping] < 0.05 * std[0][damping]), (back - est[0]) / std[0]
    assert np.array_equal(np.delete(back, damping), np.delete(est[1], damping))
    stuck = eqx.tree_at(
        lambda f: (f.converged, f.at_bound), good, (jnp.asarray(False), jnp.arange(8) == L.NAMES.index("v0"))
    )
    bound, unconverged = stuck.warnings()
    assert "search box: v0;" in bound and "did not converge" in unconverged


def test_published_shape_iteration_recovers_perturbed_parameters(experiment):
    # The article's additive law, Stribeck stage then hysteresis stage, from 20 % off in
    # alpha1, v0, sigma0, sigma1 (the other four at the truth), noiseless data.
    t, x, v, F = (a if a.ndim == 1 else a[:, 0] for a in experiment)
    steady, measured = I.shape_factors(x, v, F)
    start = eqx.tree_at(
        lambda q: (q.sigma0, q.sigma1, q.alpha1, q.v0), P, (1.2 * P.sigma0, 0.8 * P.sigma1, 1.2 * P.alpha1, 0.8 * P.v0)
    )
    q, sweeps, converged = I.shape_iteration_article(start, x, v, F, DT, measured)
    assert bool(converged) and 2 < int(sweeps) < 60
    assert np.all(np.abs(np.asarray(q.vector()) / np.asarray(P.vector()) - 1) < 0.01)


def test_arm_with_lugre_joints_integrates_each_bristle_state():
    # A two-joint arm, LuGre per joint (rad, N m): the measured torque minus the rigid-body
    # torque is each joint's friction simulated along the whole record (the article's
    # F = tau - tau_dyn), and it is not a function of the velocity alone.
    from jaxid import models, simulation
    from jaxid.dynamics.terms import rnea

    t = np.arange(1000) * DT
    w = 2 * np.pi * np.array([1.0, 1.5])
    amp = np.array([0.05, 0.02])
    q, qd, qdd = -amp / w * np.cos(np.outer(t, w)), amp * np.sin(np.outer(t, w)), amp * w * np.cos(np.outer(t, w))
    both = L.LuGre.from_vector(jnp.stack([P.vector(), P2.vector()]))
    robot = models.planar(2)
    m = simulation.measure(robot, t, q, qd, qdd, jax.random.key(0), sigma_q=0.0, tau_sigma=0.0, lugre=both)
    F = np.asarray(m.tau) - np.asarray(rnea(robot, q, qd, qdd))
    per_joint = np.stack([np.asarray(L.simulate(p, qd[:, j], DT)) for j, p in enumerate((P, P2))], 1)
    assert np.allclose(F, per_joint, rtol=0, atol=1e-9)
    assert np.allclose(
        L.joint_torque(P, t, qd), np.stack([per_joint[:, 0], L.simulate(P, qd[:, 1], DT)], 1), rtol=0, atol=1e-12
    )  # one set for every joint
    # Same velocity of joint 0, ~v0, at t = 3 ms (leaving rest: bristles still deflecting)
    # and 497 ms (sliding down to rest, on the Stribeck peak): a hysteresis loop.
    i, k = 3, 497
    assert qd[i, 0] == pytest.approx(qd[k, 0], rel=1e-9) and abs(F[i, 0] - F[k, 0]) > 1e-3
    with pytest.raises(ValueError, match="for 3 joints"):
        L.joint_torque(both, t, np.zeros((1000, 3)))
    with pytest.raises(ValueError, match="uniformly spaced"):
        L.joint_torque(both, t**2, qd)


# ----------------------------------------------------------------- an arm with LuGre joints
SIGMA_TAU = 2e-3  # torque noise of the arm experiment, N m


@pytest.fixture(scope="module")
def arm_files(tmp_path_factory):
    """A planar 2-R arm with LuGre friction P, P2 on its joints: the S-curve friction run
    (both joints), a Fourier run for the rigid body and a held-out Fourier run, as CSVs with
    logged qd, qdd (the bristle dynamics need the velocity itself, not one filtered from q)."""
    from jaxid import data, models, simulation

    robot = models.planar(2)
    both = L.LuGre.from_vector(jnp.stack([P.vector(), P2.vector()]))
    t, x, v, a = (np.asarray(u) for u in friction_s_curve())
    sign = np.array([1.0, -1.0])
    runs = [(t, 0.3 * sign + np.outer(x, sign), np.outer(v, sign), np.outer(a, sign))]
    for f, amp in (([0.7, 1.1], [0.8, 1.2]), ([0.5, 1.3], [1.0, 0.9])):
        tf = t  # one length for all runs: one compile of the simulation and of the fit
        w = 2 * np.pi * np.asarray(f)
        runs.append(
            (
                tf,
                np.asarray(amp) / w * np.sin(np.outer(tf, w)),
                amp * np.cos(np.outer(tf, w)),
                -np.asarray(amp) * w * np.sin(np.outer(tf, w)),
            )
        )
    paths = []
    for k, (tt, q, qd, qdd) in enumerate(runs):
        m = simulation.measure(robot, tt, q, qd, qdd, jax.random.key(k), sigma_q=0.0, tau_sigma=SIGMA_TAU, lugre=both)
        paths.append(tmp_path_factory.mktemp("arm") / f"run{k}.csv")
        data.write(data.from_arrays(tt, q, m.data.tau, qd, qdd), paths[-1])
    return robot, both, paths


def test_arm_rigid_body_and_lugre_identified_together(arm_files, tmp_path, capsys):
    # jaxid identify --friction lugre: base parameters and both joints' LuGre parameters from
    # one experiment, each within 4 reported std of the truth; validate integrates the
    # bristle states along a held-out run and predicts its torques to the noise floor.
    from jaxid import results
    from jaxid.cli import main

    robot, truth, (scurve, fourier, held_out) = arm_files
    out = tmp_path / "params.json"
    assert (
        main(["identify", "--robot", "planar2", "--friction", "lugre", str(scurve), str(fourier), "-o", str(out)]) == 0
    )
    printed = capsys.readouterr()
    assert "LuGre friction (converged" in printed.out and "warning" not in printed.err
    params = results.load_params(out)
    doc = params.lugre_fit
    assert doc.converged and doc.warnings == [] and params.physics.problems == []
    # Every joint's eight determined by the S-curve run (saved and read back with the record).
    assert [sorted(d) for d in doc.determinability] == [sorted(L.NAMES)] * 2
    assert all(d["status"] == "determined" for j in doc.determinability for d in j.values())
    assert "not determined" not in printed.out
    est, std = np.asarray(params.lugre.vector()), np.asarray(doc.std)
    err = est - np.asarray(truth.vector())
    assert np.all(np.abs(err / truth.vector()) < 0.01), err / truth.vector()
    assert np.all(np.abs(err) < 4 * std), err / std
    # The default joint terms fv, fc, offset: LuGre replaces fv and fc, the offset stays (true value 0).
    assert params.model["joint_terms"] == ["offset"]
    theta_true = np.asarray(params.base.to_base(robot.with_joint_terms(("offset",)).parameter_vector()))
    assert np.all(np.abs(np.asarray(params.theta) - theta_true) < 4 * np.asarray(params.std))
    assert main(["validate", "--params", str(out), str(held_out), "--no-figures", "--json", "-"]) == 0
    val = json.loads(capsys.readouterr().out)
    assert max(val["files"][0]["rmse"]["per_joint"]) < 1.1 * SIGMA_TAU


def test_arm_lugre_bad_input(arm_files):
    from jaxid import data, workflow
    from jaxid.identification import lugre_robot as R

    robot, truth, (scurve, fourier, _) = arm_files
    runs = [data.read(p) for p in (scurve, fourier)]
    slow = runs[0].slice(step=10)  # 100 Hz: bristle time constants of ~12 ms get one sample
    with pytest.raises(ValueError, match=r"100 Hz, too slowly for the bristle dynamics .* record at >= \d+ Hz"):
        R.check_rate(truth.vector(), [slow])
    with pytest.raises(ValueError, match="no run identifies LuGre friction on every joint"):
        R.friction_run([runs[1].slice(stop=200)])  # before the first zero crossing
    with pytest.raises(workflow.WorkflowError, match="replaces the joint terms fv, fc"):
        workflow.identify_lugre(robot.with_joint_terms(("fv", "fc")), workflow.prepare(runs))


# --------------------------------------------------------------------------- determinability
N_PLAIN = 5854  # the jog-reversal record's length: both plain records compile one identification


def _plain_record(kind, seed=0):
    """A plain S-curve (``plain_s_curve``), at rest after it up to N_PLAIN samples, the reference
    parameters (16 sub-steps: not the identification's discretisation) and white force noise SIGMA_F."""
    from jaxid.excitation.scurve import plain_s_curve

    t, x, v, a = (np.asarray(u) for u in plain_s_curve(kind))
    x, v = np.pad(x, (0, N_PLAIN - len(x)), mode="edge"), np.pad(v, (0, N_PLAIN - len(v)))
    t = np.arange(N_PLAIN) * DT
    F = np.asarray(L.simulate(P, jnp.asarray(v), DT, substeps=16))
    return t, x, v, F + SIGMA_F * np.random.default_rng(seed).standard_normal(F.shape)


def _lugre_cli(tmp_path, name, t, x, v, F):
    """``jaxid lugre`` on the one-axis record: its JSON axis entry (the same compiled programs for
    every record of N_PLAIN samples)."""
    from jaxid.cli import main

    path, out = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
    np.savetxt(path, np.column_stack([t, x, v, F]), delimiter=",", header="t,x,v,F", comments="", fmt="%.17g")
    assert main(["lugre", str(path), "-o", str(out)]) == 0
    (axis,) = json.loads(out.read_text())["axes"]
    return axis


def _crb_rel(v):
    """Cramer-Rao relative std of the eight parameters at the truth for white noise SIGMA_F (the
    Jacobian the determinability uses: one compile with the CLI's on a record of the same length)."""
    from jaxid.identification import lugre_determinability as D

    J = D.force_jacobian(P, jnp.asarray(v), DT)
    return np.sqrt(np.diag(np.linalg.inv(J.T @ J))) * SIGMA_F / np.asarray(P.vector())


def test_a_plain_s_curve_with_a_jog_and_a_reversal_determines_and_recovers_all_eight(tmp_path):
    # Jog at 1e-3 m/s (~v0: the Stribeck range quasi-steady), a reversal at 1.5 m/s without a
    # stop (bristle transient up to |v| ~ vd), sliding to 1.5 m/s: every Cramer-Rao std <= 0.2 %.
    t, x, v, F = _plain_record("jog-reversal")
    assert np.all(_crb_rel(v) < 0.002)
    axis = _lugre_cli(tmp_path, "jog", t, x, v, F)  # identify_joints, method full, and determinability
    assert [d["status"] for d in axis["determinability"].values()] == ["determined"] * 8
    assert axis["not_determined"] == []
    est, std = (np.array([axis[k][n] for n in L.NAMES]) for k in ("params", "std"))
    truth = np.asarray(P.vector())
    assert np.all(np.abs(est - truth) < 4 * std), (est - truth) / std
    assert np.all(np.abs(est / truth - 1) < 0.01)


def test_a_plain_rest_to_rest_s_curve_says_which_parameters_it_does_not_determine(tmp_path, capsys):
    # Slow starts and stops (jerk 2 m/s^3), at most 0.1 m/s: the bristle transients end at
    # ~1e-3 m/s << vd (sigma1(v) = sigma1 there) and alpha3 v^2 <= 1e-3 N ~ the noise. The CLI
    # says exactly those two are not determined, why, and what experiment would determine them.
    # (At rest after the move up to the jog-reversal record's length: rest adds no information
    # on vd or alpha3, whose force columns vanish at v = 0.)
    t, x, v, F = _plain_record("rest-to-rest")
    limit = I.REL_STD
    crb = dict(zip(L.NAMES, _crb_rel(v)))
    assert {n for n, r in crb.items() if r > limit} == {"vd", "alpha3"}  # the experiment's property
    assert max(r for n, r in crb.items() if n not in ("vd", "alpha3")) < limit / 2
    capsys.readouterr()
    axis = _lugre_cli(tmp_path, "rest", t, x, v, F)
    dets = axis["determinability"]
    assert {n for n, d in dets.items() if d["status"] != "determined"} == {"vd", "alpha3"}
    assert "bristle transients end" in dets["vd"]["reason"] and "reversals without a stop" in dets["vd"]["experiment"]
    assert "sliding speeds only up to" in dets["alpha3"]["reason"] and "cruise" in dets["alpha3"]["experiment"]
    assert all(d["experiment"] == "" for n, d in dets.items() if n not in ("vd", "alpha3"))
    captured = capsys.readouterr()
    printed = captured.out
    assert "poorly determined" in captured.err and len(axis["not_determined"]) == 2
    for line in axis["not_determined"]:
        assert line in printed
    for n in ("vd", "alpha3"):  # its row: "not determined" for a value, or the std flagged
        row = next(r for r in printed.splitlines() if r.startswith(f"{n} "))
        assert "not determined" in row or "?" in row
    for n in ("sigma0", "alpha1", "v0"):
        row = next(r for r in printed.splitlines() if r.startswith(f"{n} "))
        assert "not determined" not in row and "?" not in row


def test_determinability_names_a_null_direction_and_an_unexcited_parameter():
    # vd enters only through sigma1(v) = sigma1 exp(-(v/vd)^2): on a record whose transients end
    # far below vd, its column is ~0 and its std infinite or huge: "not determined", no value.
    from jaxid.identification import lugre_determinability as D

    v = s_curve([1e-3, 0.0, -1e-3, 0.0], [0.1, 0.05, 0.1, 0.05], 0.5, 2.0)[2]
    v = jnp.pad(v, (0, N_PLAIN - v.shape[0]))  # at rest after it: the plain records' Jacobian program
    x = np.cumsum(np.asarray(v)) * DT
    p = eqx.tree_at(lambda q: q.vd, P, 1.0)  # damping fades at 1 m/s: never reached
    J = D.force_jacobian(p, jnp.asarray(v), DT)
    std, corr, s, _ = I.gauss_newton(jnp.asarray(J), SIGMA_F * np.random.default_rng(0).standard_normal(len(v)))
    dets = {d.name: d for d in D.determinability(p, std, x, v, I.THRESHOLD, SIGMA_F, J)}
    assert dets["vd"].status == "not determined" and "well below vd" in dets["vd"].reason
    assert dets["sigma0"].status == "determined"
    nulls = D.null_directions(J, p, SIGMA_F)  # vd alone is one of the record's blind directions
    assert any(abs(u[L.NAMES.index("vd")]) > 0.9 and s > 1.0 for s, u in nulls)


def test_zero_order_hold_matches_an_independent_per_sample_bristle_update():
    # A simulator that holds v[k] over each sample interval and updates z with the exact
    # exponential (numpy loop, written out here) is reproduced by hold="zero" to rounding; the
    # default first-order hold differs by ~0.1 N in the transients, which on the designed
    # experiment biases every parameter by up to ~90 Cramer-Rao std (docs/friction.md).
    v = _short([1e-5, -1e-5, 2e-3, -0.2, 0.0], [0.03, 0.03, 0.02, 0.01, 0.0])
    s0, s1, a0, a1, v0, vd, a2, a3 = (float(getattr(P, n)) for n in L.NAMES)
    z, F = 0.0, np.empty(len(v))
    for k, vk in enumerate(v):
        gk = a0 + a1 * np.exp(-((vk / v0) ** 2))
        F[k] = (
            s0 * z + s1 * np.exp(-((vk / vd) ** 2)) * (vk - s0 * abs(vk) * z / gk) + a2 * vk + a3 * np.sign(vk) * vk**2
        )
        if vk != 0:
            zs = np.sign(vk) * gk / s0
            z = zs + (z - zs) * np.exp(-s0 * abs(vk) / gk * DT)
    assert np.max(np.abs(np.asarray(L.simulate(P, v, DT, hold="zero")) - F)) < 1e-10
    assert np.max(np.abs(np.asarray(L.simulate(P, v, DT)) - F)) > 1e-3
    with pytest.raises(ValueError, match="hold"):
        L.integration_steps(jnp.asarray(v), 8, 1e-4, hold="cubic")

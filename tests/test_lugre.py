"""LuGre friction: ODE integration against closed forms and scipy, gradients, identification."""
import json

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
    t, x, v, a = s_curve([1e-5, -1e-5, 2e-3, -0.2, 0.0], [0.03, 0.03, 0.02, 0.01, 0.0], 10.0, 200.0)
    v = np.asarray(v)
    F_ref, z_ref = L.simulate_reference(P, v, DT)  # Radau, rtol 1e-10, max step 1e-4 s
    F, z = L.simulate(P, v, DT, return_state=True)
    assert np.max(np.abs(np.asarray(F) - F_ref)) < 1e-5
    assert np.max(np.abs(np.asarray(z) - z_ref)) < 1e-5 / P.sigma0


def test_gradients_match_finite_differences():
    t, x, v, a = s_curve([1e-5, -2e-3, 0.05], [0.02, 0.02, 0.01], 10.0, 200.0)

    def force(log_p):
        return L.simulate(L.LuGre.from_vector(jnp.exp(log_p)), v, DT)

    check_grads(jax.jit(force), (jnp.log(P.vector()),), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5,
                eps=1e-5)


def test_vmap_over_parameter_sets_and_joints():
    t, x, v, a = s_curve([1e-4, -0.1], [0.02, 0.02], 10.0, 200.0)
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
    best, val = I.pso(lambda u: jnp.sum((u - 0.3) ** 2, axis=1), jnp.zeros(3), jnp.ones(3), jax.random.key(1),
                      n_particles=20, n_iter=60)
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
    np.savetxt(vpath, np.column_stack([tv, xv, xv, vv, vv, Fv]), delimiter=",",
               header="t,q1,q2,qd1,qd2,F1,F2", comments="", fmt="%.17g")
    out = tmp_path / "lugre.json"
    assert main(["lugre", str(path), "--validation", str(vpath), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [a["axis"] for a in doc["axes"]] == ["q1", "q2"]
    for axis, p in zip(doc["axes"], (P, P2)):
        assert axis["params"]["sigma0"] == pytest.approx(float(p.sigma0), rel=1e-3)
        assert axis["lugre"]["wape_pct"] < 0.1 < axis["coulomb_viscous"]["wape_pct"]
    assert "WAPE" in capsys.readouterr().out

    bad = cols.copy()
    bad[10, 5] = np.nan
    np.savetxt(path, bad, delimiter=",", header="t,q1,q2,qd1,qd2,F1,F2", comments="", fmt="%.17g")
    assert main(["lugre", str(path)]) == 2
    assert "F1" in capsys.readouterr().err


def test_bad_input_raises():
    v = jnp.linspace(-0.1, 0.1, 200)
    with pytest.raises(ValueError, match="sigma0"):
        L.simulate(L.LuGre(-1e5, 316.0, 1.0, 0.5, 1e-3, 1e-2, 0.4, 0.1), v, DT)
    with pytest.raises(ValueError, match="v0"):
        L.simulate(L.LuGre(1e5, 316.0, 1.0, 0.5, 0.0, 1e-2, 0.4, 0.1), v, DT)
    with pytest.raises(ValueError, match="NaN"):
        L.simulate(P, v.at[7].set(jnp.nan), DT)
    x = np.cumsum(np.asarray(v)) * DT
    F = np.asarray(L.simulate(P, v, DT))
    with pytest.raises(ValueError, match="NaN"):
        I.identify(x, v, np.where(np.arange(200) == 50, np.nan, F), DT)
    with pytest.raises(ValueError, match="same shape"):
        I.identify(x, v[:-1], F, DT)
    with pytest.raises(ValueError, match="method"):
        I.identify(x, v, F, DT, method="magic")
    with pytest.raises(ValueError, match="threshold must be a finite velocity"):
        I.identify(x, v, F, DT, threshold=0.0)

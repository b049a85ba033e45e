"""Screening of faulty torque data: dead channels, implausible values, residual outliers,
and screen_fit's fallback to IRLS (issue 18, item 1)."""

import numpy as np
import pytest

import jaxid  # noqa: F401  (float64)
from jaxid.identification.estimators import identify
from jaxid.identification.screening import dead_channels, implausible_values, outliers, screen_fit

N = 600
THETA = np.array([1.5, -0.2, 4.0, 0.7, 2.0])


@pytest.fixture(scope="module")
def data():
    """Two joints as in a chain: joint 0 acts on parameters 0, 1, 4; joint 1 on 2, an offset
    3, and the shared 4. So a joint's rows cannot be ignored without losing parameters."""
    rng = np.random.default_rng(1)
    W = np.zeros((N, 2, 5))
    W[:, 0, 0], W[:, 0, 1], W[:, 0, 4] = rng.normal(size=N), 3 * rng.normal(size=N), rng.normal(size=N)
    W[:, 1, 2], W[:, 1, 3], W[:, 1, 4] = rng.normal(size=N), 1.0, 0.5 * rng.normal(size=N)
    tau = np.einsum("knp,p->kn", W, THETA) + rng.normal(size=(N, 2)) * [0.1, 0.05]
    return W, tau, identify(W, tau, "wls")


def test_dead_channels_named_with_reason():
    t = np.random.default_rng(0).normal(size=(50, 4))
    t[:, 1] = 0.0
    t[:, 2] = 3.7
    t[:, 3] = np.r_[np.zeros(25), np.ones(25)]  # a relay, not a torque
    found = dead_channels(t, names=["A1", "A2", "A3", "A4"])
    assert found.joints == [1, 2, 3]
    assert [why for _, why in found][:2] == ["is all zero", "is constant at 3.7 (stuck)"]
    assert found.message == (
        "dead torque channels: joint 2 (A2) is all zero; joint 3 (A3) is constant at 3.7 "
        "(stuck); joint 4 (A4) takes only 2 distinct values in 50 samples (stuck or quantised)"
    )
    assert not dead_channels(t[:, :1]) and "no dead" in dead_channels(t[:, :1]).message
    assert dead_channels(t.ravel(), n_joints=4).joints == [1, 2, 3]  # stacked rows


def test_implausible_values_name_rows_and_joints():
    t = np.ones((100, 3))
    t[17, 1], t[42, 0], t[42, 2], t[80, 2] = 1e8, np.inf, -2e6, np.nan
    bad = implausible_values(t)
    assert bad.rows.tolist() == [17, 42, 80] and bad.joints == ((1,), (0, 2), (2,))
    assert bad.message == (
        "tau: 3 samples with a non-finite value or |value| > 1e+06: sample 17 (joint 2: 1e+08), "
        "sample 42 (joint 1, joint 3: inf), sample 80 (joint 3: nan)"
    )
    assert not implausible_values(t[:10]) and implausible_values(t, bound=1e9).count == 2


def test_outliers_mad_screening():
    rng = np.random.default_rng(2)
    r = rng.normal(size=(N, 2)) * [0.1, 2.0]
    assert not outliers(r.ravel(), 2)  # Gaussian noise: no false alarm at k = 8
    r[100, 0] += 1.0  # 10 sigma on the quiet joint: found despite the noisy one
    r[300, 1] += 1e8
    found = outliers(r.ravel(), 2, names=["A1", "A2"])
    assert found.rows.tolist() == [100, 300] and found.per_joint.tolist() == [1, 1]
    assert found.message.startswith(
        "2 outlier samples of 600 (robust |z| > 8 on the residual): sample 100 (joint 1 (A1), z = 1"
    )
    assert outliers(r, k=20).rows.tolist() == [300]
    exact = np.zeros((N, 2))
    exact[:, 1] = rng.normal(size=N)
    exact[:, 0] = 1e-17 * rng.normal(size=N)  # a joint fitted to rounding: not outliers
    assert not outliers(exact)


def _err(fit, ref):
    return float(np.max(np.abs(np.asarray(fit.theta) - np.asarray(ref.theta)) / np.asarray(ref.std)))


def test_one_spike_among_600_samples(data):
    """A single 1e8 N m sample: plain wls is ~1e8 std off; the screened path is not."""
    W, tau, clean = data
    dirty = tau.copy()
    dirty[237, 1] += 1e8
    assert _err(identify(W, dirty, "wls"), clean) > 1e6
    # Beyond the physical bound: rejected with its row by default, dropped on request.
    with pytest.raises(ValueError, match=r"sample 237 \(joint 2: 1e\+08\).*implausible='drop'"):
        screen_fit(W, dirty, 2)
    dropped = screen_fit(W, dirty, 2, implausible="drop")
    assert dropped.method == "wls" and 237 not in dropped.samples and _err(dropped.fit, clean) < 3
    # Within the bound, the residual screening fires and IRLS takes over.
    s = screen_fit(W, dirty, 2, bound=1e9)
    assert s.method == "irls" and s.recommended == "irls" and s.outliers.rows.tolist() == [237]
    assert _err(s.fit, clean) < 3, _err(s.fit, clean)
    assert "1 outlier sample of 600" in s.message and "sample 237 (joint 2" in s.message and "IRLS" in s.message
    s = screen_fit(W, dirty, 2, bound=1e9, on_outliers="drop")
    assert s.method == "wls" and _err(s.fit, clean) < 3
    assert screen_fit(W, dirty, 2, bound=1e9, on_outliers="keep").method == "wls"


def test_moderate_spike_within_bound_uses_irls_by_default(data):
    W, tau, clean = data
    dirty = tau.copy()
    dirty[5, 0] -= 5e3
    assert _err(identify(W, dirty, "wls"), clean) > 10
    s = screen_fit(W, dirty, 2)
    assert s.method == "irls" and s.outliers.rows.tolist() == [5] and _err(s.fit, clean) < 3


def test_clean_data_pass_unchanged(data):
    W, tau, clean = data
    s = screen_fit(W, tau, 2)
    assert s.method == "wls" and s.recommended is None and not s.outliers and not s.dead
    np.testing.assert_array_equal(s.fit.theta, clean.theta)
    assert s.message.startswith("screening: data passed")


@pytest.mark.parametrize("stuck", [0.0, 3.7])
def test_dead_channel_error_or_excluded(data, stuck):
    """Coupled joints: the wls floor bounds a dead joint's weight, but its zero torque
    still pulls the shared parameter; excluding it gives OLS on the other joint's rows."""
    W, tau, _ = data
    t = tau.copy()
    t[:, 1] = stuck
    with pytest.raises(ValueError, match="joint 2 \\(A2\\) is (all zero|constant).*dead='exclude'"):
        screen_fit(W, t, 2, joint_names=["A1", "A2"])
    with pytest.warns(UserWarning, match="excluded from the fit"):
        s = screen_fit(W[:, :, [0, 1, 4]], t, 2, dead="exclude")
    alone = identify(W[:, :1, [0, 1, 4]], t[:, :1], "ols")
    assert s.joints == (0,)
    np.testing.assert_allclose(s.fit.theta, alone.theta, rtol=1e-12)
    np.testing.assert_allclose(s.fit.theta, THETA[[0, 1, 4]], atol=5 * np.asarray(alone.std).max())
    # Excluding the only joint that excites a parameter makes it unidentifiable, by name.
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="rank deficient"):
        screen_fit(W, t, 2, dead="exclude", names=[f"p{i}" for i in range(5)])

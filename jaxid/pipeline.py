"""One end-to-end experiment: design -> measure -> preprocess -> identify -> validate.

The default (``jaxid demo``): a UR5 with viscous and Coulomb friction; an optimised
5-harmonic Fourier excitation at 0.05 Hz; a "true" robot perturbed from the nominal
model (physically consistent) with friction; 500 Hz measurements with sigma_q = 1e-4 rad
on the positions and torque noise of 0.5 % of each joint's torque range; zero-phase
Butterworth filtering of q before central differences; WLS (Gautier's two-step) on the
48 base parameters; validation on a different trajectory, against both the measured and
the noise-free true torques.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import jax
import numpy as np

from jaxid import metrics, report, signals
from jaxid.excitation.optimize import optimize
from jaxid.identification.base import base_parameters
from jaxid.identification.estimators import identify
from jaxid.identification.regressor import regressor, stack


@dataclass
class Config:
    """Settings of an experiment; every field has the default of ``jaxid demo``."""

    robot: str = "ur5"                      # built-in model name: ur5 or planarN
    joint_terms: tuple = ("fv", "fc")       # identified per-joint terms
    seed: int = 0
    harmonics: int = 5
    base_frequency: float = 0.05            # Hz; period 20 s
    n_starts: int = 2                       # excitation optimiser starts
    steps: int = 60                         # excitation optimiser steps
    periods: int = 1                        # excitation periods measured
    fs: float = 500.0                       # sample rate, Hz
    sigma_q: float = 1e-4                   # position noise, rad
    tau_noise: float = 0.005                # torque noise, fraction of each joint's torque range
    cutoff: float = 5.0                     # Butterworth cut-off for q, Hz
    order: int = 4
    method: str = "wls"
    trim: float = 0.5                       # s dropped at each end after filtering (edge transients)
    out_dir: str | None = "jaxid_demo"      # report folder (None: no files)
    progress: bool = True


@dataclass
class Result:
    """Outcome of :func:`run`; ``summary`` is the JSON-ready digest."""

    config: Config
    names: tuple
    estimate: np.ndarray
    std: np.ndarray
    rel_std: np.ndarray
    truth: np.ndarray
    validation: dict                       # metrics vs the measured torque
    validation_true: dict                  # metrics vs the noise-free true torque
    cond: float
    excitation: dict
    timings: dict
    joint_names: tuple
    files: dict = field(default_factory=dict)

    @property
    def summary(self) -> dict:
        return dict(config=dataclasses.asdict(self.config), base_parameters=dict(
            names=list(self.names), estimate=self.estimate, std=self.std, rel_std_percent=self.rel_std,
            truth=self.truth), validation_measured=self.validation, validation_true=self.validation_true,
            regressor_cond=self.cond, excitation=self.excitation, timings_s=self.timings)


def _preprocess(t, q, tau, cfg):
    """Filter q, differentiate, and drop the filter's edge transients (also from tau)."""
    dt = float(t[1] - t[0])
    qf, qd, qdd = signals.derivatives(q, dt, method="butterworth", cutoff=cfg.cutoff, order=cfg.order)
    k = int(round(cfg.trim / dt))
    sl = slice(k, len(t) - k)
    return sl, t[sl], np.asarray(qf)[sl], np.asarray(qd)[sl], np.asarray(qdd)[sl], np.asarray(tau)[sl]


def run(cfg: Config | None = None, log=print) -> Result:
    """Run the experiment described by ``cfg`` and return its :class:`Result`."""
    from jaxid import results, simulation

    cfg = cfg or Config()
    clock = {}
    t0 = time.perf_counter()
    nominal = results.build_model(builtin=cfg.robot, joint_terms=cfg.joint_terms)
    key_truth, key_meas, key_val = jax.random.split(jax.random.key(cfg.seed), 3)
    truth = simulation.perturb(nominal, key_truth, friction=[k for k in cfg.joint_terms if k in simulation.FRICTION_RANGES])

    log(f"[1/5] design: optimising a {cfg.harmonics}-harmonic Fourier excitation "
        f"({cfg.n_starts} starts x {cfg.steps} steps)")
    exc = optimize(nominal, harmonics=cfg.harmonics, base_frequency=cfg.base_frequency, n_starts=cfg.n_starts,
                   steps=cfg.steps, seed=cfg.seed, progress=cfg.progress)
    clock["design"] = time.perf_counter() - t0
    log(f"      cond = {exc.cond:.1f} (median random start {np.median(exc.initial_cond):.1f}), "
        f"limits met: {exc.feasible}")

    log(f"[2/5] measure: {cfg.periods} period(s) at {cfg.fs:g} Hz on the simulated robot")
    t, q, qd, qdd = exc.trajectory(cfg.fs, cfg.periods)
    meas = simulation.measure(truth, t, q, qd, qdd, key_meas, sigma_q=cfg.sigma_q, tau_rel=cfg.tau_noise)

    log(f"[3/5] preprocess: Butterworth {cfg.order}th order at {cfg.cutoff:g} Hz, central differences")
    _, tt, qf, qdf, qddf, tau = _preprocess(np.asarray(meas.data.t), np.asarray(meas.data.q),
                                         np.asarray(meas.data.tau), cfg)
    clock["measure"] = time.perf_counter() - t0 - clock["design"]

    log(f"[4/5] identify: {cfg.method.upper()} on the base parameters")
    base = base_parameters(nominal)
    W, y = stack(regressor(nominal, qf, qdf, qddf), tau)
    Wb = base.reduce(W)
    fit = identify(Wb, y, method=cfg.method, n_joints=nominal.n, names=base.names)
    theta_true = np.asarray(base.to_base(truth.parameter_vector()))
    clock["identify"] = time.perf_counter() - t0 - clock["design"] - clock["measure"]

    log("[5/5] validate on a different (random, feasible) trajectory")
    vexc = optimize(nominal, harmonics=cfg.harmonics, base_frequency=cfg.base_frequency, n_starts=1, steps=0,
                    seed=cfg.seed + 1, progress=False)
    vt, vq, vqd, vqdd = vexc.trajectory(cfg.fs, 1)
    vmeas = simulation.measure(truth, vt, vq, vqd, vqdd, key_val, sigma_q=cfg.sigma_q, tau_rel=cfg.tau_noise)
    vsl, vtt, vqf, vqdf, vqddf, vtau = _preprocess(np.asarray(vmeas.data.t), np.asarray(vmeas.data.q),
                                              np.asarray(vmeas.data.tau), cfg)
    vtau_true = np.asarray(vmeas.tau)[vsl]
    pred = np.asarray(base.reduce(stack(regressor(nominal, vqf, vqdf, vqddf))) @ fit.theta).reshape(vtau.shape)
    val_meas = metrics.summary(vtau, pred)
    val_true = metrics.summary(vtau_true, pred)
    clock["validate"] = time.perf_counter() - t0 - sum(clock.values())
    clock["total"] = time.perf_counter() - t0

    result = Result(config=cfg, names=tuple(base.names), estimate=np.asarray(fit.theta), std=np.asarray(fit.std),
                    rel_std=np.asarray(fit.rel_std), truth=theta_true, validation=val_meas,
                    validation_true=val_true, cond=float(fit.cond), excitation=exc.summary(), timings=clock,
                    joint_names=tuple(nominal.names))
    if cfg.out_dir:
        figs = report.figures(cfg.out_dir, vtt, vtau, pred, nominal.names, estimate=result.estimate,
                              std=result.std, truth=theta_true, singular_values=fit.singular_values)
        result.files = report.write(cfg.out_dir, f"jaxid identification: {cfg.robot}", sections(result),
                                    result.summary, figs)
    return result


def sections(result: Result) -> dict:
    """Human-readable tables of a result (printed by ``jaxid demo`` and put in the report)."""
    return {
        "Base parameters": report.parameter_table(result.names, result.estimate, result.std, result.truth),
        "Validation against the measured torque": report.metrics_table(result.validation, result.joint_names),
        "Validation against the noise-free true torque": report.metrics_table(result.validation_true,
                                                                               result.joint_names),
        "Timings": "  ".join(f"{k} {v:.1f} s" for k, v in result.timings.items()),
    }

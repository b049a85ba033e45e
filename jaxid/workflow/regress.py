"""Regressor rows of prepared runs: dense ([`regressor_rows`][jaxid.workflow.regress.regressor_rows]) or per run for streaming, the samples
that enter the fit ([`outside_reversals`][jaxid.workflow.regress.outside_reversals]), and the base parameters of a model
([`base_of`][jaxid.workflow.regress.base_of])."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from jaxid.identification.base import SAMPLES as CHUNK
from jaxid.identification.base import base_parameters
from jaxid.identification.regressor import regressor
from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import WorkflowError

#: CHUNK: samples per regressor evaluation, ``jaxid.identification.base.SAMPLES``: a fixed
#: chunk (the last one padded) compiles once, shared with ``base_parameters`` (and so with the
#: excitation design), and the persistent compilation cache reuses it in the next process.


# -------------------------------------------------------------------------------- identify
def chunk_regressor(robot, q, qd, qdd) -> np.ndarray:
    """The regressor (k, n, p) of up to ``CHUNK`` samples q, qd, qdd (k, n), evaluated on a
    whole chunk (``regressor`` pads a shorter batch by repeating its last sample): one compiled
    program for every length."""
    return np.asarray(regressor(robot, q, qd, qdd))


def regressor_rows(robot, datasets, columns=None, progress: Callable | None = None, parallel=None):
    """Stacked regressor (M, k) and torques (M,) of prepared datasets, M = samples * n,
    sample-major.

    parallel: per dataset None or ``{"cutoff_hz", "order", "step"}`` (``Prepared.choices[i]
    ["parallel"]``): parallel filtering and decimation (Gautier 1997): every regressor column
    and every torque of that run is filtered along time with the same zero-phase Butterworth
    filter (``jaxid.signals.butterworth``) and then every ``step``-th sample kept. The filter is
    linear, so tau = W theta still holds exactly for the filtered rows (edges and Coulomb
    discontinuities included), while the noise above the cutoff leaves tau. Gautier, "Dynamic
    identification of robots with power model", ICRA 1997; Gautier & Poignet, 2001.

    columns: regressor columns kept (e.g. the base indices), default all. The regressor is
    evaluated in chunks of [`CHUNK`][jaxid.identification.base.SAMPLES] samples (the last one padded by repeating its last
    sample) so that it compiles once for every data length. progress: optional wrapper
    ``progress(iterable, total=..., desc=...)`` (e.g. a tqdm bar).
    """
    from jaxid import signals

    parallel = [None] * len(datasets) if parallel is None else list(parallel)
    chunks = [(i, s) for i, ds in enumerate(datasets) for s in range(0, len(ds), CHUNK)]
    if progress is not None:
        chunks = progress(chunks, total=len(chunks), desc="regressor")
    blocks: list[list[np.ndarray]] = [[] for _ in datasets]  # per run its chunks' rows
    for i, s in chunks:
        Y = chunk_regressor(
            robot, *(np.asarray(x)[s : s + CHUNK] for x in (datasets[i].q, datasets[i].qd, datasets[i].qdd))
        )
        blocks[i].append(Y if columns is None else Y[..., columns])
    Ws, taus = [], []
    for ds, b, f in zip(datasets, blocks, parallel):
        W, tau = _joined(b), np.asarray(ds.tau)  # (N, n, k), (N, n)
        if f is not None:
            try:
                W, tau = (
                    np.asarray(signals.butterworth(x, 1.0 / ds.dt, f["cutoff_hz"], f["order"]))[:: f["step"]]
                    for x in (W, tau)
                )
            except ValueError as e:
                raise WorkflowError(f"{ds.source}: parallel filtering of W and tau: {e}") from None
        Ws.append(W)
        taus.append(tau)
    return _joined([w.reshape(-1, w.shape[-1]) for w in Ws]), _joined([t.reshape(-1) for t in taus])


def _joined(parts):
    """``np.concatenate(parts)``: a new, writable array; the one part itself where it is one already
    (no copy of a record's rows), not a read-only view of a jax buffer."""
    return parts[0] if len(parts) == 1 and parts[0].flags.writeable else np.concatenate(parts)


def _streamed_runs(robot, prepared: Prepared, columns):
    """The runs as ``streaming.reduce_runs`` takes them, and the rows of each: the states, or
    for a run with parallel filtering (each regressor column filtered along the whole run) a
    callable returning its filtered, decimated rows (only that run is then held)."""
    runs: list[tuple[np.ndarray, ...] | Callable[[], tuple[np.ndarray, np.ndarray]]] = []
    lengths = []
    for ds, c in zip(prepared.datasets, prepared.choices):
        f = c.get("parallel")
        if f is None:
            runs.append(tuple(np.asarray(x) for x in (ds.q, ds.qd, ds.qdd, ds.tau)))
        else:

            def rows(ds=ds, f=f):
                W, tau = regressor_rows(robot, [ds], columns, parallel=[f])
                return W.reshape(-1, robot.n, W.shape[-1]), tau.reshape(-1, robot.n)

            runs.append(rows)
        lengths.append(len(range(0, len(ds), (f or {}).get("step", 1))))
    return runs, lengths


def outside_reversals(prepared: Prepared) -> np.ndarray:
    """Which rows of [`regressor_rows`][jaxid.workflow.regress.regressor_rows] (one per sample, after parallel decimation) enter
    the fit: those at which every joint's |qd| is at least the run's ``reversal_band``
    (``Policy.reversal_band``; all where it is None). Near a velocity reversal or at rest the
    smooth Coulomb sign of an estimated qd may have the wrong sign; such samples are dropped,
    not down-weighted, so the estimator and its variance see only the equations it can trust.
    Returns a boolean array over the samples of all runs."""
    keep = []
    for ds, c in zip(prepared.datasets, prepared.choices):
        qd = np.abs(np.asarray(ds.qd))[:: (c.get("parallel") or {}).get("step", 1)]
        band = c.get("reversal_band")
        keep.append(np.all(qd >= band, axis=1) if band is not None else np.ones(len(qd), bool))
    return np.concatenate(keep)


#: Base parameters of the models identified in this process, by model value ([`base_of`][jaxid.workflow.regress.base_of]).
_BASES: dict = {}
_BASES_KEPT = 8


def base_of(robot):
    """``jaxid.base_parameters(robot)``, its ambiguous-rank warning off (reported by
    [`physics_report`][jaxid.workflow.check.physics_report], from ``base.gap``), remembered for the last few models by value.

    They depend on the model alone, not on the data: structure, evaluated on fixed random
    states (in chunks of the data's shape, so the regressor compiles once). Recomputing them
    (a regressor on ``SAMPLES`` states and a QR) was half of a warm ``identify_experiment`` of
    a 1000-sample UR10 (``benchmarks/vs_figaroh.py``). The key is the model's pytree structure
    (topology, names, static settings) and the bytes of its arrays, so an equal model built
    again hits and any change of geometry, limits or terms misses."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(robot)
    key = (treedef, tuple((np.shape(x), np.asarray(x).dtype.str, np.asarray(x).tobytes()) for x in leaves))
    try:
        base = _BASES.get(key)
    except TypeError:  # an unhashable static field: no memory
        key, base = None, None
    if base is None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="ambiguous rank")  # others (placeholder limits) shown
            base = base_parameters(robot)
        if key is not None:
            if len(_BASES) >= _BASES_KEPT:
                _BASES.pop(next(iter(_BASES)))  # the oldest
            _BASES[key] = base
    return base


def _holdout_rows(robot, prepared: Prepared, progress):
    """Standard regressor rows (W, tau) of each prepared run, for the held-out protocol."""
    if not np.all(np.isfinite(np.asarray(robot.tau_max))):
        raise WorkflowError(
            "scoring on held-out data uses RMSE / (2 tau_max): the model needs torque limits (URDF <limit effort>)"
        )
    return [
        regressor_rows(robot, [d], None, progress, [c.get("parallel")])
        for d, c in zip(prepared.datasets, prepared.choices)
    ]

"""The rows a fit uses and their screening: the size and memory checks, implausible or dead torque
channels (errors), samples at velocity reversals left out, and gross outliers on the residual of a
first fit dropped (or the fit switched to IRLS) before the estimator ([`screen`][jaxid.workflow.screen.screen])."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from jaxid import memory
from jaxid.identification import screening, streaming
from jaxid.workflow import regress
from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import Screening, WorkflowError


@dataclass(frozen=True)
class Rows:
    """The samples of the prepared runs that a fit uses.

    moving: (samples of all runs,) bool: outside velocity reversals
    ([`outside_reversals`][jaxid.workflow.regress.outside_reversals]). stream: the rows are reduced run by run
    (``jaxid.identification.streaming``) instead of held. W (M, k), tau (M,): the held rows of the
    moving samples, sample-major (standard columns for a consistent fit, else the base ones); Wb:
    their base columns. None when streamed.
    """

    moving: np.ndarray
    stream: bool
    W: np.ndarray | None = None
    tau: np.ndarray | None = None
    Wb: np.ndarray | None = None

    @property
    def n_fitted(self) -> int:
        """Samples outside reversals."""
        return int(np.sum(self.moving))

    def take(self, rows) -> Rows:
        """The held rows ``rows`` (indices into them), or all when None."""
        if rows is None or self.stream:
            return self
        assert self.W is not None and self.tau is not None and self.Wb is not None  # held, as not streamed
        return dataclasses.replace(self, W=self.W[rows], tau=self.tau[rows], Wb=self.Wb[rows])


def check_torques(robot, datasets) -> None:
    """WorkflowError naming the run and joint of a torque beyond 1e6 N m or a dead (all zero, stuck)
    torque channel; checked before any fit, in the run (a filtered spike would smear over samples)."""
    names = list(robot.coordinate_names)
    for ds in datasets:
        bad = screening.implausible_values(np.asarray(ds.tau), names=names)
        if bad:
            raise WorkflowError(f"{ds.source}: {bad.message}{_in_file(ds, bad.rows)}")
        dead = screening.dead_channels(np.asarray(ds.tau), names=names)
        if dead:
            raise WorkflowError(
                f"{ds.source}: {dead.message}; a dead torque channel cannot be identified: repair it "
                "or record without it"
            )


def _in_file(ds, rows) -> str:
    """Where the samples ``rows`` (indices into the prepared run ``ds``) are in its file (1-based rows
    and the CSV line, ``Dataset.row``), as "; in the file: ..."; "" where the file's rows are not known
    (a decimated run) or a sample is no file row (a run averaged into one period)."""
    if getattr(ds, "file_rows", None) is None or ds.derivatives == "periodic":
        return ""
    shown = [ds.row(int(k)) for k in np.asarray(rows)[:3]]
    return "; in the file: " + ", ".join(shown) + (" ..." if len(rows) > 3 else "")


def fit_rows(robot, prepared: Prepared, base, *, method: str, consistent: bool, progress=None) -> Rows:
    """The [`Rows`][jaxid.workflow.screen.Rows] of the prepared runs: held in memory, or streamed above
    ``streaming.STREAM_BYTES`` of W (for the streamed estimators; the instrumental ones hold W).
    WorkflowError when the samples cannot identify the base parameters or do not fit in memory."""
    N = prepared.n_samples
    if N * robot.n <= base.rank:
        raise WorkflowError(
            f"{N} samples x {robot.n} joints give {N * robot.n} equations for {base.rank} base "
            "parameters; record more samples"
        )
    stream = (
        method in (*streaming.METHODS, "irls")
        and memory.regressor_bytes(N, robot.n, base.rank) > streaming.STREAM_BYTES
    )
    if not stream:  # before the work
        columns = len(robot.parameter_names()) if consistent else None
        memory.check_identify(N, robot.n, base.rank, all_columns=columns)
    check_torques(robot, prepared.datasets)
    moving = regress.outside_reversals(prepared)
    if stream:
        return Rows(moving=moving, stream=True)
    W, tau = regress.regressor_rows(
        robot,
        prepared.datasets,
        None if consistent else np.asarray(base.indices),
        progress,
        parallel=[c.get("parallel") for c in prepared.choices],
    )
    if not moving.all():  # else every row enters (no copy of W)
        W, tau = W[np.repeat(moving, robot.n)], tau[np.repeat(moving, robot.n)]
    return Rows(moving, False, W, tau, W[:, np.asarray(base.indices)] if consistent else W)


def screen(robot, prepared: Prepared, base, rows: Rows, *, method: str, outliers: str, progress=None):
    """``screening.screen_fit`` (held rows) or ``streaming.screen`` (streamed) of the base parameters
    with ``method`` ("wls" for the instrumental ones, which start from it): gross outliers on the
    residual of an OLS fit (robust z > 8) dropped and the estimator refitted on the rest
    (``outliers="drop"``), or the fit switched to Huber IRLS ("irls"), or kept ("keep"). On the real
    KUKA runs dropping costs a quarter of Huber IRLS (3 s vs 14 s CPU) and keeps the estimator's
    covariance. Returns the screening result (``.fit``, ``.method``, ``.outliers``, ``.samples``,
    ``.reduced``)."""
    fit_method = "wls" if method in ("iv", "didim") else method
    names, joint_names = list(base.names), list(robot.coordinate_names)
    try:
        if not rows.stream:
            return screening.screen_fit(
                rows.Wb,
                rows.tau,
                robot.n,
                method=fit_method,
                names=names,
                joint_names=joint_names,
                on_outliers=outliers,
            )
        runs, lengths = regress._streamed_runs(robot, prepared, np.asarray(base.indices))
        masks = np.split(rows.moving, np.cumsum(lengths)[:-1])
        return streaming.screen(
            robot,
            runs,
            np.asarray(base.indices),
            masks=masks,
            progress=progress,
            method=fit_method,
            names=names,
            joint_names=joint_names,
            on_outliers=outliers,
        )
    except ValueError as e:
        from jaxid.identification.estimators import RIDGE_ADVICE

        # The screening's first fit is OLS; a --method ridge user is not told to use ridge.
        text = str(e).replace(RIDGE_ADVICE, ",") if method == "ridge" else str(e)
        raise WorkflowError(f"the data do not identify the base parameters: {text}") from None


def outlier_free(robot, scr, outliers: str):
    """The held rows (indices) of the samples the screened fit kept, None when it dropped none."""
    if not (scr.outliers and outliers == "drop"):
        return None
    return (np.asarray(scr.samples)[:, None] * robot.n + np.arange(robot.n)).ravel()


def screening_record(prepared: Prepared, rows: Rows, scr) -> Screening:
    """The [`Screening`][jaxid.workflow.records.Screening] of a screened fit."""
    return Screening(
        message=scr.message,
        method=scr.method,
        outlier_samples=[int(r) for r in np.asarray(scr.outliers.rows)] if scr.outliers else [],
        reversal_bands=[c.get("reversal_band") for c in prepared.choices],
        reversals_dropped=int(np.sum(~rows.moving)),
    )

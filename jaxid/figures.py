"""matplotlib, loaded on demand: the Agg backend and PNG output shared by every figure of jaxid
(the report's, the excitation preview's), so that modules of any layer can draw without importing
the report."""

from __future__ import annotations

import io
from typing import Any

INSTALL_HINT = "pip install 'jaxid[report]'"


def pyplot() -> Any:
    """matplotlib.pyplot on the non-interactive Agg backend, or an ImportError whose one-line
    message names the extra to install."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"figures and reports need matplotlib: {INSTALL_HINT}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, path: Any = None) -> bytes:
    """PNG bytes of a matplotlib figure (closed), also written to ``path`` when given."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    pyplot().close(fig)
    data = buf.getvalue()
    if path is not None:
        from jaxid.atomic import atomic_write

        with atomic_write(path, "wb") as fh:
            fh.write(data)
    return data


# --------------------------------------------------------------- figures for print (SVG, PDF)
#: matplotlib settings of the figures for print ([`print_style`][jaxid.figures.print_style]): every text at least
#: 9 pt at the figure's own size (its size in inches is its printed size: 7 in a page width,
#: 3.5 in a column), kept as text in the SVG (``svg.fonttype`` none) and as TrueType in the PDF
#: (``pdf.fonttype`` 42, editable and searchable), stable ids in the SVG.
PRINT_RC: dict[str, Any] = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "figure.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.0,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "legend.frameon": False,
    "svg.fonttype": "none",
    "svg.hashsalt": "jaxid",
    "pdf.fonttype": 42,
    "savefig.dpi": 300,  # the rasterised scatter clouds only; the rest is vector
}

#: At most this many points of a line or a scatter cloud per panel (a uniform stride): a print
#: figure shows the shape of 35 000 samples as well with this many, in a fraction of the bytes.
MAX_POINTS = 2500


def print_style() -> Any:
    """A context (``with print_style(): ...``) in which figures for print are drawn and saved."""
    import matplotlib

    pyplot()  # the Agg backend
    return matplotlib.rc_context(PRINT_RC)


def save_vector(fig: Any) -> dict[str, bytes]:
    """{"svg": bytes, "pdf": bytes} of a figure drawn under [`print_style`][jaxid.figures.print_style] (closed after)."""
    out = {}
    with print_style():
        for fmt in ("svg", "pdf"):
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else {"CreationDate": None})
            out[fmt] = buf.getvalue()
    pyplot().close(fig)
    return out


def _stride(n: int, most: int = MAX_POINTS) -> slice:
    return slice(None, None, max(1, -(-n // most)))


def _grid(n: int, cols: int = 3, width: float = 7.0, height: float = 1.9) -> tuple[Any, list]:
    """A figure of n small panels, ``cols`` a row, 7 in wide; unused panels removed; fixed margins
    in inches (no layout engine: it would draw every panel once more to measure it)."""
    plt = pyplot()
    cols = min(n, cols)
    rows = -(-n // cols)
    fig_h = rows * height + 0.25
    fig, axes = plt.subplots(rows, cols, figsize=(width, fig_h), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.remove()
    fig.subplots_adjust(
        left=0.7 / width, right=1 - 0.1 / width, bottom=0.5 / fig_h, top=1 - 0.3 / fig_h, wspace=0.45, hspace=0.75
    )
    return fig, flat[:n]


def _plain_log_ticks(axis: Any) -> None:
    """Decades of a log axis as plain text (1e-05, 0.001, 10): matplotlib's default 10^k is
    mathtext, whose exponent is set smaller than the 9 pt of the rest."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def parameter_chart(labels: Any, estimate: Any, std: Any, truth: Any = None, n_sigma: float = 2.0) -> Any:
    """Figure: each base parameter's estimate with its ±``n_sigma``σ interval, divided by |estimate|
    (so every estimate sits at ±1 and the bar's half-length is the relative std times n_sigma; a bar
    that crosses 0 marks a parameter the data do not determine, drawn grey), the true value where
    known; one row per parameter, labelled ``labels`` (b,). The axis is cut at ±3."""
    import numpy as np

    estimate, std = np.asarray(estimate, dtype=float), np.asarray(std, dtype=float)
    b = len(estimate)
    scale = np.maximum(np.abs(estimate), 1e-300)
    x, half = estimate / scale, n_sigma * std / scale
    ok = np.abs(estimate) >= n_sigma * std
    longest = max([len(str(s)) for s in labels] + [4])
    left = min(3.0, 0.3 + 0.065 * longest)
    width, height = left + 3.6, 0.9 + 0.17 * b
    with print_style():
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(width, height))
        y = np.arange(b)
        for mask, color, label in ((ok, "k", "determined"), (~ok, "0.6", f"|estimate| < {n_sigma:g}σ")):
            if mask.any():
                ax.errorbar(
                    np.clip(x[mask], -3, 3),
                    y[mask],
                    xerr=np.minimum(half[mask], 6),
                    fmt="o",
                    ms=3,
                    color=color,
                    elinewidth=0.8,
                    capsize=1.5,
                    label=label,
                )
        if truth is not None:
            ax.plot(np.clip(np.asarray(truth, dtype=float) / scale, -3, 3), y, "x", color="C3", ms=4, label="true")
        ax.axvline(0, color="0.5", lw=0.6)
        ax.set_xlim(-3, 3)
        ax.set_ylim(b - 0.5, -0.5)
        ax.set_yticks(y)
        ax.set_yticklabels([str(s) for s in labels])
        ax.set_xlabel(f"value / |estimate|  (bars: ±{n_sigma:g}σ)")
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, borderaxespad=0.2)
        fig.subplots_adjust(left=left / width, right=1 - 0.15 / width, bottom=0.5 / height, top=1 - 0.35 / height)
    return fig


def correlation_chart(corr: Any, labels: Any = None) -> Any:
    """Figure: the correlation matrix (b, b) of the estimate, -1 (blue) to 1 (red); axes by
    parameter number (as in the tables), every k-th labelled so that the labels stay 9 pt."""
    import numpy as np

    corr = np.asarray(corr, dtype=float)
    b = len(corr)
    with print_style():
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(4.8, 4.0))
        im = ax.imshow(corr, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
        step = max(1, -(-b // 12))
        ticks = np.arange(0, b, step)
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(k + 1) for k in ticks])
        ax.set_yticks(ticks)
        ax.set_yticklabels([str(k + 1) for k in ticks])
        ax.set_xlabel("base parameter #")
        ax.set_ylabel("base parameter #")
        for s in ax.spines.values():
            s.set_visible(True)
        bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        bar.set_label("correlation")
        fig.subplots_adjust(left=0.12, right=0.86, bottom=0.12, top=0.97)
    return fig


def friction_chart(velocity: Any, torque: Any, curves: Any, names: Any, unit: str = "N m") -> Any:
    """Figure: per joint (small multiples), the friction torque the data show (points: the
    measured torque less the model's part other than friction) against the joint velocity, and the
    identified friction curve. velocity, torque: (N, n); curves: per joint (v, tau) arrays, or None
    for a joint without friction terms (its panel says so)."""
    import numpy as np

    velocity, torque = np.asarray(velocity, dtype=float), np.asarray(torque, dtype=float)
    n = velocity.shape[1]
    with print_style():
        fig, axes = _grid(n)
        s = _stride(len(velocity))
        for j, ax in enumerate(axes):
            ax.scatter(velocity[s, j], torque[s, j], s=1.5, color="0.55", lw=0, rasterized=True, label="data")
            if curves[j] is not None:
                ax.plot(*curves[j], color="C3", lw=1.4, label="identified")
            else:
                ax.text(0.5, 0.9, "no friction terms", transform=ax.transAxes, ha="center")
            ax.set_title(str(names[j]))
            ax.set_xlabel("velocity [rad/s]")
            ax.set_ylabel(f"torque [{unit}]")
        axes[0].legend(loc="upper left", markerscale=4, handlelength=1.2)
    return fig


def residual_chart(x: Any, residual: Any, names: Any, xlabel: str) -> Any:
    """Figure: per joint (small multiples), the torque residual measured - predicted (N, n) against
    x (N, n) (a joint's velocity or position), with the residual's median in 20 bins of x (a
    trend there is structure the model misses)."""
    import numpy as np

    x, residual = np.asarray(x, dtype=float), np.asarray(residual, dtype=float)
    n = x.shape[1]
    with print_style():
        fig, axes = _grid(n)
        s = _stride(len(x))
        for j, ax in enumerate(axes):
            xj, rj = x[:, j], residual[:, j]
            ax.scatter(xj[s], rj[s], s=1.5, color="0.55", lw=0, rasterized=True)
            edges = np.linspace(np.min(xj), np.max(xj), 21)
            idx = np.clip(np.digitize(xj, edges) - 1, 0, 19)
            centres, med = [], []
            for k in range(20):
                sel = idx == k
                if sel.sum() >= 5:
                    centres.append(0.5 * (edges[k] + edges[k + 1]))
                    med.append(np.median(rj[sel]))
            ax.plot(centres, med, color="C0", lw=1.4)
            ax.axhline(0, color="k", lw=0.5)
            ax.set_title(str(names[j]))
            ax.set_xlabel(xlabel)
            ax.set_ylabel("residual [N m]")
    return fig


def spectrum_chart(t: Any, q: Any, names: Any) -> Any:
    """Figure: the amplitude spectrum of each joint's position q (N, n) sampled at t (N,) s
    (Hann window, mean removed), on a log axis, up to the frequency below which 99.9 % of every
    joint's power lies (at least 5 bins): where the excitation puts its energy."""
    import numpy as np

    t, q = np.asarray(t, dtype=float), np.asarray(q, dtype=float)
    N, n = q.shape
    dt = float(np.median(np.diff(t))) if N > 1 else 1.0
    w = np.hanning(N)
    amp = np.abs(np.fft.rfft((q - q.mean(axis=0)) * w[:, None], axis=0)) * 2 / max(w.sum(), 1e-300)
    f = np.fft.rfftfreq(N, dt)
    power = np.cumsum(amp**2, axis=0)
    top = max(5, *(int(np.searchsorted(power[:, j], 0.999 * power[-1, j])) + 1 for j in range(n)))
    top = min(len(f), int(1.3 * top) + 2)
    with print_style():
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5.6, 3.0))
        for j in range(n):
            ax.semilogy(f[1:top], amp[1:top, j], "o-", ms=2.5, lw=0.9, label=str(names[j]))
        floor = max(float(amp[1:top].max()) * 1e-5, 1e-300)
        ax.set_ylim(bottom=floor)
        _plain_log_ticks(ax.yaxis)
        ax.set_xlabel("frequency [Hz]")
        ax.set_ylabel("amplitude of q [rad]")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), handlelength=1.5)
        fig.subplots_adjust(left=0.14, right=0.72, bottom=0.16, top=0.96)
    return fig


def prediction_chart(t: Any, measured: Any, predicted: Any, names: Any, nrmse: Any = None) -> Any:
    """Figure: per joint (one panel a row, a shared time axis), the measured torque (black) and the
    predicted one (orange) of a run (N, n) at t (N,) s, each panel titled with its NRMSE (%) when
    given."""
    import numpy as np

    t, real, pred = (np.asarray(a, dtype=float) for a in (t, measured, predicted))
    n = real.shape[1]
    width, height = 7.0, 0.55 + 1.25 * n
    with print_style():
        plt = pyplot()
        fig, axes = plt.subplots(n, 1, figsize=(width, height), sharex=True, squeeze=False)
        s = _stride(len(t))
        for j, ax in enumerate(axes[:, 0]):
            ax.plot(t[s], real[s, j], color="k", lw=0.7, label="measured")
            ax.plot(t[s], pred[s, j], color="C1", lw=1.0, label="predicted")
            title = str(names[j]) + ("" if nrmse is None or nrmse[j] is None else f": NRMSE {float(nrmse[j]):.3g} %")
            ax.set_title(title, loc="left")
            ax.set_ylabel("N m")
        axes[0, 0].legend(loc="upper right", ncol=2, bbox_to_anchor=(1, 1.35))
        axes[-1, 0].set_xlabel("t [s]")
        fig.subplots_adjust(
            left=0.8 / width, right=1 - 0.1 / width, bottom=0.45 / height, top=1 - 0.3 / height, hspace=0.6
        )
    return fig

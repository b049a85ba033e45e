"""Figures (matplotlib) and a Markdown + JSON report of an identification experiment."""
from __future__ import annotations

import json
import os
from typing import Sequence

import numpy as np

METRIC_KEYS = ("rmse", "nrmse", "r2", "wape", "max_pe")
METRIC_HEADERS = ("RMSE [N m]", "NRMSE [%]", "R2", "WAPE [%]", "maxPE [%]")


def parameter_table(names: Sequence[str], estimate, std, truth=None, width=None, indent="") -> str:
    """Plain-text table of b parameters (estimate, std, truth: (b,) arrays, truth optional):
    readable name (in full unless ``width`` cuts it), estimate, std and relative std (%), and if
    the truth is known the true value and the error in standard deviations,
    |estimate - true| / std (about 1 when the std is honest; a relative error would explode on
    the many near-zero base parameters). ``indent`` starts every line."""
    width = max([len("base parameter")] + [len(n) for n in names]) if width is None else width
    head = f"{'#':>3}  {'base parameter':<{width}} {'estimate':>12} {'std':>10} {'std %':>8}"
    head += f" {'true':>12} {'err/std':>8}" if truth is not None else ""
    lines = [head, "-" * len(head)]
    estimate, std = np.asarray(estimate), np.asarray(std)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_std = 100 * std / np.abs(estimate)
        err = None if truth is None else np.abs(estimate - np.asarray(truth)) / std
    for i, name in enumerate(names):
        short = name if len(name) <= width else name[: width - 3] + "..."
        line = f"{i + 1:>3}  {short:<{width}} {estimate[i]:>12.5g} {std[i]:>10.3g} {rel_std[i]:>8.2f}"
        if truth is not None:
            line += f" {truth[i]:>12.5g} {err[i]:>8.2f}"
        lines.append(line)
    return "\n".join(indent + line for line in lines)


def metrics_table(metrics: dict, joint_names: Sequence[str]) -> str:
    """Plain-text table of per-joint validation metrics (``jaxid.metrics.summary`` output)."""
    head = f"{'joint':<14}" + "".join(f"{h:>13}" for h in METRIC_HEADERS)
    lines = [head, "-" * len(head)]
    for j, name in enumerate(joint_names):
        lines.append(f"{name:<14}" + "".join(f"{float(np.asarray(metrics[k]['per_joint'])[j]):>13.4g}" for k in METRIC_KEYS))
    lines.append(f"{'overall':<14}" + "".join(f"{float(metrics[k]['overall']):>13.4g}" for k in METRIC_KEYS))
    return "\n".join(lines)


def _markdown_table(text: str) -> str:
    rows = [r for r in text.splitlines() if not set(r) <= {"-"}]
    return "```\n" + "\n".join(rows) + "\n```"


def torque_figure(path, t, tau_measured, tau_predicted, joint_names, title=None):
    """PNG at path: measured vs predicted torque per joint, each with the error
    measured - predicted in a panel below it (invisible at the torque scale).

    t: (N,) s; tau_measured, tau_predicted: (N, n) N m.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = tau_measured.shape[1]
    fig, axes = plt.subplots(2 * n, 1, figsize=(9, 2.3 * n + 0.3), sharex=True, height_ratios=[3, 1] * n)
    for j in range(n):
        ax, err_ax = axes[2 * j], axes[2 * j + 1]
        ax.plot(t, tau_measured[:, j], lw=0.6, color="0.6", label="measured")
        ax.plot(t, tau_predicted[:, j], lw=0.9, color="C0", label="predicted")
        ax.set_ylabel(f"{joint_names[j]}\n[N m]", fontsize=8)
        err_ax.plot(t, tau_measured[:, j] - tau_predicted[:, j], lw=0.4, color="C3")
        err_ax.set_ylabel("error", fontsize=7, color="C3")
        err_ax.tick_params(axis="y", labelsize=7)
    axes[0].legend(loc="upper right", fontsize=8)
    if title:
        axes[0].set_title(title, fontsize=9)
    axes[-1].set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parameter_figure(out_dir, estimate, std, truth=None) -> list[str]:
    """parameters.png in out_dir: estimates with 3-sigma error bars (and the truth) normalised by
    |estimate|, the axis cut at +-5 so that the few poorly excited parameters do not flatten the
    rest. estimate, std, truth: (b,). Returns the file names written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    estimate, std = np.asarray(estimate), np.asarray(std)
    scale = np.maximum(np.abs(estimate), 1e-12)
    k = np.arange(len(estimate))
    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.errorbar(k, estimate / scale, yerr=3 * std / scale, fmt="o", ms=3, label="estimate ± 3σ")
    if truth is not None:
        ax.plot(k, np.asarray(truth) / scale, "x", color="C3", label="truth")
    ax.set_xlabel("base parameter")
    ax.set_ylabel("value / |estimate|")
    ax.set_ylim(-5, 5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "parameters.png"), dpi=110)
    plt.close(fig)
    return ["parameters.png"]


def to_jsonable(x):
    """Arrays -> lists, numpy scalars -> floats, recursively."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if hasattr(x, "shape"):
        a = np.asarray(x)
        return a.tolist() if a.ndim else a.item()
    return x


def write(out_dir, title: str, sections: dict[str, str], data: dict, figure_files: Sequence[str] = ()) -> dict:
    """Write ``report.md`` (title, text sections, figures) and ``result.json`` (data) into out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    md = [f"# {title}", ""]
    for heading, text in sections.items():
        md += [f"## {heading}", "", _markdown_table(text) if "\n" in text and "  " in text else text, ""]
    for f in figure_files:
        md += [f"![{f}]({f})", ""]
    paths = dict(markdown=os.path.join(out_dir, "report.md"), json=os.path.join(out_dir, "result.json"))
    from jaxid.atomic import atomic_write

    with atomic_write(paths["markdown"]) as fh:
        fh.write("\n".join(md))
    with atomic_write(paths["json"]) as fh:
        json.dump(to_jsonable(data), fh, indent=1)
    return paths

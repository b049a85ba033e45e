"""Reports a person reads: parameter tables with units and flags, figures, and
``report.html`` + ``report.md`` of an identification ([`write_report`][jaxid.report.write_report]).

Two kinds of figure. The figures for print ([`print_figures`][jaxid.report.print_figures]: parameters ± 2σ, their
correlation, friction, residuals vs velocity and position, the excitation's spectrum, the
held-out prediction) are drawn by [`jaxid.figures`][jaxid.figures] at their printed size with text of at
least 9 pt and saved as ``figures/NAME.svg`` and ``.pdf`` (text kept as text; the point clouds
rasterised, so that 35 000 samples stay a few hundred kB); the page shows the SVG inline. The
diagnostics on screen (the torque trace with a zoom, residual histograms, singular values,
convergence) are PNG: a torque trace has N x n points (35 000 for a KUKA run), as SVG megabytes
of path data for the browser to lay out, as PNG about 100 kB whatever N. ``report.html`` is one
self-contained file (figures inline, base64); its Markdown twin ``report.md`` refers to the files
in ``figures/``, which GitHub, an editor or mkdocs renders with its real Markdown tables.
matplotlib is the optional ``report`` extra (``pip install 'jaxid[report]'``), imported only when
a figure is drawn: [`pyplot`][jaxid.figures.pyplot] says so in one line when it is missing.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import math
import os
import re
import shlex
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxid.figures import INSTALL_HINT, pyplot  # noqa: F401 (pyplot: the CLI checks for matplotlib through it)
from jaxid.figures import save_png as _save
from jaxid.workflow.check import (  # noqa: F401  (the report's flags, named here as before)
    FLAG_FRICTION,
    FLAG_INERTIA,
    FLAG_MASS,
    FLAG_STIFFNESS,
    FLAG_UNIDENTIFIED,
    _split_name,
    at_bound,
    parameter_flags,
)
from jaxid.workflow.commands import jsonable
from jaxid.workflow.preprocess import describe_run
from jaxid.workflow.validation import NRMSE_FACTOR, R2_MIN, joint_flags
from jaxid.workflow.verdicts import verdict_lines

#: Validation metrics in tables: (key, header, format); ``nrms_limits`` where the model has torque limits.
METRIC_COLUMNS = (
    ("rmse", "RMSE [N m]", ".4g"),
    ("nrmse", "NRMSE [%]", ".3g"),
    ("r2", "R²", ".4f"),
    ("wape", "WAPE [%]", ".3g"),
    ("max_pe", "max PE [%]", ".3g"),
    ("nrms_limits", "NRMS lim [%]", ".3g"),
)

#: Units of each kind of standard parameter (``jaxid.model.inertia.INERTIAL_NAMES``, then the
#: joint terms of ``jaxid.friction.models``): (revolute joint, prismatic joint). A base
#: parameter has the unit of its leading standard parameter (every term of the combination
#: has it: the coefficients carry lengths).
UNITS = {
    "m": ("kg", "kg"),
    "mx": ("kg m", "kg m"),
    "my": ("kg m", "kg m"),
    "mz": ("kg m", "kg m"),
    **{k: ("kg m²", "kg m²") for k in ("Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")},
    "ia": ("kg m²", "kg"),
    "fv": ("N m s/rad", "N s/m"),
    "fc": ("N m", "N"),
    "fs": ("N m", "N"),
    "fva": ("N m s/rad", "N s/m"),
    "offset": ("N m", "N"),
    "ks": ("N m/rad", "N/m"),
}


def parameter_unit(name: str, joint_types: Sequence[str] | None = None) -> str:
    """Unit of a standard or base parameter ``name`` (a base combination has the unit of its
    leading parameter), for revolute joints unless ``joint_types`` ('R'/'P' per joint) says
    the joint is prismatic. "" for a name of no known kind."""
    kind, joint = _split_name(name.split(" ", 1)[0])
    units = UNITS.get(kind)
    if units is None:
        return ""
    prismatic = joint_types is not None and joint <= len(joint_types) and joint_types[joint - 1] == "P"
    return units[1] if prismatic else units[0]


def parameter_table(names: Sequence[str], estimate, std, truth=None, width=None, indent="", at_bound=None) -> str:
    """Plain-text table of b parameters (estimate, std, truth: (b,) arrays, truth optional):
    readable name (in full unless ``width`` cuts it), estimate, std and relative std (%), and if
    the truth is known the true value and the error in standard deviations,
    |estimate - true| / std (about 1 when the std is honest; a relative error would explode on
    the many near-zero base parameters). ``indent`` starts every line. ``at_bound`` (b,) bool:
    estimates held at their bound 0 by a consistent fit (``jaxid.workflow.check.at_bound``), shown
    as "at 0" in place of a std."""
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
        if at_bound is not None and at_bound[i]:
            line = f"{i + 1:>3}  {short:<{width}} {estimate[i]:>12.5g} {'at bound':>10} {'0':>8}"
        else:
            line = f"{i + 1:>3}  {short:<{width}} {estimate[i]:>12.5g} {std[i]:>10.3g} {rel_std[i]:>8.2f}"
        if err is not None:  # with the truth
            line += f" {truth[i]:>12.5g} {err[i]:>8.2f}"
        lines.append(line)
    return "\n".join(indent + line for line in lines)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A Markdown (GitHub / Python-Markdown ``tables``) table: one header row, a rule, the
    rows; cells are text with the Markdown specials (backslash, *, _, | and backtick) escaped, so that a name
    like ``Izz1 + 0.18*m2`` shows as written. Numbers right-aligned."""
    esc = lambda c: re.sub(r"([\\*_|`])", r"\\\1", str(c))
    numeric = [bool(rows) and all(_is_number(r[i]) for r in rows) for i in range(len(headers))]
    rule = ["---:" if num else "---" for num in numeric]
    lines = ["| " + " | ".join(esc(h) for h in headers) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _is_number(cell) -> bool:
    try:
        float(str(cell).replace("−", "-"))
        return True
    except ValueError:
        return cell in ("", "-")


def _fmt(x, spec: str) -> str:
    return "-" if x is None or not math.isfinite(float(x)) else format(float(x), spec)


PARAMETER_HEADERS = ("#", "base parameter", "unit", "value", "std", "std [%]", "flag")


def parameter_rows(params, *, joint_types: Sequence[str] | None = None, truth=None) -> tuple[tuple, list]:
    """(headers, rows) of the base-parameter table of ``params``: number (1-based, the order
    of ``params.theta``), the full base combination, its unit ([`parameter_unit`][jaxid.report.parameter_unit]),
    value, std, relative std 100 std/|value| (%), and the [`parameter_flags`][jaxid.workflow.check.parameter_flags]; with
    ``truth`` (b,) also the true value and |value - true| / std."""
    theta, std = np.asarray(params.theta, dtype=float), np.asarray(params.std, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100 * std / np.abs(theta)
        err = None if truth is None else np.abs(theta - np.asarray(truth, dtype=float)) / std
    flags = parameter_flags(params)
    bound = at_bound(params)
    lead = [params.parameter_names[int(i)] for i in np.asarray(params.base.indices)]
    headers = PARAMETER_HEADERS + (() if truth is None else ("true", "|err|/std"))
    rows = []
    for k, name in enumerate(params.base.names):
        row = [
            k + 1,
            name,
            parameter_unit(lead[k], joint_types),
            _fmt(theta[k], ".6g"),
            "at bound" if bound[k] else _fmt(std[k], ".3g"),
            "-" if bound[k] else _fmt(rel[k], ".3g"),
            "; ".join(flags[k]),
        ]
        if err is not None:  # with the truth
            row += [_fmt(truth[k], ".6g"), _fmt(err[k], ".2f")]
        rows.append(row)
    return headers, rows


def metrics_rows(metrics: dict, joint_names: Sequence[str]) -> tuple[tuple, list]:
    """(headers, rows) of per-joint validation metrics (``jaxid.workflow.validation_metrics``
    output, one run), a row per joint (its number from 1 beside its name, as the messages name it)
    and one ``overall``; the columns of METRIC_COLUMNS that ``metrics`` holds."""
    cols = [c for c in METRIC_COLUMNS if c[0] in metrics]
    rows = [
        [f"{j + 1} ({name})"] + [_fmt(metrics[k]["per_joint"][j], f) for k, _, f in cols]
        for j, name in enumerate(joint_names)
    ]
    rows.append(["overall"] + [_fmt(metrics[k]["overall"], f) for k, _, f in cols])
    return ("joint",) + tuple(h for _, h, _ in cols), rows


# ----------------------------------------------------------------------------- figures
def torque_figure(path, t, tau_measured, tau_predicted, joint_names, title=None, zoom: float = 0.1) -> bytes:
    """PNG (bytes, and written to ``path`` unless None): per joint, the predicted torque with
    the measured one drawn on top of it (a thin dark line, points in the zoom), the error
    measured - predicted below, and on the right a zoom on ``zoom`` of the run (at least 20
    samples) centred on that joint's largest error.

    t: (N,) s; tau_measured, tau_predicted: (N, n) N m.
    """
    plt = pyplot()
    t, real, pred = (np.asarray(a, dtype=float) for a in (t, tau_measured, tau_predicted))
    N, n = real.shape
    err = real - pred
    half = max(10, int(zoom * N) // 2)
    fig, axes = plt.subplots(
        2 * n, 2, figsize=(11, 2.3 * n + 0.4), height_ratios=[3, 1] * n, width_ratios=[3, 1], squeeze=False
    )
    for j in range(n):
        ax, zax = axes[2 * j]
        eax, ezax = axes[2 * j + 1]
        c = int(np.argmax(np.abs(err[:, j])))
        w = slice(max(0, c - half), min(N, c + half))
        ax.plot(t, pred[:, j], lw=1.8, color="C1", alpha=0.8, label="predicted")
        ax.plot(t, real[:, j], lw=0.5, color="k", label="measured", zorder=3)
        ax.axvspan(t[w][0], t[w][-1], color="0.85", zorder=0)
        zax.plot(t[w], pred[w, j], lw=1.8, color="C1", alpha=0.8)
        zax.plot(t[w], real[w, j], ".", ms=2.5, color="k", zorder=3)
        eax.plot(t, err[:, j], lw=0.5, color="C3")
        ezax.plot(t[w], err[w, j], lw=0.8, color="C3")
        ax.set_ylabel(f"{joint_names[j]}\ntorque [N m]", fontsize=8)
        eax.set_ylabel("error\n[N m]", fontsize=7)
        for a in (ax, zax, eax, ezax):
            a.tick_params(labelsize=7)
        zax.set_title(f"zoom: largest error, t = {t[c]:.3g} s", fontsize=7)
    axes[0, 0].legend(loc="upper right", fontsize=7)
    axes[-1, 0].set_xlabel("t [s]")
    axes[-1, 1].set_xlabel("t [s]")
    if title:
        fig.suptitle(title, fontsize=9)
    # Margins in inches, fixed: tight_layout would draw the 4n axes once more only to measure them.
    height = fig.get_figheight()
    fig.subplots_adjust(
        left=0.075, right=0.985, bottom=0.5 / height, top=1 - (0.5 if title else 0.3) / height, wspace=0.18, hspace=0.55
    )
    return _save(fig, path)


def residual_figure(path, tau_measured, tau_predicted, joint_names, title=None) -> bytes:
    """PNG (bytes, written to ``path`` unless None): a histogram per joint of the torque error
    measured - predicted (N m) with the normal density of the same mean and std.
    tau_measured, tau_predicted: (N, n) N m."""
    plt = pyplot()
    err = np.asarray(tau_measured, dtype=float) - np.asarray(tau_predicted, dtype=float)
    n = err.shape[1]
    cols = min(n, 4)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.9 * cols, 2.3 * rows + 0.3), squeeze=False)
    for j, ax in enumerate(axes.ravel()):
        if j >= n:
            ax.axis("off")
            continue
        e = err[:, j]
        mu, sd = float(np.mean(e)), float(np.std(e))
        ax.hist(e, bins=40, density=True, color="C0", alpha=0.7)
        if sd > 0:
            x = np.linspace(e.min(), e.max(), 200)
            ax.plot(x, np.exp(-0.5 * ((x - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi)), color="k", lw=0.8)
        ax.set_title(f"{joint_names[j]}: RMS {math.sqrt(mu**2 + sd**2):.3g} N m", fontsize=8)
        ax.set_xlabel("measured − predicted [N m]", fontsize=7)
        ax.set_ylabel("density [1/(N m)]", fontsize=7)
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def singular_value_figure(path, singular_values, cond=None) -> bytes:
    """PNG (bytes, written to ``path`` unless None): the singular values (b,) of the base
    regressor, descending, on a log axis, the largest and smallest annotated and the
    condition number s_1 / s_b in the title."""
    plt = pyplot()
    s = np.asarray(singular_values, dtype=float)
    cond = s[0] / s[-1] if cond is None else cond
    k = np.arange(1, len(s) + 1)
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.semilogy(k, s, "o-", ms=3, lw=0.8)
    for i in (0, len(s) - 1):
        ax.annotate(f"s{k[i]} = {s[i]:.3g}", (k[i], s[i]), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xlabel("index k (descending)")
    ax.set_ylabel("singular value s_k")
    ax.set_title(
        f"singular values of the column-scaled base regressor; condition number s1/s{len(s)} = {cond:.4g}", fontsize=9
    )
    ax.grid(True, which="both", lw=0.3)
    fig.tight_layout()
    return _save(fig, path)


def convergence_figure(path, cost, gap_bound=None, converged=None, title="iterative fit") -> bytes:
    """PNG (bytes, written to ``path`` unless None): the convergence of an iterative fit, per
    iteration k, the cost minus its last value (how far each iterate still was from where the
    fit ended) and, when given, the solver's bound on cost - optimum (``gap_bound``), on a log
    axis, the verdict ``converged`` in the title. cost, gap_bound: (K,)."""
    plt = pyplot()
    cost = np.asarray(cost, dtype=float)
    k = np.arange(1, len(cost) + 1)
    fig, ax = plt.subplots(figsize=(8, 3))
    excess = cost - cost[-1]
    ax.semilogy(k[excess > 0], excess[excess > 0], "o-", ms=3, lw=0.8, label="cost - final cost")
    if gap_bound is not None:
        g = np.asarray(gap_bound, dtype=float)
        ok = np.isfinite(g) & (g > 0)
        ax.semilogy(k[ok], g[ok], "s--", ms=3, lw=0.8, label="bound on cost - optimum")
    ax.set_xlabel("iteration")
    ax.set_ylabel("cost units (whitened misfit)")
    verdict = "" if converged is None else (": converged" if converged else ": NOT converged")
    ax.set_title(f"{title}, final cost {cost[-1]:.6g}, {len(cost)} iterations{verdict}", fontsize=9)
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def parameter_figure(out_dir, estimate, std, truth=None) -> list[str]:
    """parameters.png in out_dir: estimates with 3-sigma error bars (and the truth) normalised by
    |estimate|, the axis cut at +-5 so that the few poorly excited parameters do not flatten the
    rest; the x axis is the parameter number of the tables (1-based); and for print
    parameters.svg and parameters.pdf ([`jaxid.figures.parameter_chart`][jaxid.figures.parameter_chart], ± 2σ). estimate,
    std, truth: (b,). Returns the file names of the figures for report.md (PNG and SVG)."""
    plt = pyplot()
    os.makedirs(out_dir, exist_ok=True)
    estimate, std = np.asarray(estimate), np.asarray(std)
    scale = np.maximum(np.abs(estimate), 1e-12)
    k = np.arange(1, len(estimate) + 1)
    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.errorbar(k, estimate / scale, yerr=3 * std / scale, fmt="o", ms=3, label="estimate ± 3σ")
    if truth is not None:
        ax.plot(k, np.asarray(truth) / scale, "x", color="C3", label="truth", zorder=3)
    ax.set_xlabel("base parameter # (as in the table)")
    ax.set_ylabel("value / |estimate|")
    ax.set_ylim(-5, 5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, os.path.join(out_dir, "parameters.png"))
    # For print: the same estimates, ± 2σ, one row per parameter (parameters.svg and .pdf).
    from jaxid.atomic import atomic_write
    from jaxid.figures import parameter_chart, save_vector

    for fmt, data in save_vector(parameter_chart([str(i) for i in k], estimate, std, truth)).items():
        with atomic_write(os.path.join(out_dir, f"parameters.{fmt}"), "wb") as fh:
            fh.write(data)
    return ["parameters.png", "parameters.svg"]


# ------------------------------------------------------------------------------ reports
class Document:
    """The content of a report as blocks, rendered to Markdown ([`markdown`][jaxid.report.Document.markdown]) and to one
    self-contained HTML page ([`html`][jaxid.report.Document.html]): headings, paragraphs, bullet lists, tables and
    PNG figures (files in ``figures/`` for the Markdown, inline base64 in the HTML)."""

    def __init__(self, title: str):
        self.title = title
        self.blocks: list[tuple[str, Any]] = []  # (kind, content): "h2", "p", "ul", "table", "figure"

    def heading(self, text):
        self.blocks.append(("h2", text))

    def text(self, text):
        self.blocks.append(("p", text))

    def bullets(self, items):
        self.blocks.append(("ul", list(items)))

    def table(self, headers, rows):
        self.blocks.append(("table", (tuple(headers), [list(r) for r in rows])))

    def figure(self, name: str, png: bytes, caption: str):
        self.blocks.append(("figure", (name, png, caption)))

    def vector_figure(self, name: str, fig, caption: str):
        """A figure for print: ``name``.svg and ``name``.pdf in ``figures/`` (the matplotlib
        Figure ``fig`` saved and closed now), the SVG shown on the page."""
        from jaxid.figures import save_vector

        self.blocks.append(("vector", (name, save_vector(fig), caption)))

    def code(self, text: str):
        self.blocks.append(("code", text))

    def figure_files(self) -> list[str]:
        """The file names (in ``figures/``) of the document's figures: PNG, SVG and PDF."""
        out = []
        for kind, b in self.blocks:
            out += [b[0]] if kind == "figure" else [f"{b[0]}.svg", f"{b[0]}.pdf"] if kind == "vector" else []
        return out

    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for kind, b in self.blocks:
            if kind == "h2":
                out += [f"## {b}", ""]
            elif kind == "p":
                out += [b, ""]
            elif kind == "ul":
                out += [f"- {item}" for item in b] + [""]
            elif kind == "table":
                out += [markdown_table(*b), ""]
            elif kind == "code":
                out += ["    " + line for line in b.splitlines()] + [""]
            elif kind == "vector":
                name, _, caption = b
                out += [f"![{caption}](figures/{name}.svg)", "", f"*{caption}* ([PDF](figures/{name}.pdf))", ""]
            else:
                name, _, caption = b
                out += [f"![{caption}](figures/{name})", "", f"*{caption}*", ""]
        return "\n".join(out)

    def html(self) -> str:
        e = html.escape
        out = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{e(self.title)}</title>",
            f"<style>{_CSS}</style></head><body>",
            f"<h1>{e(self.title)}</h1>",
        ]
        for kind, b in self.blocks:
            if kind == "h2":
                out.append(f"<h2>{e(b)}</h2>")
            elif kind == "p":
                out.append(f"<p>{e(b)}</p>")
            elif kind == "ul":
                out.append("<ul>" + "".join(f"<li>{e(str(i))}</li>" for i in b) + "</ul>")
            elif kind == "table":
                headers, rows = b
                num = [all(_is_number(r[i]) for r in rows) for i in range(len(headers))]
                cell = lambda tag, c, i: f"<{tag}{' class=num' if num[i] else ''}>{e(str(c))}</{tag}>"
                out.append(
                    "<table><thead><tr>"
                    + "".join(cell("th", h, i) for i, h in enumerate(headers))
                    + "</tr></thead><tbody>"
                    + "".join("<tr>" + "".join(cell("td", c, i) for i, c in enumerate(r)) + "</tr>" for r in rows)
                    + "</tbody></table>"
                )
            elif kind == "code":
                out.append(f"<pre><code>{e(b)}</code></pre>")
            elif kind == "vector":
                name, data, caption = b
                src = "data:image/svg+xml;base64," + base64.b64encode(data["svg"]).decode("ascii")
                out.append(
                    f'<figure class="print"><img src="{src}" alt="{e(caption)}" data-name="{e(name)}.svg">'
                    f'<figcaption>{e(caption)} <a href="figures/{e(name)}.svg">SVG</a> '
                    f'<a href="figures/{e(name)}.pdf">PDF</a></figcaption></figure>'
                )
            else:
                name, png, caption = b
                src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
                out.append(
                    f'<figure><img src="{src}" alt="{e(caption)}" data-name="{e(name)}">'
                    f"<figcaption>{e(caption)}</figcaption></figure>"
                )
        out.append("</body></html>")
        return "\n".join(out)

    def write(self, out_dir) -> dict:
        """Write ``report.md``, ``report.html`` and ``figures/*.png`` (``figures``), the figures
        for print ``figures/*.svg`` and ``*.pdf`` (``vector``) into out_dir (atomically, each
        file); returns their paths."""
        from jaxid.atomic import atomic_write

        os.makedirs(os.path.join(out_dir, "figures"), exist_ok=True)
        figures, vector = [], []
        for kind, b in self.blocks:
            if kind == "figure":
                files = [(b[0], b[1])]
                figures.append(os.path.join(out_dir, "figures", b[0]))
            elif kind == "vector":
                files = [(f"{b[0]}.{fmt}", data) for fmt, data in b[1].items()]
                vector += [os.path.join(out_dir, "figures", f) for f, _ in files]
            else:
                continue
            for f, data in files:
                with atomic_write(os.path.join(out_dir, "figures", f), "wb") as fh:
                    fh.write(data)
        paths = {"html": os.path.join(out_dir, "report.html"), "markdown": os.path.join(out_dir, "report.md")}
        with atomic_write(paths["markdown"]) as fh:
            fh.write(self.markdown())
        with atomic_write(paths["html"]) as fh:
            fh.write(self.html())
        return {**paths, "figures": figures, "vector": vector}


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}"
    "table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0 1rem}"
    "th,td{border:1px solid #ccc;padding:.2rem .45rem;text-align:left}td.num,th.num{text-align:right}"
    "thead{background:#f2f2f2}img{max-width:100%}figure{margin:1rem 0}figcaption{font-size:.85rem;color:#555}"
    # a long command line wraps instead of hiding past the page's edge (a copy still gives it whole)
    "figure.print img{width:auto;height:auto}pre{background:#f6f6f6;padding:.5rem;white-space:pre-wrap;"
    "overflow-wrap:anywhere}"
)

FLAG_LEGEND = (
    f"flag: {FLAG_MASS}, {FLAG_INERTIA}, {FLAG_FRICTION}, {FLAG_STIFFNESS}: the value is < 0 although "
    "the base parameter is a positive combination of quantities that are >= 0 for a physical robot "
    "(masses, diagonal moments of inertia, rotor inertia, friction, a passive spring's stiffness), or its link's standard parameters are not a "
    f"physical body; {FLAG_UNIDENTIFIED}: |value| < 2 std."
)

#: Fields of an iterative (consistent) fit (``Params.consistency``), with their meaning.
CONVERGENCE_FIELDS = (
    ("converged", "converged"),
    ("steps", "iterations"),
    ("grad_norm", "gradient norm at the end"),
    ("cost", "cost"),
    ("gap_bound", "bound on cost - optimum"),
    ("rss", "residual sum of squares"),
    ("sdp_cost", "SDP optimum (--sdp-check)"),
    ("sdp_gap", "cost / SDP optimum - 1"),
    ("prior_weight", "prior weight"),
)


def worst_joint_line(run: dict, joint_names: Sequence[str]) -> str:
    """One line that a run's overall number cannot hide: its relative error and its worst joint
    by NRMSE (with that joint's R²), and how many joints [`joint_flags`][jaxid.workflow.validation.joint_flags] flags."""
    nrmse = [math.nan if v is None else float(v) for v in run.get("nrmse", {}).get("per_joint", [])]
    r2 = run.get("r2", {}).get("per_joint", [])
    line = f"relative error ||e|| / ||tau|| = {_fmt(run.get('relative_error'), '.3g')} %"
    finite = [v for v in nrmse if math.isfinite(v)]
    if finite:
        j = nrmse.index(max(finite))
        r = r2[j] if j < len(r2) else None
        line += (
            f"; worst joint {j + 1} ({joint_names[j]}): NRMSE {_fmt(nrmse[j], '.3g')} %, R² {_fmt(r, '.4g')}"
            f" (median of all joints {_fmt(float(np.median(finite)), '.3g')} %)"
        )
    flags = run["flagged"] if "flagged" in run else joint_flags(run, joint_names)
    if flags:
        line += f"; {len(flags)} joint{'s' if len(flags) > 1 else ''} flagged"
    return line


def joint_rows(run: dict, joint_names: Sequence[str]) -> tuple[tuple, list]:
    """(headers, rows) of a run's per-joint metrics ([`metrics_rows`][jaxid.report.metrics_rows]) with a last column
    ``flag``: why [`joint_flags`][jaxid.workflow.validation.joint_flags] flags the joint (NRMSE far above the others', low R²)."""
    headers, rows = metrics_rows(run, joint_names)
    flags = run["flagged"] if "flagged" in run else joint_flags(run, joint_names)
    why = {f["joint"]: f.get("why", f["line"]) for f in flags}
    for j, row in enumerate(rows[:-1]):
        w = why.get(j + 1, "")
        row.append("FLAGGED: " + ("; ".join(w) if isinstance(w, list) else str(w)) if w else "")
    rows[-1].append("")
    return headers + ("flag",), rows


def _named(params, kind: str, joint: int) -> float | None:
    """The value of the joint term ``kind`` of joint ``joint`` (1-based): the base parameter of
    that name alone (as joint terms are), else the consistent standard parameters' value, else None."""
    for name in (f"{kind}{joint}", f"{kind}_m{joint}"):
        if name in params.base.names:
            return float(np.asarray(params.theta)[params.base.names.index(name)])
        if params.standard is not None and name in params.parameter_names:
            return float(np.asarray(params.standard)[params.parameter_names.index(name)])
    return None


#: The static joint terms the friction figure draws (``jaxid.friction.models``).
FRICTION_KINDS = ("fv", "fc", "fs", "fva", "offset")


def friction_torque(params, joint: int, qd) -> np.ndarray | None:
    """The identified static friction torque (``jaxid.friction.models``: viscous, Coulomb with the
    model's smooth sign, Stribeck excess, asymmetric viscous, offset) of joint ``joint`` (1-based)
    at velocities qd (N m for a revolute joint); None when the joint has no friction terms."""
    values = {k: _named(params, k, joint) for k in FRICTION_KINDS}
    if all(v is None for k, v in values.items() if k != "offset"):
        return None
    v = {k: x or 0.0 for k, x in values.items()}
    qd = np.asarray(qd, dtype=float)
    eps = float(params.model.get("coulomb_eps") or 1e-3)
    vs = float(params.model.get("stribeck_vs") or 0.1)
    sign = np.tanh(qd / eps)
    return (
        v["fv"] * qd + v["fc"] * sign + v["fs"] * sign * np.exp(-((qd / vs) ** 2)) + v["fva"] * qd * sign + v["offset"]
    )


BODY_HEADERS = ("link", "mass nominal [kg]", "mass identified [kg]", "ratio", "CoM nominal [mm]", "CoM identified [mm]")


def body_rows(params, nominal: dict | None = None) -> tuple[tuple, list]:
    """(headers, rows) of each link's body: mass and centre of mass (first moments / mass, in the
    link frame, mm), nominal (``nominal``: standard parameter name -> value, the model's) and
    identified (the physically consistent standard parameters ``params.standard``, "-" where the
    params hold none: base parameters alone do not determine the bodies)."""
    names = list(params.parameter_names)
    standard = None if params.standard is None else np.asarray(params.standard, dtype=float)
    links = sorted({int(m.group(1)) for m in (re.fullmatch(r"m(\d+)", x) for x in names) if m})

    def body(get, j):
        m = get(f"m{j}")
        if m is None:
            return None, None
        first = [get(f"{k}{j}") for k in ("mx", "my", "mz")]
        com = None if m <= 0 or None in first else [1000 * f / m for f in first]
        return m, com

    com_text = lambda c: "-" if c is None else "(" + ", ".join(f"{x:.1f}" for x in c) + ")"
    rows = []
    for j in links:
        mn, cn = body(lambda k: None if nominal is None else nominal.get(k), j)
        mi, ci = body(lambda k: None if standard is None else float(standard[names.index(k)]), j)
        ratio = mi / mn if mi is not None and mn else None
        rows.append([j, _fmt(mn, ".4g"), _fmt(mi, ".4g"), _fmt(ratio, ".3g"), com_text(cn), com_text(ci)])
    return BODY_HEADERS, rows


def _short_label(params, k: int) -> str:
    name = params.base.names[k]
    lead = name.split(" ", 1)[0]
    return f"{k + 1}  {lead}{' + …' if lead != name else ''}"


def print_figures(params, validation, *, joint_names: Sequence[str], held_out: bool = False) -> list[tuple]:
    """The report's figures for print, one message each: ``(name, matplotlib Figure, caption)``.

    parameters: base parameters ±2σ; correlation: the estimate's correlation matrix; friction:
    friction torque vs velocity, data and identified curve; residual_velocity, residual_position:
    torque residual vs each joint's velocity and position; spectrum (identification only): the
    amplitude spectrum of q of the identification data; prediction (``held_out``): measured vs
    predicted torque of the held-out run (one figure per run, ``prediction_2`` ... after the first).
    Figures that need q and qd (``validation.q``) are left out where the validation lacks them."""
    from jaxid import figures

    out = []
    theta, std = np.asarray(params.theta, dtype=float), np.asarray(params.std, dtype=float)
    labels = [_short_label(params, k) for k in range(len(theta))]
    out.append(
        (
            "parameters",
            figures.parameter_chart(labels, theta, std),
            "Base parameters: estimate ± 2σ, divided by |estimate| (every estimate at ±1; the bar's half-length is "
            "twice the relative std); grey: not determined by the data (|estimate| < 2σ). Numbers as in the table.",
        )
    )
    cov = np.asarray(params.cov, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.nan_to_num(cov / np.outer(std, std))
    out.append(
        (
            "correlation",
            figures.correlation_chart(corr),
            "Correlation matrix of the base-parameter estimate (from its covariance); strong off-diagonal colour "
            "marks pairs of parameters the data tell apart poorly.",
        )
    )
    runs = range(len(validation.runs))
    if validation.q and validation.qd and validation.runs:
        qd = np.concatenate([validation.qd[i] for i in runs])
        q = np.concatenate([validation.q[i] for i in runs])
        res = np.concatenate([validation.measured[i] - validation.predicted[i] for i in runs])
        n = res.shape[1]
        if qd.shape[1] == n:
            curves: list[tuple | None] = []
            points = np.empty_like(res)
            for j in range(n):
                f_data = friction_torque(params, j + 1, qd[:, j])
                if f_data is None:
                    curves.append(None)
                    points[:, j] = res[:, j]
                    continue
                v = np.linspace(float(qd[:, j].min()), float(qd[:, j].max()), 400)
                curves.append((v, friction_torque(params, j + 1, v)))
                points[:, j] = res[:, j] + f_data
            if any(c is not None for c in curves):
                out.append(
                    (
                        "friction",
                        figures.friction_chart(qd, points, curves, joint_names),
                        "Friction per joint: the measured torque less the model's predicted torque other than "
                        "friction (points) against the joint velocity, and the identified friction curve (red).",
                    )
                )
            out.append(
                (
                    "residual_velocity",
                    figures.residual_chart(qd, res, joint_names, "velocity [rad/s]"),
                    "Torque residual (measured - predicted) against each joint's velocity, with its median in 20 "
                    "velocity bins (blue): a trend is friction the model does not capture.",
                )
            )
            out.append(
                (
                    "residual_position",
                    figures.residual_chart(q, res, joint_names, "position [rad]"),
                    "Torque residual (measured - predicted) against each joint's position, with its median in 20 "
                    "position bins (blue): a trend is a position-dependent effect the model misses "
                    "(gravity, a spring, a cable).",
                )
            )
        if not held_out:
            out.append(
                (
                    "spectrum",
                    figures.spectrum_chart(validation.t[0], validation.q[0], joint_names),
                    f"Amplitude spectrum of the joint positions of the identification data "
                    f"({os.path.basename(str(validation.runs[0]['source']))}): the frequencies the excitation "
                    "puts its energy at.",
                )
            )
    if held_out:
        for i in runs:
            run = validation.runs[i]
            label = os.path.basename(str(run["source"]))
            out.append(
                (
                    "prediction" if i == 0 else f"prediction_{i + 1}",
                    figures.prediction_chart(
                        validation.t[i],
                        validation.measured[i],
                        validation.predicted[i],
                        joint_names,
                        run.get("nrmse", {}).get("per_joint"),
                    ),
                    f"Held-out run {label}: measured (black) and predicted (orange) torque per joint, "
                    "with each joint's NRMSE.",
                )
            )
    return out


def _run_label(run) -> str:
    return os.path.basename(str(run["source"]))


def identification_document(
    params,
    validation,
    *,
    joint_types: Sequence[str] | None = None,
    joint_names: Sequence[str] | None = None,
    title: str | None = None,
    held_out: bool = False,
    nominal: dict | None = None,
    command: Sequence[str] | None = None,
    vector_figures: bool = True,
) -> Document:
    """The report of an identification as a [`Document`][jaxid.report.Document].

    params: ``jaxid.workflow.Params`` (e.g. from ``jaxid.workflow.identify_experiment``).
    validation: ``jaxid.workflow.Validation`` of the torques the parameters predict, on the
        identification's own runs (``held_out=False``) or on held-out runs (``held_out=True``).
    joint_types: 'R'/'P' per joint for the units (default revolute); joint_names: for the
        tables and figures (default joint1..n). nominal: the model's standard parameters
        (name -> value) for the bodies' table; command: the command line that made the report
        (its Commands section); vector_figures: draw the figures for print ([`print_figures`][jaxid.report.print_figures]).
    Sections: the held-out result first (``held_out``), a summary that names the worst joint and
    the flagged ones, the per-joint table, the physics checks, the bodies (identified vs nominal),
    the figures for print, the base parameters (full names, units, value, std, relative std,
    flags), conditioning, the iterative fit's convergence (consistent fits), per run the torque
    diagnostics (measured vs predicted with a zoom, residual histograms: PNG), data preparation
    and the commands.
    """
    est, con = params.estimation, params.consistency
    get = lambda key, default=None: default if est is None else getattr(est, key)
    n = len(validation.measured[0][0]) if validation.measured else int(params.model.get("n") or 0)
    joint_names = list(joint_names or [f"joint{j + 1}" for j in range(n)])
    what = "held-out validation" if held_out else "identification"
    doc = Document(title or f"jaxid {what}: {params.model.get('name', 'robot')}")
    figs = print_figures(params, validation, joint_names=joint_names, held_out=held_out) if vector_figures else []
    by_name = {name: (fig, caption) for name, fig, caption in figs}

    def show(name):
        if name in by_name:
            fig, caption = by_name.pop(name)
            doc.vector_figure(name, fig, caption)

    def run_tables():
        for run in validation.runs:
            doc.text(f"{_run_label(run)}, {run['samples']} samples: {worst_joint_line(run, joint_names)}.")
            doc.table(*joint_rows(run, joint_names))
            flags = run["flagged"] if "flagged" in run else joint_flags(run, joint_names)
            doc.bullets(
                [f"flagged: {f['line']}" for f in flags]
                or [
                    f"no joint flagged (each joint's NRMSE within {NRMSE_FACTOR:g}x the median of the others, "
                    f"R^2 >= {R2_MIN:g})"
                ]
            )

    if held_out:  # the held-out result leads
        doc.heading("Held-out torque prediction")
        doc.text(
            f"The parameters of {params.method or '?'} identification predict the torque of runs they were not "
            "fitted to; per joint: " + ", ".join(m[1] for m in METRIC_COLUMNS) + "."
        )
        run_tables()
        for i in range(len(validation.runs)):
            show("prediction" if i == 0 else f"prediction_{i + 1}")

    doc.heading("Summary")
    items = []
    for run in validation.runs:
        items.append(f"{'held-out ' if held_out else ''}{_run_label(run)}: {worst_joint_line(run, joint_names)}")
        flags = run["flagged"] if "flagged" in run else joint_flags(run, joint_names)
        items += [f"flagged: {f['line']}" for f in flags]
    items += [
        f"model: {params.model.get('name')} ({params.model.get('n')} joints, joint terms "
        f"{', '.join(params.model.get('joint_terms') or []) or 'none'})",
        f"estimator: {params.method or '?'}, {get('n_samples', '?')} samples from "
        f"{', '.join(os.path.basename(str(s)) for s in get('sources', [])) or '?'}",
        f"{len(params.base.names)} base parameters of {len(params.parameter_names)} standard ones; "
        f"condition number {_fmt(get('cond'), '.4g')}",
    ]
    if params.screening is not None and params.screening.message:
        items.append(params.screening.message)
    if params.physics is not None:
        verdict = (
            verdict_lines(params.physics.checks, indent="")[-1] if params.physics.checks else "checks: not recorded"
        )
        items.append(f"physics: {len(params.physics.problems or [])} problem(s); {verdict} (see Physics)")
    items += [f"warning: {w}" for w in validation.warnings]
    doc.bullets(items)

    if not held_out:
        doc.heading("Per-joint torque fit")
        run_tables()

    if params.physics is not None:
        doc.heading("Physics")
        problems = params.physics.problems or []
        if params.physics.checks is not None:  # the named checks, each with its numbers
            word = {True: "pass", False: "FAIL", None: "not judged"}
            doc.table(
                ("check", "result", "numbers"),
                [[c["name"], word[c["passed"]], c["detail"]] for c in params.physics.checks],
            )
            doc.bullets([line.strip() for line in verdict_lines(params.physics.checks, indent="")])
        else:  # a params.json written before the named checks
            doc.text(
                "checks: not recorded (params.json written before the named checks consistent, converged, "
                "plausible); standard parameters "
                + ("consistent" if params.physics.consistent else "not shown to be consistent")
            )
        if problems:
            doc.text(f"{len(problems)} problem(s):")
            doc.bullets(f"problem: {p}" for p in problems)
        else:
            doc.text("problems: none (no impossible estimate; the checks above give the verdict)")

    doc.heading("Bodies: identified vs nominal")
    if params.standard is None:
        doc.text(
            "Identified bodies: not determined (this fit holds no physically consistent standard parameters; "
            "base parameters alone do not determine each link's mass and centre of mass: identify with "
            "--consistent)."
        )
    else:
        doc.text(f"Identified: {params.standard_source or 'physically consistent standard parameters'}.")
    if nominal is None and params.standard is None:
        doc.text("No nominal model given.")
    else:
        doc.table(*body_rows(params, nominal))

    if figs:
        doc.heading("Figures")
        for name in (
            "parameters",
            "correlation",
            "friction",
            "residual_velocity",
            "residual_position",
            "spectrum",
        ):
            show(name)

    doc.heading("Base parameters")
    doc.text(
        "Each base parameter is the combination of standard parameters shown (Gautier 1990); its value "
        "is what the data determine. " + FLAG_LEGEND
    )
    doc.table(*parameter_rows(params, joint_types=joint_types))
    flagged = [(k + 1, f) for k, f in enumerate(parameter_flags(params)) if f]
    if flagged:
        doc.text(f"{len(flagged)} of {len(params.base.names)} base parameters are flagged.")

    doc.heading("Conditioning")
    sv = get("singular_values")
    if sv:
        doc.text(
            f"Condition number {_fmt(get('cond'), '.4g')} = s1 / s{len(sv)} of the column-scaled "
            "base regressor (unit-norm columns); a small s_k means a direction in parameter space the "
            "data hardly excite."
        )
        doc.table(
            ("k", "s_k", "s1 / s_k"),
            [[k + 1, _fmt(v, ".4g"), _fmt(sv[0] / v if v else math.inf, ".4g")] for k, v in enumerate(sv)],
        )
        doc.figure(
            "singular_values.png",
            singular_value_figure(None, sv, get("cond")),
            "Singular values of the column-scaled base regressor (log scale).",
        )
    else:
        doc.text(
            f"Condition number {_fmt(get('cond'), '.4g')}; the singular values are not recorded in "
            "this params file (written by an older jaxid)."
        )

    if con is not None:
        doc.heading("Iterative fit")
        value = lambda v: v if isinstance(v, (bool, str)) or v is None else _fmt(v, ".6g")
        doc.table(("quantity", "value"), [[label, value(getattr(con, key))] for key, label in CONVERGENCE_FIELDS])
        history = con.history or {}
        if history.get("cost"):
            doc.figure(
                "convergence.png",
                convergence_figure(
                    None,
                    [math.nan if v is None else v for v in history["cost"]],
                    [math.nan if v is None else v for v in history.get("gap_bound", [])] or None,
                    con.converged,
                    title="physically consistent fit",
                ),
                "Convergence of the physically consistent fit (interior-point Newton steps): the cost above "
                "its final value, and the solver's bound on the distance to the optimum (log scale).",
            )
        choice = params.extra.get("prior_weight_choice")
        if choice and "rotations" in choice:
            rot = choice["rotations"]
            doc.text(
                f"Prior weight chosen by cross-validation over {len(rot)} folds (held out: "
                + "; ".join(r["test"] for r in rot)
                + "): the largest weight whose mean held-out NRMS is within one standard error of the least "
                "(Hastie et al., The Elements of Statistical Learning, 7.10)."
            )
            doc.table(
                ("prior weight", *(f"fold {k + 1} [%]" for k in range(len(rot))), "mean [%]", "std error", "chosen"),
                [
                    [
                        _fmt(w, ".3g"),
                        *(_fmt(r["rows"][1 + k]["nrms_limits"], ".4g") for r in rot),
                        _fmt(choice["mean_nrms_limits"][str(w)], ".4g"),
                        _fmt(choice["se_nrms_limits"][str(w)], ".2g"),
                        "yes" if w == choice["chosen"] else "",
                    ]
                    for k, w in enumerate(choice["weights"])
                ],
            )
        elif choice:
            doc.text("Prior weight chosen on held-out runs (the lowest held-out error):")
            doc.table(
                ("model", "prior weight", "held-out NRMS lim [%]", "converged", "steps"),
                [
                    [
                        r["model"],
                        "-" if r["model"] == "wls" else _fmt(r["weight"], "g"),
                        _fmt(r["nrms_limits"], ".4g"),
                        r.get("converged", "-"),
                        r.get("steps", "-"),
                    ]
                    for r in choice["rows"]
                ],
            )

    doc.heading("Held-out torque diagnostics" if held_out else "Torque fit")
    for i, (run, t, real, pred) in enumerate(
        zip(validation.runs, validation.t, validation.measured, validation.predicted)
    ):
        label = _run_label(run)
        doc.figure(
            f"torque_{i + 1}.png",
            torque_figure(None, t, real, pred, joint_names, title=label),
            f"{label}: measured torque (black, on top) and predicted torque (orange) per joint, the error "
            "below each; right: zoom on 10 % of the run around the joint's largest error (shaded on the left).",
        )
        doc.figure(
            f"residuals_{i + 1}.png",
            residual_figure(None, real, pred, joint_names, title=label),
            f"{label}: histograms of the torque error measured - predicted per joint, with the normal "
            "density of the same mean and standard deviation.",
        )
    prep = params.preprocessing or ()
    if prep:
        doc.heading("Data preparation")
        doc.bullets(describe_run(dataclasses.replace(c, source=os.path.basename(str(c.source)))) for c in prep)
    doc.heading("Commands")
    if command:
        doc.code(shlex.join(str(a) for a in command))
    else:
        doc.text("Written by the library (jaxid.report.write_report), not by a jaxid command.")
    return doc


def write_report(out_dir, params, validation, **kw) -> dict:
    """Write [`identification_document`][jaxid.report.identification_document] (keywords passed on) into ``out_dir`` as
    ``report.html`` (self-contained), ``report.md``, ``figures/*.png`` and the figures for print
    ``figures/*.svg`` and ``*.pdf``; returns the paths (``html``, ``markdown``, ``figures``: the
    PNG files, ``vector``: the SVG and PDF files)."""
    return identification_document(params, validation, **kw).write(out_dir)


def write(out_dir, title: str, sections: dict, data: dict, figure_files: Sequence[str] = ()) -> dict:
    """Write ``report.md`` (title, sections: heading -> Markdown text, figures by file name in
    out_dir) and ``result.json`` (data) into out_dir."""
    from jaxid.atomic import atomic_write

    os.makedirs(out_dir, exist_ok=True)
    md = [f"# {title}", ""]
    for heading, text in sections.items():
        md += [f"## {heading}", "", text, ""]
    for f in figure_files:
        md += [f"![{f}]({f})", ""]
    paths = dict(markdown=os.path.join(out_dir, "report.md"), json=os.path.join(out_dir, "result.json"))
    with atomic_write(paths["markdown"]) as fh:
        fh.write("\n".join(md))
    with atomic_write(paths["json"]) as fh:
        json.dump(jsonable(data), fh, indent=1)
    return paths

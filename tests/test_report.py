"""jaxid.report: per-parameter flags on a constructed bad fit, the Markdown tables, the
self-contained HTML page (parsed, and rendered in a headless browser where one is installed),
and the one-line error when matplotlib is missing."""

import base64
import html.parser
import io
import struct
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from jaxid import report, results, workflow
from jaxid.identification.base import BaseParameters
from jaxid.model.inertia import INERTIAL_NAMES

NAMES = tuple(f"{k}{j}" for j in (1, 2) for k in INERTIAL_NAMES) + ("fv1", "fc1", "fv2", "fc2", "ks1")
#: (leading parameter, {dependent parameter: coefficient}, value, std, expected flags)
CASES = [
    ("m1", {}, -1.0, 0.01, {report.FLAG_MASS}),
    ("Izz1", {"Iyy2": 1.0, "m2": 0.180625}, -0.5, 0.01, {report.FLAG_INERTIA}),
    ("fv1", {}, -0.2, 0.01, {report.FLAG_FRICTION}),
    ("ks1", {}, -0.3, 0.01, {report.FLAG_STIFFNESS}),
    ("mx2", {}, 0.001, 0.01, {report.FLAG_UNIDENTIFIED}),
    ("fc1", {}, 0.5, 0.01, set()),
    ("Izz2", {"mx1": -0.3}, -1.0, 0.01, set()),  # a negative coefficient: the sign is not physically fixed
    ("Ixx2", {"Iyy1": 1.0}, -0.01, 0.1, {report.FLAG_INERTIA, report.FLAG_UNIDENTIFIED}),
]


def constructed_params(cases=CASES, standard=None):
    """Params of a hand-built base: one base parameter per case, with the given combination."""
    lead = [NAMES.index(c[0]) for c in cases]
    dependent = [i for i in range(len(NAMES)) if i not in lead]
    K = np.zeros((len(cases), len(dependent)))
    names = []
    for k, (first, deps, *_rest) in enumerate(cases):
        for name, coef in deps.items():
            K[k, dependent.index(NAMES.index(name))] = coef
        names.append(" ".join([first] + [f"{'+' if c > 0 else '-'} {abs(c):g}*{d}" for d, c in deps.items()]))
    base = BaseParameters(
        indices=jnp.asarray(lead, dtype=jnp.int32),
        dependent=jnp.asarray(dependent, dtype=jnp.int32),
        K=jnp.asarray(K),
        r_diag=jnp.ones(len(NAMES)),
        gap=1e6,
        rank=len(cases),
        names=tuple(names),
        standard_names=NAMES,
    )
    std = np.array([c[3] for c in cases])
    model = {"name": "constructed", "n": 2, "joint_terms": ["fv", "fc"]}
    fit = {
        "method": "wls",
        "cond": 12.5,
        "singular_values": np.geomspace(2.0, 0.16, len(cases)).tolist(),
        "n_samples": 300,
        "sources": ["run1.csv"],
        "converged": False,
        "steps": 40,
        "grad_norm": 1e-3,
        "history": {
            "cost": (5.0 + np.geomspace(10.0, 1e-3, 40)).tolist(),
            "gap_bound": np.geomspace(20, 1e-2, 40).tolist(),
        },
        "physics": {
            "consistent": False,
            "problems": ["fv1 = -0.2 < 0 (20.0 std below zero): negative viscous friction"],
        },
    }
    return results.Params(
        model=model,
        parameter_names=NAMES,
        base=base,
        theta=jnp.asarray([c[2] for c in cases]),
        cov=jnp.diag(jnp.asarray(std**2)),
        fit=fit,
        standard=None if standard is None else jnp.asarray(standard),
    )


def test_each_flag_fires_on_a_constructed_bad_fit():
    flags = report.parameter_flags(constructed_params())
    assert [set(f) for f in flags] == [c[4] for c in CASES]
    # Consistent standard parameters whose link 2 has a negative mass flag the base parameters it leads.
    standard = np.zeros(len(NAMES))
    standard[:10] = [1.0, 0, 0, 0, 0.1, 0, 0.1, 0, 0, 0.1]  # link 1: a real body
    standard[10:20] = [-1.0, 0, 0, 0, 0.1, 0, 0.1, 0, 0, 0.1]  # link 2: negative mass
    flags = report.parameter_flags(constructed_params(standard=standard))
    led_by_link2 = [k for k, c in enumerate(CASES) if c[0].endswith("2")]
    assert all(report.FLAG_MASS in flags[k] for k in led_by_link2)
    assert report.FLAG_MASS not in flags[CASES.index(next(c for c in CASES if c[0] == "fc1"))]


def test_physics_verdict_names_each_impossible_estimate():
    """The identification's physics verdict names what the report's flags mark, with the distance to zero."""
    problems = workflow.physics_report(None, constructed_params())
    assert problems == [
        "m1 = -1 < 0 (100.0 std below zero): negative mass",
        "Izz1 + 1*Iyy2 + 0.180625*m2 = -0.5 < 0 (50.0 std below zero): negative moment of inertia "
        "(no positive semi-definite inertia has one)",
        "fv1 = -0.2 < 0 (20.0 std below zero): negative viscous friction",
        "ks1 = -0.3 < 0 (30.0 std below zero): negative joint stiffness (no passive spring has one)",
        "Ixx2 + 1*Iyy1 = -0.01 < 0 (0.1 std below zero): negative moment of inertia "
        "(no positive semi-definite inertia has one)",
        "the consistent fit did not converge in 40 steps",
    ]


def test_units_follow_the_leading_parameter_and_the_joint_type():
    assert report.parameter_unit("Izz1 + Iyy2 + 0.18*m2") == "kg m²"
    assert report.parameter_unit("mx3") == "kg m"
    assert report.parameter_unit("ks1") == "N m/rad" and report.parameter_unit("ks2", ("R", "P")) == "N/m"
    assert (
        report.parameter_unit("fv2", ("R", "P")) == "N s/m" and report.parameter_unit("fv1", ("R", "P")) == "N m s/rad"
    )
    assert report.parameter_unit("offset1") == "N m"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The report of the constructed fit with a synthetic torque record (no JAX compile)."""
    t = np.arange(300) / 100.0
    real = np.stack([10 * np.sin(2 * t), 3 * np.cos(3 * t)], axis=1)
    pred = real - np.random.default_rng(0).normal(scale=[0.2, 0.05], size=real.shape)
    run = {
        "source": "/somewhere/run1.csv",
        "samples": len(t),
        **results.validation_metrics(real, pred, np.array([50.0, 20.0])),
    }
    q = np.stack([np.sin(0.5 * t), 0.4 * np.cos(1.5 * t)], axis=1)
    qd = np.stack([0.5 * np.cos(0.5 * t), -0.6 * np.sin(1.5 * t)], axis=1)
    val = workflow.Validation(runs=[run], t=[t], measured=[real], predicted=[pred], q=[q], qd=[qd])
    out = tmp_path_factory.mktemp("report")
    # a command line as long as a real one (a URDF, three runs, options): the page must wrap it
    command = ["jaxid", "identify", "--urdf", "/a/long/path/to/the/robot_description/urdf/arm.urdf"]
    command += [f"/data/experiments/2026-12-07/run{k}_fourier_excitation_200Hz.csv" for k in (1, 2, 3)]
    paths = report.write_report(out, constructed_params(), val, joint_types=("R", "R"), command=command)
    return out, paths


class _Images(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.tables = [], 0

    def handle_starttag(self, tag, attrs):
        self.images += [dict(attrs)] if tag == "img" else []
        self.tables += tag == "table"


def test_html_is_self_contained_and_every_figure_decodes(written):
    out, paths = written
    page = (out / "report.html").read_text()
    parser = _Images()
    parser.feed(page)
    png = [img for img in parser.images if img["data-name"].endswith(".png")]
    assert len(png) == len(paths["figures"]) == 4 and parser.tables >= 3
    assert len(parser.images) == len(png) + len(paths["vector"]) // 2  # and the figures for print, as SVG
    assert "convergence.png" in [img["data-name"] for img in parser.images]  # the iterative fit's convergence
    for img in png:
        head, data = img["src"].split(",", 1)
        assert head == "data:image/png;base64"
        png = base64.b64decode(data, validate=True)
        width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and width > 100 and height > 100
    assert "http://" not in page and "https://" not in page and "<script" not in page  # nothing to fetch
    # Full base-parameter names, the flags and the physics problems are on the page.
    for name in constructed_params().base.names:
        assert name in page
    assert report.FLAG_INERTIA in page and "negative viscous friction" in page and "iterations" in page
    # A params file written before the named checks says so; the run's joints are judged one by one.
    assert "checks: not recorded" in page and "no joint flagged" in page and "physics: physically" not in page


def test_report_lists_the_named_checks_and_flags_a_bad_joint():
    """The report's summary has each named check with its numbers and the verdict; a joint the
    parameters predict badly is flagged under its run's table."""
    import dataclasses

    checks = [
        {"name": "consistent", "passed": True, "detail": "every body's pseudo-inertia >= 0", "failures": []},
        {"name": "converged", "passed": True, "detail": "the consistent fit, 40 Newton steps", "failures": []},
        {
            "name": "plausible",
            "passed": False,
            "detail": "masses ...",
            "failures": ["link 2 (l2): mass 50 kg is 50x the nominal 1 kg (allowed 1/3x to 3x)"],
        },
    ]
    params = constructed_params()
    params = dataclasses.replace(params, physics=dataclasses.replace(params.physics, checks=checks, plausible=False))
    t = np.arange(200) / 100.0
    real = np.stack([10 * np.sin(2 * t), 3 * np.cos(3 * t)], axis=1)
    pred = real.copy()
    pred[:, 0] += np.random.default_rng(1).normal(scale=0.1, size=len(t))
    pred[:, 1] = 0.3 * real[:, 1]  # joint 2 predicted badly: R^2 about 0.5
    run = {"source": "run1.csv", "samples": len(t), **results.validation_metrics(real, pred)}
    val = workflow.Validation(runs=[run], t=[t], measured=[real], predicted=[pred])
    text = report.identification_document(params, val, joint_names=["j1", "j2"]).markdown()
    assert "plausible: FAIL (masses ...)" in text and "link 2 (l2): mass 50 kg is 50x the nominal 1 kg" in text
    assert "verdict: not plausible (failed: plausible)" in text and "physics: physically" not in text
    assert "flagged: joint 2 (j2): " in text and "R^2 0.5" in text


def test_markdown_twin_has_real_tables_with_full_names(written):
    markdown = pytest.importorskip("markdown")
    out, paths = written
    text = (out / "report.md").read_text()
    assert "```" not in text
    rendered = markdown.markdown(text, extensions=["tables"])
    parser = _Cells()
    parser.feed(rendered)
    names = constructed_params().base.names
    assert set(names) <= set(parser.cells)  # "Izz1 + 1*Iyy2 + 0.180625*m2": the * not taken for emphasis
    assert parser.tables >= 3
    for f in paths["figures"]:
        assert f"figures/{f.rsplit('/', 1)[-1]}" in text


class _Cells(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells, self.tables, self._cell = [], 0, None

    def handle_starttag(self, tag, attrs):
        self.tables += tag == "table"
        if tag == "td":
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag == "td":
            self.cells.append(self._cell)
            self._cell = None


def test_html_report_renders_in_a_headless_browser(written, chromium):
    out, paths = written
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((out / "report.html").resolve().as_uri())
    page.wait_for_load_state("load")
    shown = page.evaluate(
        "Array.from(document.querySelectorAll('img')).map("
        "i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width])"
    )
    # nothing wider than the page at 1280 px: a table, a figure or the command line hidden past its edge
    wide = page.evaluate(
        "Array.from(document.querySelectorAll('pre, table, img')).filter(e => e.scrollWidth > e.clientWidth + 1"
        " || e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).map(e => e.tagName)"
    )
    shot = page.screenshot(path=str(out / "report_screenshot.png"), full_page=True)
    page.close()
    assert not errors and not wide, (errors, wide)
    # The page as drawn: a full-page screenshot taller than the window, and not blank.
    from PIL import Image

    image = Image.open(io.BytesIO(shot)).convert("L")
    assert image.width == 1280 and image.height > 800, image.size
    assert len(set(image.getdata())) > 16
    assert len(shown) == len(paths["figures"]) + len(paths["vector"]) // 2 and all(
        ok and w > 0 and box > 0 for ok, w, box in shown
    ), shown


def test_missing_matplotlib_is_one_line_naming_the_extra(tmp_path):
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import jaxid, jaxid.workflow, jaxid.results, jaxid.report, jaxid.cli\n"  # the core needs no matplotlib
        "sys.exit(jaxid.cli.main(sys.argv[1:]))"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "validate",
            "--params",
            str(tmp_path / "p.json"),
            str(tmp_path / "d.csv"),
            "--report",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "jaxid validate: error: figures and reports need matplotlib: pip install 'jaxid[report]'"
    ]


#: The figures for print of an identification's report (``report.print_figures``).
PRINT_FIGURES = ("parameters", "correlation", "friction", "residual_velocity", "residual_position", "spectrum")


def _font_sizes(svg: bytes) -> list[float]:
    """The font sizes (pt: matplotlib's SVG user unit is the point) of every text element of an SVG."""
    import re
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    sizes = []
    ns = "{http://www.w3.org/2000/svg}"
    for el in root.iter(f"{ns}text"):
        styled = [el] if el.get("style") else list(el.iter(f"{ns}tspan"))  # mathtext: the sizes on its tspans
        assert styled, ET.tostring(el)
        for part in styled:
            m = re.search(r"font-size:\s*([0-9.]+)px", part.get("style", ""))
            assert m, part.get("style")
            sizes.append(float(m.group(1)))
    return sizes


def test_figures_for_print_are_svg_and_pdf_with_text_of_at_least_9_pt(written):
    out, paths = written
    for name in PRINT_FIGURES:
        svg, pdf = out / "figures" / f"{name}.svg", out / "figures" / f"{name}.pdf"
        assert str(svg) in paths["vector"] and str(pdf) in paths["vector"]
        assert pdf.read_bytes()[:5] == b"%PDF-"
        data = svg.read_bytes()
        root_tag = __import__("xml.etree.ElementTree").etree.ElementTree.fromstring(data).tag
        assert root_tag == "{http://www.w3.org/2000/svg}svg"
        sizes = _font_sizes(data)
        assert len(sizes) >= 5, name  # svg.fonttype 'none': the labels are text, not paths
        assert min(sizes) >= 9, (name, min(sizes))
        assert len(data) < 1_500_000, (name, len(data))


def test_report_html_references_every_figure(written):
    out, paths = written
    page = (out / "report.html").read_text()
    parser = _Images()
    parser.feed(page)
    shown = {img["data-name"] for img in parser.images}
    for name in PRINT_FIGURES:
        assert f"{name}.svg" in shown and f'href="figures/{name}.pdf"' in page and f'href="figures/{name}.svg"' in page
    for path in paths["figures"]:
        assert path.rsplit("/", 1)[-1] in shown
    md = (out / "report.md").read_text()
    assert all(f"figures/{name}.svg" in md and f"figures/{name}.pdf" in md for name in PRINT_FIGURES)


def _sections(markdown_text: str) -> list[tuple[str, str]]:
    """(heading, body) of each '## ' section of a report.md."""
    parts = markdown_text.split("\n## ")[1:]
    return [(p.split("\n", 1)[0], p.split("\n", 1)[1] if "\n" in p else "") for p in parts]


def _bad_joint_validation(n=3, bad=2, seed=2):
    """A run of n joints whose joint ``bad`` (1-based) is predicted far worse than the others, though
    the run's overall relative error stays small (the big joints dominate it)."""
    rng = np.random.default_rng(seed)
    t = np.arange(400) / 100.0
    real = np.stack([(20.0 / (j + 1)) * np.sin((j + 1) * t) for j in range(n)], axis=1)
    real[:, bad - 1] *= 0.05  # a small torque: its errors barely move the overall number
    pred = real + rng.normal(scale=0.02, size=real.shape)
    pred[:, bad - 1] = 0.2 * real[:, bad - 1]
    q = np.stack([np.sin(0.3 * (j + 1) * t) for j in range(n)], axis=1)
    qd = np.gradient(q, t, axis=0)
    run = {"source": "/x/held_out.csv", "samples": len(t), **results.validation_metrics(real, pred)}
    return workflow.Validation(runs=[run], t=[t], measured=[real], predicted=[pred], q=[q], qd=[qd])


def _three_joint_params():
    names = tuple(f"{k}{j}" for j in (1, 2, 3) for k in INERTIAL_NAMES) + ("fv1", "fv2", "fv3")
    lead = [names.index(x) for x in ("m1", "mx2", "Izz3", "fv1", "fv2", "fv3")]
    dependent = [i for i in range(len(names)) if i not in lead]
    base = BaseParameters(
        indices=jnp.asarray(lead, dtype=jnp.int32),
        dependent=jnp.asarray(dependent, dtype=jnp.int32),
        K=jnp.zeros((len(lead), len(dependent))),
        r_diag=jnp.ones(len(names)),
        gap=1e6,
        rank=len(lead),
        names=tuple(names[i] for i in lead),
        standard_names=names,
    )
    standard = np.zeros(len(names))
    for j, (m, c) in enumerate(((2.0, 0.1), (1.5, 0.05), (1.0, 0.02))):
        standard[10 * j : 10 * j + 10] = [m, m * c, 0, 0, 0.05, 0, 0.05, 0, 0, 0.05]
    return results.Params(
        model={"name": "three", "n": 3, "joint_terms": ["fv"], "coulomb_eps": 0.01},
        parameter_names=names,
        base=base,
        theta=jnp.asarray([2.0, 0.15, 0.05, 0.3, 0.2, 0.1]),
        cov=jnp.diag(jnp.asarray([0.01, 0.001, 0.001, 0.01, 0.01, 0.01]) ** 2),
        fit={"method": "wls", "cond": 10.0, "n_samples": 400, "sources": ["id.csv"]},
        standard=jnp.asarray(standard),
        standard_source="constructed",
    )


def test_summary_names_the_worst_joint_behind_a_small_overall_error():
    val = _bad_joint_validation()
    run = val.runs[0]
    assert run["relative_error"] < 5 and run["nrmse"]["per_joint"][1] > 20  # the headline alone hides it
    doc = report.identification_document(_three_joint_params(), val, joint_names=["a", "b", "c"], vector_figures=False)
    sections = dict(_sections(doc.markdown()))
    summary = sections["Summary"]
    assert "worst joint 2 (b): NRMSE" in summary and "flagged: joint 2 (b)" in summary
    # The per-joint table says it on the joint's row.
    table = sections["Per-joint torque fit"]
    row_b = next(line for line in table.splitlines() if line.startswith("| 2 (b) |"))
    assert "FLAGGED" in row_b and "FLAGGED" not in next(
        line for line in table.splitlines() if line.startswith("| 1 (a) |")
    )


def test_validate_report_leads_with_the_held_out_result(tmp_path):
    val = _bad_joint_validation()
    params = _three_joint_params()
    nominal = dict(zip(params.parameter_names, np.asarray(params.standard) * 1.1))
    paths = report.write_report(
        tmp_path,
        params,
        val,
        joint_names=["a", "b", "c"],
        held_out=True,
        nominal=nominal,
        command=["jaxid", "validate"],
    )
    text = (tmp_path / "report.md").read_text()
    sections = _sections(text)
    heading, body = sections[0]
    assert heading == "Held-out torque prediction" and "held_out.csv" in body and "worst joint 2 (b)" in body
    assert "figures/prediction.svg" in body  # measured vs predicted on the held-out run, in the first section
    order = [h for h, _ in sections]
    assert order.index("Base parameters") > order.index("Summary") > 0
    assert str(tmp_path / "figures" / "prediction.pdf") in paths["vector"]
    assert "spectrum.svg" not in text  # the spectrum is the identification data's
    # Identified vs nominal bodies: mass and centre of mass per link from the standard parameters.
    bodies = dict(sections)["Bodies: identified vs nominal"]
    assert "| 1 | 2.2 | 2 | 0.909 | (100.0, 0.0, 0.0) | (100.0, 0.0, 0.0) |" in bodies


def test_commands_section_is_not_empty(tmp_path):
    val = _bad_joint_validation()
    cmd = ["jaxid", "identify", "--robot", "planar3", "data file.csv", "--report", "r"]
    doc = report.identification_document(_three_joint_params(), val, command=cmd, vector_figures=False)
    sections = dict(_sections(doc.markdown()))
    assert "jaxid identify --robot planar3 'data file.csv' --report r" in sections["Commands"]
    assert "jaxid identify" in doc.html()
    # Without a command (the library), the section says where the report came from.
    doc = report.identification_document(_three_joint_params(), val, vector_figures=False)
    assert dict(_sections(doc.markdown()))["Commands"].strip()
    # The demo's report lists the commands it ran.
    from jaxid.cli import demo

    steps = [("identify", ["identify", "--robot", "ur5", "d.csv"]), ("validate", ["validate", "d2.csv"])]
    text = demo.commands_text(steps)
    assert "jaxid identify --robot ur5 d.csv" in text and "jaxid validate d2.csv" in text


def test_reports_do_not_import_pyplot_until_drawn():
    code = (
        "import sys, jaxid.report, jaxid.figures, jaxid.cli\n"
        "assert 'matplotlib.pyplot' not in sys.modules and 'matplotlib' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)

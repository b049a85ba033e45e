"""The documentation site builds with --strict, its CLI reference is generated from the parser,
every command the docs show is a real command with real flags, and the project files agree."""

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tomllib
import zlib
from pathlib import Path

import pytest

import jaxid
from jaxid.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def _subparsers():
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _generated():
    spec = importlib.util.spec_from_file_location("generated", ROOT / "docs/hooks/generated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_lists_every_subcommand_and_option():
    text = _generated().render()
    for name, sub in _subparsers().items():
        assert f"## jaxid {name}\n" in text
        section = text.split(f"## jaxid {name}\n", 1)[1].split("\n## jaxid ", 1)[0]
        for action in sub._actions:
            for option in action.option_strings:
                assert option in section, (name, option)
    assert "<!-- cli-reference -->" in (ROOT / "docs/cli.md").read_text()


def _commands(text):
    """Every `jaxid SUBCOMMAND ...` line of the code blocks of a page (continuations joined)."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("jaxid ") and not line.startswith("jaxid_"):
                yield shlex.split(line)


def test_every_command_in_the_docs_is_real():
    subs = _subparsers()
    seen = set()
    for page in PAGES:
        for argv in _commands(page.read_text()):
            name = argv[1]
            assert name in COMMANDS, f"{page.name}: unknown subcommand in {shlex.join(argv)}"
            options = {o for a in subs[name]._actions for o in a.option_strings}
            for token in argv[2:]:
                flag = token.split("=", 1)[0]
                if flag.startswith("-") and not re.fullmatch(r"-[0-9.]+", flag):
                    assert flag in options, f"{page.name}: 'jaxid {name}' has no option {flag}"
            seen.add(name)
    assert {"excite", "simulate", "identify", "validate", "payload", "lugre"} <= seen


def test_project_files_agree_with_the_package():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "MIT"  # an SPDX expression, not the deprecated table
    assert not any(d.startswith(("diffrax", "matplotlib")) for d in meta["dependencies"])
    assert any(d.startswith("matplotlib") for d in meta["optional-dependencies"]["report"])
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "LGPL-3.0" in (ROOT / "examples/data/kuka_lwr4/NOTICE").read_text()
    assert re.search(rf"^version: {re.escape(jaxid.__version__)}$", (ROOT / "CITATION.cff").read_text(), re.M)
    assert f"## {jaxid.__version__} " in (ROOT / "CHANGELOG.md").read_text()


# The modules whose every public name the API reference lists (issue 34): `import jaxid`, the
# public modules and packages, their public submodules; a package's re-exports count as its names.
API_MODULES = (
    "jaxid",
    "jaxid.models",
    "jaxid.workflow",
    "jaxid.data",
    "jaxid.identification",
    "jaxid.excitation",
    "jaxid.friction",
    "jaxid.signals",
    "jaxid.metrics",
    "jaxid.study",
    "jaxid.cache",
)
SPHINX_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|ref):`")
CROSS_REF = re.compile(r"\]\[(jaxid(?:\.\w+)*)\]")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """``make docs``: mkdocs build --strict (warnings are errors, as for ``make docs``) into a
    temporary site, once for the tests of this module (about 5 s of CPU)."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("mkdocstrings")
    site = tmp_path_factory.mktemp("docs") / "site"
    r = subprocess.run(
        # not -q: mkdocs -q drops the warnings before --strict counts them
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    warnings = [line for line in r.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert r.returncode == 0 and not warnings, "\n".join(warnings) or r.stderr[-3000:]
    return site


def _inventory(site) -> set[str]:
    """The object names of the built site's ``objects.inv`` (Sphinx inventory v2: four header
    lines, then zlib-compressed lines ``name domain:role priority uri dispname``)."""
    head = (site / "objects.inv").read_bytes().split(b"\n", 4)
    assert head[0] == b"# Sphinx inventory version 2", head[0]
    return {line.split(" ", 1)[0] for line in zlib.decompress(head[4]).decode().splitlines() if line}


def _griffe():
    griffe = pytest.importorskip("griffe")
    return griffe.load("jaxid", search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)


def _final(obj):
    while obj is not None and obj.is_alias:
        try:
            obj = obj.final_target
        except Exception:  # an alias to outside jaxid
            return None
    return obj


def _lookup(package, path):
    """The griffe object at a dotted path under jaxid (aliases followed), or None."""
    parts = path.split(".")
    if parts[0] != "jaxid":
        return None
    obj = package
    for part in parts[1:]:
        obj = _final(obj)
        if obj is None or part not in obj.members:
            return None
        obj = obj.members[part]
    return _final(obj)


def _public(module) -> list[str]:
    """A module's public names: its ``__all__``; without one, the names not starting with ``_``
    that it defines, and for a package also its public submodules and what it re-exports from
    jaxid (``from jaxid.x import y``)."""
    if module.exports is not None:
        return [e if isinstance(e, str) else e.name for e in module.exports]
    names = []
    for name, member in module.members.items():
        if name.startswith("_"):
            continue
        if member.is_alias:
            target = _final(member)
            if not module.is_init_module or target is None or not target.path.startswith("jaxid"):
                continue
        names.append(name)
    return names


def test_api_reference_lists_every_public_name(site):
    """Every name of the ``__all__`` (or the public names) of each public module is an object of
    the built API pages (``objects.inv``), under its own path or under the path where it is
    defined: a name added to the API without a page fails here."""
    inventory = _inventory(site)
    package = _griffe()
    modules = [_lookup(package, name) for name in API_MODULES]
    modules += [m for m in _lookup(package, "jaxid.identification").modules.values() if not m.name.startswith("_")]
    missing = []
    for module in modules:
        for name in _public(module):
            if name.startswith("__"):  # __version__
                continue
            obj = _lookup(package, f"{module.path}.{name}")
            paths = {f"{module.path}.{name}"} | ({obj.path} if obj is not None else set())
            if not paths & inventory:
                missing.append(f"{module.path}.{name}")
    assert not missing, f"public names on no API page (docs/api/*.md): {missing}"
    for page in sorted((ROOT / "docs/api").glob("*.md")):
        for target in re.findall(r"^::: (\S+)", page.read_text(), flags=re.M):
            assert target in inventory, f"{page.name}: ::: {target} rendered nothing"


def test_docstrings_use_one_cross_reference_syntax():
    """No Sphinx role (``:func:`x```, ``:class:``...) is left in jaxid's sources: mkdocstrings
    renders them as raw text. Cross-references are mkdocstrings' ``[`name`][jaxid.module.name]``,
    and every one names an object that exists (the built site's links are checked by --strict)."""
    package = _griffe()
    roles, broken = [], []
    for path in sorted((ROOT / "jaxid").rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(ROOT)
        for number, line in enumerate(text.splitlines(), 1):
            if SPHINX_ROLE.search(line):
                roles.append(f"{rel}:{number}: {line.strip()}")
            for target in CROSS_REF.findall(line):
                if _lookup(package, target) is None:
                    broken.append(f"{rel}:{number}: {target}")
    assert not roles, "Sphinx roles (write [`name`][jaxid.module.name]):\n" + "\n".join(roles[:20])
    assert not broken, "cross-references to no object:\n" + "\n".join(broken[:20])


def test_docs_build_strict(site):
    """``make docs`` builds (the fixture fails on any warning), with the generated CLI reference,
    the API pages and the guides."""
    cli = (site / "cli/index.html").read_text()
    assert all(f"jaxid {name}" in cli for name in COMMANDS) and "--report" in cli
    api = (site / "api/workflow/index.html").read_text()
    assert "identify_experiment" in api and "parameter_flags" in api
    for page in ("getting-started", "your-robot", "friction", "payload", "batches", "conventions", "design"):
        assert (site / page / "index.html").is_file(), page
    assert ":func:" not in api and ":class:" not in api
    # the figures the pages show: committed files, small (docs/figures/make_figures.py redraws them)
    for name in ("pipeline.svg", "excitation-preview.png", "report-parameters.svg", "friction.svg", "lugre.svg"):
        figure = site / "figures" / name
        assert figure.is_file() and figure.stat().st_size < 200_000, name
    assert "figures/lugre.svg" in (site / "friction/index.html").read_text()


def test_package_page_lists_every_exported_name(site):
    """The API's package page is a table of every name ``import jaxid`` exports, each a link to
    the page that documents it."""
    table = _generated().package_names()
    page = (site / "api/index.html").read_text()
    for name in jaxid.__all__:
        if not name.startswith("__"):
            assert f"| [`{name}`][" in table, name
            assert f"<code>{name}</code></a>" in page, name


def test_site_pages_render_in_a_headless_browser(site, chromium):
    """As a reader sees every page of the site at 1280 px: no console error (nothing fetched from outside: the
    site reads offline), every image drawn, and no code block or table wider than the text column
    (a line hidden past the right edge; the CLI help is printed at the column's width)."""
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    for path in sorted(site.glob("**/index.html")):
        name = str(path.relative_to(site))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        images = page.evaluate("Array.from(document.images).map(i => [i.src, i.complete && i.naturalWidth > 0])")
        assert all(ok for _, ok in images), (name, images)
        wide = page.evaluate(
            "Array.from(document.querySelectorAll('.md-content pre, .md-content pre > code, .md-content table,"
            " .md-content .md-typeset__scrollwrap'))"
            ".filter(e => e.scrollWidth > e.clientWidth + 1)"
            ".map(e => [e.tagName, e.scrollWidth, e.clientWidth, e.textContent.slice(0, 80)])"
        )
        assert not wide, (name, wide)
    # The CLI help keeps its layout: a line as wide as argparse fills (COLUMNS - 2) fits the text
    # column (longer lines, a few examples, wrap).
    page.goto((site / "cli/index.html").as_uri())
    fits = page.evaluate(
        "width => { const code = document.querySelector('.md-content pre > code');"
        " const probe = document.createElement('span'); probe.textContent = 'x'.repeat(width);"
        " probe.style.whiteSpace = 'pre'; probe.style.display = 'inline-block';"
        " code.appendChild(probe); const style = getComputedStyle(code);"
        " const room = code.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);"
        " const ok = probe.getBoundingClientRect().width <= room; probe.remove(); return ok; }",
        _generated().WIDTH - 2,
    )
    page.close()
    assert not errors, errors
    assert fits

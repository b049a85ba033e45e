"""The documentation site builds with --strict, its CLI reference is generated from the parser,
every command the docs show is a real command with real flags, and the project files agree."""

import argparse
import importlib.util
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import jaxid
from jaxid.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def _subparsers():
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs/hooks/cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_lists_every_subcommand_and_option():
    text = _cli_reference().render()
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


def test_docs_build_strict(tmp_path):
    """``make docs``: mkdocs build --strict (warnings are errors) into a temporary site."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    cli = (site / "cli/index.html").read_text()
    assert all(f"jaxid {name}" in cli for name in COMMANDS) and "--report" in cli
    api = (site / "api/workflow/index.html").read_text()
    assert "identify_experiment" in api and "parameter_flags" in api
    for page in ("getting-started", "your-robot", "friction", "payload", "batches", "conventions", "design"):
        assert (site / page / "index.html").is_file(), page

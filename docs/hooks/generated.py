"""mkdocs hook: the parts of the site generated from the code, so that they cannot drift from it.

- ``<!-- cli-reference -->`` (docs/cli.md): the help of ``jaxid`` and of every subcommand, as
  ``jaxid SUBCOMMAND --help`` prints it, at ``WIDTH`` columns (argparse fills ``WIDTH - 2``, which
  the text column holds on a 1280 px screen with room to spare, docs/stylesheets/extra.css).
- ``<!-- package-names -->`` (docs/api/index.md): every name of ``jaxid.__all__``, its docstring's
  first paragraph and a link to the page that documents it.

``render`` and ``package_names`` are also what the docs test uses.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 84
MARKERS = {"<!-- cli-reference -->": "render", "<!-- package-names -->": "package_names"}


def render(width: int = WIDTH) -> str:
    """Markdown: the top-level help, then a section per subcommand (in ``jaxid --help`` order)."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)  # argparse wraps at $COLUMNS
    try:
        from jaxid.cli import COMMANDS, build_parser

        parser = build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parts = ["## jaxid", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name in COMMANDS:
            parts += [f"## jaxid {name}", "", "```text", sub.choices[name].format_help().rstrip(), "```", ""]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def package_names() -> str:
    """Markdown: a table of ``jaxid.__all__`` (but ``__version__``), each name linked (mkdocstrings'
    cross-reference) to where it is defined and documented, with its docstring's first paragraph."""
    import jaxid

    rows = ["| name | what it is |", "| --- | --- |"]
    for name in jaxid.__all__:
        if name.startswith("__"):
            continue
        obj = getattr(jaxid, name)
        path = obj.__name__ if inspect.ismodule(obj) else f"{obj.__module__}.{obj.__qualname__}"
        summary = " ".join((inspect.getdoc(obj) or "").split("\n\n")[0].split())
        # outside code spans, '*' and '|' are Markdown (emphasis, a table cell)
        parts = re.split(r"(`+[^`]*`+)", summary)
        summary = "".join(p if p.startswith("`") else p.replace("*", "\\*").replace("|", "\\|") for p in parts)
        rows.append(f"| [`{name}`][{path}] | {summary} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, function in MARKERS.items():
        if marker in markdown:
            # In a fresh interpreter with the repository root first on the path: the jaxid of this
            # checkout, whatever copy mkdocs' own process may have imported.
            text = subprocess.run(
                [sys.executable, __file__, function], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout
            markdown = markdown.replace(marker, text)
    return markdown


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print({"render": render, "package_names": package_names}[sys.argv[1]]())

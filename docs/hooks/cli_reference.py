"""mkdocs hook: the CLI reference page (docs/cli.md) rendered from jaxid's argparse parser.

The page holds the marker ``<!-- cli-reference -->``; this hook replaces it with the help of
``jaxid`` and of every subcommand, as ``jaxid SUBCOMMAND --help`` prints it (at 100 columns),
so the reference cannot drift from the code. ``render`` is also what the docs test uses.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- cli-reference -->"


def render(width: int = 100) -> str:
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


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    # In a fresh interpreter with the repository root first on the path: the jaxid of this
    # checkout, whatever copy mkdocs' own process may have imported.
    text = subprocess.run([sys.executable, __file__], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return markdown.replace(MARKER, text)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(render())

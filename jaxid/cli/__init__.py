"""`jaxid` command line: a thin argparse layer over the public API.

Each subcommand lives in its own module of this package and provides
``register(subparsers)``, which adds its parser and sets ``func`` to a callable
``func(args) -> int``. User errors raise ``UserError`` and exit with status 2 and
a one-line message (no traceback).
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand modules, in the order they appear in `jaxid --help`.
COMMANDS = ("demo", "excite", "simulate", "identify", "validate", "lugre", "payload")


class UserError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxid",
        description="Identify robot dynamic parameters from measured motion and torque.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"jaxid.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (UserError, FileNotFoundError, ValueError) as exc:
        print(f"jaxid {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

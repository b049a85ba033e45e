"""`jaxid` command line: a thin argparse layer over the library (``jaxid.workflow``).

Each subcommand lives in its own module of this package and provides
``register(subparsers)``, which adds its parser and sets ``func`` to a callable
``func(args) -> int``. User errors raise ``UserError`` (or a ``ValueError`` /
``FileNotFoundError`` from the library, or an ``ImportError`` naming the optional extra to
install) and exit with status 2 and a one-line message (no traceback); Ctrl-C ends with one line and status 130, SIGTERM with status 143.

Every run uses JAX's persistent compilation cache (``jaxid.cache``), so the second run of a
subcommand does not compile again.
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
    from jaxid import __version__

    parser = argparse.ArgumentParser(
        prog="jaxid",
        description="Identify robot dynamic parameters from measured motion and torque.",
        epilog="Compiled code is cached in a user cache folder (JAXID_CACHE_DIR moves it; JAXID_CACHE_DIR=off "
               "turns the cache off).")
    parser.add_argument("--version", action="version", version=f"jaxid {__version__}")
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
    from jaxid import cache

    # Progress output goes to a terminal only (as the progress bars do), never under --quiet.
    quiet = getattr(args, "quiet", False) or getattr(args, "json", None) == "-" or not sys.stderr.isatty()
    state = cache.enable(warn=lambda m: print(f"jaxid: warning: {m}", file=sys.stderr))
    first = state is not None and not cache.warm(args.command)
    if first and not quiet:
        print(f"jaxid {args.command}: compiling (first run only; cached in {state}) ...", file=sys.stderr, flush=True)
    _on_sigterm(args.command)
    try:
        code = int(args.func(args) or 0)
    except (UserError, FileNotFoundError, ValueError, ImportError) as exc:  # ImportError: an extra is missing
        print(f"jaxid {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"jaxid {args.command}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"jaxid {args.command}: terminated", file=sys.stderr)
        return 143
    if state is not None:
        cache.mark_warm(args.command)
    return code


def entry() -> None:
    """The ``jaxid`` console script and ``python -m jaxid``: :func:`main`, then exit. After an
    interruption the process ends at once (``os._exit``): a compile still running in XLA's
    threads can crash the interpreter's teardown, and every output is already complete or
    absent (atomic writes)."""
    import os

    code = main()
    if code in (130, 143):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that open atomic writes are discarded."""


def _on_sigterm(command: str) -> None:
    """SIGTERM ends the run like Ctrl-C: one line, exit status 143, no partial output file
    (every output is written atomically, ``jaxid.atomic``)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)


if __name__ == "__main__":  # pragma: no cover
    entry()

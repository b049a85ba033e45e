"""`jaxid` command line: a thin argparse layer over the library (``jaxid.workflow``).

Each subcommand lives in its own module of this package and provides
``register(subparsers)``, which adds its parser and sets ``func`` to a callable
``func(args) -> int``. User errors raise ``UserError`` (or a ``ValueError`` /
``FileNotFoundError`` from the library, or an ``ImportError`` naming the optional extra to
install) and exit with status 2 and a one-line message (no traceback), as does running out of
memory: a request that would not fit is refused before the work starts (``jaxid.memory``),
and an allocation that fails all the same (numpy's ``MemoryError``, XLA's
``RESOURCE_EXHAUSTED``) ends with one line too. Ctrl-C ends with one line and status 130,
SIGTERM with status 143. Any other exception (an ImportError without an install hint
included) is a bug and keeps its traceback.

Warnings are printed by the CLI itself, one ``jaxid CMD: warning: ...`` line each on stderr
(the same text once), whatever the interpreter's warning filters (``PYTHONWARNINGS=ignore``, ``-W``)
say: a warning about the data is part of the result. Deprecation, import and resource warnings
of the libraries underneath are left out. ``--strict`` (before or after the subcommand) turns
every warning into an error: one line, exit status 3, for scripts that must not accept a
result with a warning.

Every run uses JAX's persistent compilation cache (``jaxid.cache``), so the second run of a
subcommand does not compile again.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import re
import sys
import warnings

# Subcommand modules, in the order they appear in `jaxid --help`.
COMMANDS = ("demo", "excite", "simulate", "identify", "crossval", "validate", "lugre", "payload", "export")


class UserError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


#: Exit status of a run ended by a warning under --strict.
STRICT_EXIT = 3

#: Warning categories about the tools, not the data: never printed, never an error under --strict.
_TOOL_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)

_STRICT_HELP = "turn every warning into an error (exit status 3): for scripts that must not accept a warned result"


def build_parser() -> argparse.ArgumentParser:
    from jaxid import __version__

    parser = argparse.ArgumentParser(
        prog="jaxid",
        description="Identify robot dynamic parameters from measured motion and torque.",
        epilog="Compiled code is cached in a user cache folder (JAXID_CACHE_DIR moves it; JAXID_CACHE_DIR=off "
        "turns the cache off).",
    )
    parser.add_argument("--version", action="version", version=f"jaxid {__version__}")
    parser.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"jaxid.cli.{name}").register(sub)
    for p in sub.choices.values():  # also after the subcommand; SUPPRESS keeps the global one
        p.add_argument("--strict", action="store_true", default=argparse.SUPPRESS, help=_STRICT_HELP)
    return parser


@contextlib.contextmanager
def terminal_warnings(command: str, *, strict: bool = False):
    """Within the block every warning is printed as one ``jaxid COMMAND: warning: ...`` line on
    stderr (a repeated text once), regardless of the interpreter's filters; with ``strict`` it
    is raised instead (``main`` ends the run with `STRICT_EXIT`). Deprecation, import and
    resource warnings are ignored."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if text not in seen:
            seen.add(text)
            print(f"jaxid {command}: warning: {text}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("error" if strict else "always")
        for category in _TOOL_WARNINGS:
            warnings.filterwarnings("ignore", category=category)
        warnings.showwarning = show
        yield


#: A comma-separated list whose first entry is negative ("-12.5,10.7"): argparse would take it
#: for an option (its negative-number rule covers single numbers only).
_NEGATIVE_LIST = re.compile(r"-\.?\d[^,]*(,[^,]*)+")


def _join_negative_lists(argv: list[str]) -> list[str]:
    """``--gains -12.5,10.7`` as ``--gains=-12.5,10.7``, so a list option takes its value."""
    out: list[str] = []
    for a in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE_LIST.fullmatch(a):
            out[-1] = f"{out[-1]}={a}"
        else:
            out.append(a)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(_join_negative_lists(argv))
    args.command_line = ["jaxid", *argv]  # as given, for the reports' Commands section
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
    # A library warning is a line for the user, not a source location and a line of code.
    warnings.formatwarning = lambda message, *_, **__: f"jaxid {args.command}: warning: {message}\n"
    try:
        with terminal_warnings(args.command, strict=getattr(args, "strict", False)):
            code = int(args.func(args) or 0)
    except Warning as exc:  # --strict: a warning is an error
        print(f"jaxid {args.command}: error: {exc} (a warning; an error under --strict)", file=sys.stderr)
        return STRICT_EXIT
    except (UserError, FileNotFoundError, ValueError) as exc:
        print(f"jaxid {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        if "pip install" not in str(exc):  # a missing extra says what to install; anything else is a bug
            raise
        print(f"jaxid {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as exc:
        if not _out_of_memory(exc):
            raise
        print(f"jaxid {args.command}: error: {_out_of_memory(exc)}", file=sys.stderr)
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


def _out_of_memory(exc: BaseException) -> str | None:
    """One line for an out-of-memory error (numpy's MemoryError, XLA's RESOURCE_EXHAUSTED
    runtime error), None for any other error. XLA's message runs over many lines: its first
    line names the allocation."""
    text = str(exc)
    if not isinstance(exc, MemoryError) and "RESOURCE_EXHAUSTED" not in text and "Out of memory" not in text:
        return None
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = first.removeprefix("RESOURCE_EXHAUSTED:").strip()
    return (
        f"out of memory{': ' + first if first else ''}; use fewer samples (--step K keeps every K-th) or a "
        "machine with more memory"
    )


def entry() -> None:
    """The ``jaxid`` console script and ``python -m jaxid``: `main`, then exit. After an
    interruption the process ends at once (``os._exit``): a compile still running in XLA's
    threads can crash the interpreter's teardown, and every output is already complete or
    absent (atomic writes). SIGINT ends the run with status 130 even where the parent process
    ignores it (a background job of a script)."""
    import os
    import signal

    # A process started in the background of a script inherits SIGINT ignored, and Python then
    # installs no KeyboardInterrupt handler: an interrupt (kill -INT, Ctrl-C forwarded by a
    # supervisor) was swallowed and the run ended with status 0. jaxid always takes it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _watch_signals()
    try:
        code = main()
    except KeyboardInterrupt:  # while the parser and the subcommand's modules were loading
        command = next((a for a in sys.argv[1:] if a in COMMANDS), "")
        print(f"jaxid{' ' + command if command else ''}: interrupted", file=sys.stderr)
        code = 130
    if code in (130, 143):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


#: Seconds the main thread has, after Ctrl-C or SIGTERM, to end the run itself.
SIGNAL_GRACE_S = 2.0


def _watch_signals() -> None:
    """End the process soon after SIGINT/SIGTERM even while the main thread is inside a long
    XLA compile, where Python runs no signal handler until the compile returns (minutes on a
    loaded machine). The C-level handler writes the signal number to a wakeup fd; a daemon
    thread reading it gives the main thread SIGNAL_GRACE_S to finish cleanly (discarding open
    atomic writes), then prints the same one line and exits 130/143."""
    import os
    import signal
    import threading
    import time

    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def watch():
        while True:
            data = os.read(r, 16)
            for signum in data:
                if signum in (signal.SIGINT, signal.SIGTERM):
                    time.sleep(SIGNAL_GRACE_S)
                    code, word = (130, "interrupted") if signum == signal.SIGINT else (143, "terminated")
                    command = next((a for a in sys.argv[1:] if a in COMMANDS), "")
                    print(f"jaxid{' ' + command if command else ''}: {word}", file=sys.stderr, flush=True)
                    os._exit(code)

    threading.Thread(target=watch, name="jaxid-signals", daemon=True).start()

    # A signal that lands while Python runs a callback it cannot raise from (jax's gc callback,
    # a finaliser) is "ignored" with a traceback on stderr; the watcher above still ends the
    # run with its one line, so that traceback is only noise.
    default = sys.unraisablehook

    def unraisable(info):
        if not isinstance(info.exc_value, (KeyboardInterrupt, Terminated)):
            default(info)

    sys.unraisablehook = unraisable


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

"""Progress of a long computation on stderr: a tqdm bar on a terminal, plain lines elsewhere.

A tqdm bar redraws one line with carriage returns, which a log file, a CI job or ``nohup`` shows
as nothing (tqdm turns itself off without a terminal) or as one endless line. Without a terminal
[`bar`][jaxid.progress.bar] writes a complete line instead, at most every [`INTERVAL`][jaxid.progress.INTERVAL] seconds and only once
the computation has run that long (a short one prints nothing), e.g.
``excitation: 1200/3000 steps (40 %), cond 12.3, 25 s``.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

#: Seconds between two progress lines when there is no terminal.
INTERVAL = 5.0


def _terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _number(v) -> str:
    """v as a message shows it: 4 significant digits for a float, numpy scalars plain."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else str(v)
    return str(v)


def _duration(s: float) -> str:
    s = int(round(s))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


class Lines:
    """The part of tqdm's interface that jaxid uses (``update``, ``set_postfix``, iteration,
    ``with``), written as a plain line every ``interval`` seconds to ``file``."""

    def __init__(
        self,
        iterable: Iterable | None = None,
        *,
        total: int | None = None,
        desc: str | None = None,
        unit: str = "it",
        file=None,
        interval: float | None = None,
        clock=time.monotonic,
    ):
        self.iterable, self.desc, self.unit = iterable, desc or "progress", unit
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total, self.n = total, 0
        self.postfix: dict[str, Any] = {}
        self.file = sys.stderr if file is None else file
        self.interval, self.clock = INTERVAL if interval is None else float(interval), clock
        self.start = self.last = clock()
        self.printed, self.shown = 0, -1

    def __iter__(self) -> Iterator:
        for x in self.iterable or ():
            yield x
            self.update(1)
        self.close()

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def set_postfix(self, values: dict[str, Any] | None = None, refresh: bool = True, **kwargs) -> None:
        self.postfix = {**(values or {}), **kwargs}

    def line(self) -> str:
        """The current line: description, count (and share of the total), postfix, time."""
        unit = "" if self.unit == "it" else " " + (self.unit if self.unit.endswith("s") else self.unit + "s")
        count = f"{self.n}/{self.total}{unit} ({100 * self.n // self.total} %)" if self.total else f"{self.n}{unit}"
        extra = "".join(f", {k} {_number(v)}" for k, v in self.postfix.items())
        return f"{self.desc}: {count}{extra}, {_duration(self.clock() - self.start)}"

    def _write(self) -> None:
        try:
            print(self.line(), file=self.file, flush=True)
        except (OSError, ValueError):  # a closed or broken stream: progress is never worth an error
            pass
        self.printed, self.shown, self.last = self.printed + 1, self.n, self.clock()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.clock() - self.last >= self.interval:
            self._write()

    def close(self) -> None:
        """A last line, if any was printed (the reader saw it start, and now sees it end)."""
        if self.printed and self.shown != self.n:
            self._write()
        self.printed = 0


def bar(iterable: Iterable | None = None, *, total=None, desc=None, unit="it", enabled=True, file=None, interval=None):
    """Progress over ``iterable`` (or ``update``-d by hand, with ``total``) on ``file`` (default
    stderr): a tqdm bar where it is a terminal, [`Lines`][jaxid.progress.Lines] otherwise, nothing unless
    ``enabled``. interval: seconds between lines (default [`INTERVAL`][jaxid.progress.INTERVAL])."""
    file = sys.stderr if file is None else file
    interval = INTERVAL if interval is None else interval
    if enabled and not _terminal(file):
        return Lines(iterable, total=total, desc=desc, unit=unit, file=file, interval=interval)
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, file=file, disable=not enabled, leave=False)

"""Progress without a terminal: a plain line every few seconds (a log file, a CI job, nohup), a
tqdm bar on a terminal, nothing for a short run or under --quiet."""

import io

import numpy as np
import pytest

import jaxid
from jaxid import progress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_lines_every_interval_with_count_postfix_and_time():
    out, clock = io.StringIO(), Clock()
    with progress.Lines(total=300, desc="excitation", unit="step", file=out, interval=5.0, clock=clock) as bar:
        for _ in range(30):
            clock.t += 1.0  # 10 steps a second
            bar.update(10)
            bar.set_postfix({"cond": np.float64(12.3456)})
    lines = out.getvalue().splitlines()
    assert lines[0] == "excitation: 50/300 steps (16 %), cond 12.35, 5 s"
    assert lines[1].startswith("excitation: 100/300 steps (33 %)")
    assert len(lines) == 6 and lines[-1].startswith("excitation: 300/300 steps (100 %)") and lines[-1].endswith("30 s")
    assert "np.float64" not in out.getvalue() and "\r" not in out.getvalue()


def test_a_short_run_prints_nothing_and_a_last_line_ends_a_long_one():
    out, clock = io.StringIO(), Clock()
    for _ in progress.Lines(range(4), desc="regressor", file=out, interval=5.0, clock=clock):
        clock.t += 1.0
    assert out.getvalue() == ""
    for _ in progress.Lines(range(7), desc="regressor", file=out, interval=5.0, clock=clock):
        clock.t += 1.0
    assert out.getvalue().splitlines() == ["regressor: 5/7 (71 %), 5 s", "regressor: 7/7 (100 %), 7 s"]


def test_bar_is_lines_without_a_terminal_tqdm_on_one_and_off_when_quiet():
    from tqdm import tqdm

    assert isinstance(progress.bar(range(3), file=io.StringIO()), progress.Lines)
    on_terminal = progress.bar(range(3), file=Terminal())
    assert isinstance(on_terminal, tqdm) and not on_terminal.disable
    on_terminal.close()
    quiet = io.StringIO()
    assert list(progress.bar(range(3), file=quiet, enabled=False)) == [0, 1, 2] and quiet.getvalue() == ""


def test_excitation_reports_progress_on_a_non_terminal_stderr(monkeypatch, capsys):
    """The optimiser of `jaxid excite`, which printed nothing without a terminal for minutes."""
    from jaxid.excitation.optimize import optimize

    monkeypatch.setattr(progress, "INTERVAL", 0.0)  # a line per chunk of steps
    optimize(jaxid.models.planar(2), harmonics=2, n_starts=2, steps=20, progress=True)
    err = capsys.readouterr().err.splitlines()
    lines = [x for x in err if x.startswith("excitation: ")]
    # The optimiser's loss, named as such: the cond times the limit penalties (the cond once they are met).
    assert lines[0].startswith("excitation: 10/20 steps (50 %), cond x penalty ")
    assert lines[-1].startswith("excitation: 20/20")
    optimize(jaxid.models.planar(2), harmonics=2, n_starts=2, steps=20, progress=False)
    assert "excitation" not in capsys.readouterr().err


@pytest.mark.parametrize("quiet", [False, True])
def test_cli_progress_follows_quiet(monkeypatch, capsys, quiet):
    from jaxid.cli.common import progress as cli_progress

    monkeypatch.setattr(progress, "INTERVAL", 0.0)
    assert list(cli_progress(range(2), desc="regressor", quiet=quiet)) == [0, 1]
    err = capsys.readouterr().err
    assert (err == "") == quiet and ("" if quiet else "regressor: 1/2 (50 %)") in err

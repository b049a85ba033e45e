"""The output guard (jaxid.workflow.paths): every path of every command, checked before the work.

Request-level: the requests of the Python API refuse clobbering outputs and runs given twice when
they are made; ``commands.check_paths`` refuses unreadable inputs and unwritable outputs. Two CLI
runs check the one-line message and that nothing was written; one subprocess checks that an
interrupt ends a run with status 130 even where the parent ignores SIGINT.
"""

import os
import signal
import subprocess
import sys

import pytest

from jaxid.cli import main
from jaxid.workflow import WorkflowError, commands, paths
from jaxid.workflow.requests import (
    CrossvalRequest,
    DataSpec,
    ExciteRequest,
    IdentifyRequest,
    LugreRequest,
    ModelSpec,
    PayloadRequest,
    SimulateRequest,
    ValidateRequest,
)


@pytest.fixture()
def d(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.csv").write_text("t,q1,tau1\n0,0,0\n")
    (tmp_path / "b.csv").write_text("t,q1,tau1\n0,0,1\n")
    (tmp_path / "arm.urdf").write_text("<robot name='x'/>")
    (tmp_path / "folder").mkdir()
    return tmp_path


def refused(make, *words):
    with pytest.raises(WorkflowError) as e:
        make()
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


# ------------------------------------------------------------------------ outputs over outputs
def test_equal_outputs_are_refused_with_both_flags(d):
    urdf = ModelSpec(urdf="arm.urdf")
    refused(lambda: IdentifyRequest(data=("a.csv",), output="p.json", json="p.json"), "-o and --json", "'p.json'")
    refused(
        lambda: IdentifyRequest(data=("a.csv",), model=urdf, output="x.urdf", urdf_out="x.urdf"),
        "-o and --urdf-out",
    )
    # Spelled differently, the same file: both spellings named.
    refused(lambda: IdentifyRequest(data=("a.csv",), output="p.json", json="./sub/../p.json"), "-o 'p.json'")
    refused(lambda: SimulateRequest(trajectory="a.csv", output="m.csv", truth="m.csv"), "-o and --truth")
    # The sidecar OUT.json of a dataset or trajectory written is an output too.
    refused(lambda: SimulateRequest(trajectory="a.csv", output="m.csv", true_params="m.csv.json"), "sidecar of -o")
    refused(lambda: SimulateRequest(trajectory="a.csv", output="m.csv", truth="t.csv", json="t.csv.json"), "--truth")
    refused(lambda: ExciteRequest(output="e.csv", json="e.csv.json"), "the sidecar of -o 'e.csv' and --json")
    ExciteRequest(output="e.json", json="e.json.json")  # a ROS 2 trajectory has no sidecar
    refused(lambda: PayloadRequest(data="a.csv", output="r.json", json="r.json"), "-o and --json")
    refused(lambda: LugreRequest(data="a.csv", output="r.json", json="r.json"), "-o and --json")
    # A file that an output folder receives.
    refused(lambda: IdentifyRequest(data=("a.csv",), report="rep", json="rep/report.html"), "--report 'rep' writes")
    refused(lambda: ValidateRequest(data=("a.csv",), params="p.json", out="v", json="v/metrics.json"), "--out 'v'")
    # validate draws DATA's figure as --out/STEM_torques.png: two runs of one name would share it.
    refused(lambda: ValidateRequest(data=("a/run.csv", "b/run.csv"), params="p.json", out="v"), "'run_torques.png'")
    ValidateRequest(data=("a/run.csv", "b/run.csv"), params="p.json")  # --no-figures
    # Two output folders may be one folder when what they receive differs.
    ValidateRequest(data=("a.csv",), params="p.json", out="v", report="v")


def test_symlinked_output_is_the_same_file(d):
    (d / "p.json").write_text("{}")
    os.symlink(d / "p.json", d / "link.json")
    refused(lambda: IdentifyRequest(data=("a.csv",), output="p.json", json="link.json"), "'link.json'", "same file")


# ------------------------------------------------------------------------- outputs over inputs
def test_outputs_over_inputs_are_refused(d):
    refused(lambda: IdentifyRequest(data=("a.csv",), output="a.csv"), "-o 'a.csv'", "DATA 'a.csv'", "destroy the data")
    refused(
        lambda: IdentifyRequest(data=("a.csv",), model=ModelSpec(urdf="arm.urdf"), urdf_out="arm.urdf"),
        "--urdf-out 'arm.urdf' is the input file of --urdf 'arm.urdf'",
    )
    refused(lambda: IdentifyRequest(data=("a.csv",), output="a.csv.json"), "is the sidecar of DATA 'a.csv'")
    refused(lambda: IdentifyRequest(data=("a.csv",), prepare=DataSpec(mapping="m.json"), json="m.json"), "--mapping")
    refused(lambda: IdentifyRequest(data=("a.csv",), method="iv", reference=("b.csv",), output="b.csv"), "--reference")
    refused(lambda: ValidateRequest(data=("a.csv",), params="p.json", json="p.json"), "--params 'p.json'")
    refused(lambda: SimulateRequest(trajectory="a.csv", output="a.csv"), "--trajectory 'a.csv'")
    refused(lambda: PayloadRequest(data="a.csv", params="p.json", output="p.json"), "--params")
    refused(lambda: PayloadRequest(data="a.csv", unloaded="b.csv", output="b.csv"), "--unloaded 'b.csv'")
    refused(lambda: LugreRequest(data="a.csv", validation="b.csv", output="b.csv"), "--validation 'b.csv'")
    refused(lambda: ExciteRequest(output="arm.urdf.csv", model=ModelSpec(urdf="arm.urdf.csv")), "--urdf")
    refused(lambda: CrossvalRequest(data=("a.csv", "b.csv"), json="b.csv"), "--json 'b.csv'", "DATA 'b.csv'")


# ------------------------------------------------------------------------- runs given twice
def test_a_run_given_twice_is_refused(d):
    os.symlink(d / "a.csv", d / "alias.csv")
    os.link(d / "b.csv", d / "hard.csv")
    refused(lambda: IdentifyRequest(data=("a.csv", "./a.csv")), "DATA 'a.csv' and DATA './a.csv'", "sqrt(2)")
    refused(lambda: IdentifyRequest(data=("a.csv", "alias.csv")), "same file")  # a symlink
    refused(lambda: IdentifyRequest(data=("b.csv", "hard.csv")), "same file")  # a hard link
    refused(lambda: CrossvalRequest(data=("a.csv", "b.csv", "alias.csv")), "same file")
    refused(lambda: ValidateRequest(data=("a.csv", str(d / "a.csv")), params="p.json"), "give each run once")
    refused(
        lambda: IdentifyRequest(data=("a.csv", "b.csv"), consistent=True, validate_on=("alias.csv",)),
        "--validate-on 'alias.csv' is the training file DATA 'a.csv'",
    )
    refused(lambda: LugreRequest(data="a.csv", validation="alias.csv"), "is the training file CSV 'a.csv'")
    refused(lambda: PayloadRequest(data="a.csv", unloaded="alias.csv"), "two different runs")
    # Two runs of one trajectory share their --reference: that is not a run given twice.
    IdentifyRequest(data=("a.csv", "b.csv"), method="iv", reference=("r.csv", "r.csv"))


def test_a_copy_of_a_run_is_refused(d):
    (d / "copy.csv").write_bytes((d / "a.csv").read_bytes())
    (d / "same_size.csv").write_text("t,q1,tau1\n0,0,2\n")  # one size, other bytes: two runs
    check = commands.check_paths
    with pytest.raises(WorkflowError, match="DATA 'a.csv' and DATA 'copy.csv' have the same content"):
        check(IdentifyRequest(data=("a.csv", "copy.csv")))
    with pytest.raises(WorkflowError, match="--validate-on 'copy.csv' has the same content as the training file"):
        check(IdentifyRequest(data=("a.csv",), consistent=True, validate_on=("copy.csv",)))
    check(IdentifyRequest(data=("a.csv", "b.csv", "same_size.csv")))


# ------------------------------------------------------------------------- the files themselves
def test_inputs_that_are_folders_or_unreadable(d, monkeypatch):
    check = commands.check_paths
    (d / "gears.json").mkdir()
    for spec, flag, what in (
        (ModelSpec(urdf="folder"), "--urdf folder", "URDF"),
        (ModelSpec(dh="folder"), "--dh folder", "DH table"),
        (ModelSpec(mjcf="folder"), "--mjcf folder", "MJCF"),
        (ModelSpec(robot="planar2", transmission="gears.json"), "--transmission gears.json", "transmission"),
    ):
        req = IdentifyRequest(data=("a.csv",), model=spec)
        refused(lambda: check(req), f"{flag}: is a directory, not a {what} file")
    req = IdentifyRequest(data=("a.csv",), prepare=DataSpec(mapping="folder"))
    refused(lambda: check(req), "--mapping folder: is a directory")
    refused(lambda: check(ExciteRequest(output="e.csv", model=ModelSpec(urdf="arm.urdf"), srdf="folder")), "--srdf")
    refused(lambda: check(SimulateRequest(trajectory="folder", output="m.csv")), "--trajectory folder")
    refused(lambda: check(LugreRequest(data="folder")), "CSV folder: is a directory, not a friction CSV file")
    refused(lambda: check(ValidateRequest(data=("a.csv",), params="folder")), "not a params.json file")
    # A reference is read after the data: its absence is refused before.
    req = IdentifyRequest(data=("a.csv",), method="iv", reference=("gone.csv",))
    refused(lambda: check(req), "--reference: no such file 'gone.csv'")
    # A data file may be a folder (a ROS 2 bag): its reader checks it.
    check(IdentifyRequest(data=("folder",)))

    def denied(file, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(file))

    monkeypatch.setattr(paths, "open", denied, raising=False)  # simulated: tests may run as root
    refused(lambda: check(IdentifyRequest(data=("a.csv",), model=ModelSpec(urdf="arm.urdf"))), "permission denied")


def test_outputs_that_cannot_be_written(d, monkeypatch):
    check = commands.check_paths
    (d / "ro.json").write_text("{}")
    (d / "ro.json").chmod(0o444)
    refused(lambda: check(IdentifyRequest(data=("a.csv",), output="ro.json")), "-o ro.json", "read-only")
    refused(lambda: check(IdentifyRequest(data=("a.csv",), json="ro.json")), "--json ro.json", "read-only")
    refused(lambda: check(IdentifyRequest(data=("a.csv",), output="folder")), "is a directory")
    refused(lambda: check(IdentifyRequest(data=("a.csv",), output="none/p.json")), "does not exist")
    refused(lambda: check(IdentifyRequest(data=("a.csv",), report="ro.json")), "--report 'ro.json' is a file")
    # A report folder whose report.html is read-only; a folder that can be made (nested) is fine.
    (d / "rep").mkdir()
    (d / "rep" / "report.html").write_text("")
    (d / "rep" / "report.html").chmod(0o444)
    refused(lambda: check(IdentifyRequest(data=("a.csv",), report="rep")), "report.html: the file is read-only")
    check(IdentifyRequest(data=("a.csv",), report="new/deeper"))
    refused(lambda: check(IdentifyRequest(data=("a.csv",), report="a.csv/sub")), "cannot create the folder")
    from jaxid import atomic

    with pytest.raises(atomic.OutputPathError, match="read-only"):  # library writers too
        with atomic.atomic_write(d / "ro.json") as f:
            f.write("x")
    assert (d / "ro.json").read_text() == "{}"
    real = os.access
    monkeypatch.setattr(paths.os, "access", lambda p, m: False if str(p) == str(d) else real(p, m))
    refused(lambda: check(IdentifyRequest(data=("a.csv",), report="newrep")), "is not writable (permission denied)")
    monkeypatch.setattr(paths.os, "access", real)
    # A folder made read-only by its owner is respected even by root, whom os.access lets through.
    (d / "ro").mkdir()
    (d / "ro").chmod(0o555)
    try:
        refused(lambda: check(IdentifyRequest(data=("a.csv",), report="ro")), "'ro': the folder is read-only")
        refused(lambda: check(IdentifyRequest(data=("a.csv",), output="ro/p.json")), "is not writable")
    finally:
        (d / "ro").chmod(0o755)


# ----------------------------------------------------------------------------------- the CLI
def test_cli_refuses_before_the_work_and_writes_nothing(d, capsys):
    (d / "p.json").write_text("old")
    argv = ["identify", "--robot", "planar2", "a.csv", "-o", "p.json", "--json", "p.json", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "jaxid identify: error: -o and --json are the same file 'p.json': one would overwrite the other; "
        "give each output its own path"
    )
    assert (d / "p.json").read_text() == "old"
    argv = ["identify", "--urdf", "folder", "a.csv", "-o", "q.json", "--report", "p.json"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxid identify: error: --urdf folder: is a directory") and "\n" not in err
    assert not (d / "q.json").exists()


def test_interrupt_exits_130_even_when_the_parent_ignores_sigint(d):
    """A background job of a script inherits SIGINT ignored; the run must still end with 130."""
    code = (
        "import os, signal, sys, time\n"
        "from jaxid import cli\n"
        "from jaxid.workflow import commands\n"
        "def slow(*a, **k):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(30)\n"
        "commands.run_identify = slow\n"
        "sys.argv = ['jaxid', 'identify', '--robot', 'planar2', 'a.csv', '--quiet']\n"
        "cli.entry()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "JAXID_CACHE_DIR": "off"}
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "jaxid identify: interrupted", r.stderr

"""The command requests (jaxid.workflow.requests): a bad combination of settings is refused when
the request is made, through the Python API, with the message the command line prints."""

import pytest

from jaxid.cli import main
from jaxid.workflow import WorkflowError
from jaxid.workflow.requests import (
    BoundsSpec,
    CrossvalRequest,
    DataSpec,
    ExciteRequest,
    IdentifyRequest,
    ModelSpec,
    PayloadSpec,
    SimulateRequest,
)

CASES = [
    (
        lambda: IdentifyRequest(data=("d.csv",), friction="lugre", consistent=True),
        ["identify", "--robot", "planar2", "--friction", "lugre", "--consistent", "d.csv"],
        "--consistent cannot be combined with --friction lugre",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), validate_on=("h.csv",)),
        ["identify", "--robot", "planar2", "--validate-on", "h.csv", "--", "d.csv"],
        "--validate-on chooses the prior weight of --consistent; add --consistent",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), bounds=BoundsSpec(mass_tol=0.3)),
        ["identify", "--robot", "planar2", "--mass-tol", "0.3", "d.csv"],
        "bound the bodies of --consistent; add --consistent",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), reference=("r.csv",)),
        ["identify", "--robot", "planar2", "--reference", "r.csv", "--", "d.csv"],
        "--reference gives the instruments of --method iv or didim",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), urdf_out="arm.xml"),
        ["identify", "--robot", "planar2", "--urdf-out", "arm.xml", "d.csv"],
        "--urdf-out 'arm.xml' must end in .urdf",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), urdf_out="arm.urdf", urdf_lump=True),
        ["identify", "--robot", "planar2", "--urdf-out", "arm.urdf", "--urdf-lump", "d.csv"],
        "--urdf-lump is for writing into a copy of the --urdf FILE",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), model=ModelSpec(tip_link="tool0")),
        ["identify", "--tip-link", "tool0", "d.csv"],
        "--tip-link selects the chain of a URDF file",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), model=ModelSpec(stribeck_vs="fit")),
        ["identify", "--robot", "planar2", "--stribeck-vs", "fit", "d.csv"],
        "--stribeck-vs fit identifies the Stribeck velocity of the fs term",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), model=ModelSpec(joint_terms="fv,stiction")),
        ["identify", "--robot", "planar2", "--joint-terms", "fv,stiction", "d.csv"],
        "unknown term(s) ['stiction']",
    ),
    (
        lambda: IdentifyRequest(data=("d.csv",), prepare=DataSpec(step=0)),
        ["identify", "--robot", "planar2", "--step", "0", "d.csv"],
        "--step must be an integer >= 1, got 0",
    ),
    (
        lambda: CrossvalRequest(data=("a.csv", "b.csv"), prior_weights="1e-3,x"),
        ["crossval", "--robot", "planar2", "--prior-weights", "1e-3,x", "a.csv", "b.csv"],
        "--prior-weights must be comma-separated numbers, got '1e-3,x'",
    ),
    (
        lambda: CrossvalRequest(data=("a.csv",)),
        ["crossval", "--robot", "planar2", "a.csv"],
        "crossval needs at least two dataset files, got 1",
    ),
    (
        lambda: SimulateRequest(trajectory="t.csv", output="s.txt"),
        ["simulate", "--robot", "planar2", "--trajectory", "t.csv", "-o", "s.txt"],
        "must end in .csv or .npz",
    ),
    (
        lambda: SimulateRequest(trajectory="t.csv", output="s.csv", stribeck_vs=0.02),
        ["simulate", "--robot", "planar2", "--trajectory", "t.csv", "-o", "s.csv", "--stribeck-vs", "0.02"],
        "add fs to --friction",
    ),
    (
        lambda: SimulateRequest(trajectory="t.csv", output="s.csv", payload=PayloadSpec(com=(0, 0, 0.1))),
        ["simulate", "--robot", "planar2", "--trajectory", "t.csv", "-o", "s.csv", "--payload-com", "0", "0", "0.1"],
        "give its --payload-mass too",
    ),
    (
        lambda: ExciteRequest(output="e.csv", fs=float("nan")),
        ["excite", "--robot", "planar2", "--fs", "nan", "-o", "e.csv"],
        "--fs must be a finite sample rate",
    ),
    (
        lambda: ExciteRequest(output="e.csv", srdf="arm.srdf"),
        ["excite", "--robot", "ur5", "--srdf", "arm.srdf", "-o", "e.csv"],
        "--srdf names link pairs of a URDF",
    ),
    (
        lambda: ExciteRequest(output="e.csv", model=ModelSpec(joint_terms=("fv", "fs"), stribeck_vs="fit")),
        ["excite", "--robot", "planar2", "--joint-terms", "fv,fs", "--stribeck-vs", "fit", "-o", "e.csv"],
        "--stribeck-vs fit is for 'jaxid identify'",
    ),
]


@pytest.mark.parametrize("make, argv, message", CASES, ids=[c[1][0] + ":" + c[2][:30] for c in CASES])
def test_a_bad_request_is_refused_as_the_command_refuses_it(make, argv, message, capsys, tmp_path, monkeypatch):
    """The Python API raises WorkflowError with the message the command prints (exit 2), before any work."""
    with pytest.raises(WorkflowError) as caught:
        make()
    assert message in str(caught.value)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"jaxid {argv[0]}: error: {caught.value}"


def test_requests_are_frozen_and_normalised():
    r = IdentifyRequest(
        data="d.csv", consistent=True, bounds=BoundsSpec(total_mass="10,20"), model=ModelSpec(joint_terms="fv, fc")
    )
    assert r.data == ("d.csv",) and r.bounds.total_mass == (10.0, 20.0) and r.model.joint_terms == ("fv", "fc")
    with pytest.raises(AttributeError):
        r.method = "ols"
    assert CrossvalRequest(data=["a", "b"], prior_weights="0,1e-3").prior_weights == (0.0, 1e-3)
    assert SimulateRequest(trajectory="t.csv", output="s.csv", seed=3, noise_seed=5).seeds == (3, 5)

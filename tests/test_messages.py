"""Messages a user reads: joints counted from 1 beside their names (as in the parameter names
``fv5``, ``Izz7``), numbers printed plainly (never ``np.float64(...)``)."""

import numpy as np
import pytest

import jaxid
from jaxid import signals, simulation
from jaxid.arrays import plain
from jaxid.identification import payload_design
from jaxid.identification.estimators import refusal


def _message(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as e:
        fn(*args, **kwargs)
    return str(e.value)


def test_plain_turns_numpy_values_into_python_ones():
    assert repr(plain(np.float64(0.5))) == "0.5"
    assert repr(plain([np.int64(2), np.float64(1.5)])) == "[2, 1.5]"
    assert repr(plain((np.arange(2), "a"))) == "([0, 1], 'a')"
    assert plain("text") == "text"


def test_refused_rows_name_the_joint_from_one():
    n = 6
    W, tau = np.ones((4 * n, 3)), np.ones(4 * n)
    tau[2 * n + 2] = np.nan  # sample 2 (0-based, as numpy indexes it), the third joint
    message = refusal(W, tau, n)
    assert "sample 2, joint 3" in message


def test_mimic_messages_count_joints_from_one_beside_names(ur5):
    args = (ur5.placements, ur5.axes, ur5.inertial)
    names = [f"j{k}" for k in range(1, 7)]
    loop = [None, None, (1, 1.0, 0.0), (2, 1.0, 0.0), None, None]  # the 4th mimics the 3rd, itself a mimic
    message = _message(jaxid.Robot, *args, names=names, mimic=loop)
    assert "joint 4 (j4) mimics joint 3 (j3)" in message
    bad = [None, None, None, None, (1, np.float64(np.nan), 0.0), None]
    message = _message(jaxid.Robot, *args, names=names, mimic=bad)
    assert message.startswith("joint 5 (j5): ")
    assert "np.float64" not in message and "got nan, 0.0" in message


def test_zero_axis_is_named_from_one(ur5):
    axes = np.array(ur5.axes)
    axes[1] = 0.0
    message = _message(jaxid.Robot, ur5.placements, axes, ur5.inertial)
    assert "zero axis at joint(s) [2]" in message


def test_numpy_arguments_are_echoed_as_plain_numbers():
    message = _message(signals.savgol, np.zeros(20), np.int64(-3), 2)
    assert "np.int64" not in message and "got -3" in message
    message = _message(payload_design.smoothing_noise_gain, np.float64(1.5))
    assert "np.float64" not in message and "got 1.5" in message


def test_payload_box_is_echoed_as_plain_numbers():
    message = _message(simulation.payload_vector, 1.0, np.zeros(3), box=(np.float64(0.1), np.float64(-1.0), 0.2))
    assert "np.float64" not in message and "(0.1, -1.0, 0.2)" in message


def test_built_in_models_have_one_public_module():
    """`jaxid.models` (plural) is the name for the built-ins; `jaxid.model` (singular) is the
    package of classes and readers. Every public function or class of the implementation
    (`jaxid.model.library`) is in `jaxid.models` as the same object, and nothing a user reads
    (README, docs, notebooks, examples) imports the built-ins from the implementation."""
    import inspect
    import pathlib

    from jaxid.model import library

    public = [
        k
        for k, v in vars(library).items()
        if not k.startswith("_") and getattr(v, "__module__", None) == library.__name__
    ]
    assert public and set(public) <= set(jaxid.models.__all__)
    assert all(getattr(jaxid.models, k) is getattr(library, k) for k in jaxid.models.__all__ if hasattr(library, k))
    assert inspect.getdoc(jaxid.model) and "jaxid.models" in inspect.getdoc(jaxid.model)
    root = pathlib.Path(__file__).resolve().parents[1]
    read = [root / "README.md", *(root / "docs").rglob("*.md"), *(root / "notebooks").glob("*.ipynb")]
    read += [*(root / "examples").rglob("*.py")]
    said = [p.name for p in read if "jaxid.model.library import" in p.read_text() or "model.library." in p.read_text()]
    assert not said, said


def test_limit_and_column_messages_number_the_joint_beside_its_name(ur5):
    from jaxid import data
    from jaxid.excitation.optimize import model_limits

    q_max = np.array(ur5.q_max)
    q_max[2] = float(ur5.q_min[2]) - 1.0
    args = (ur5.placements, ur5.axes, ur5.inertial)
    names = [f"j{k}" for k in range(1, 7)]
    message = _message(jaxid.Robot, *args, names=names, q_min=ur5.q_min, q_max=q_max)
    assert message.startswith("joint 3 (j3): position limits inverted")
    flat = jaxid.Robot(*args, names=names, q_min=np.zeros(6), q_max=np.r_[1.0, 0.0, np.ones(4)])
    assert _message(model_limits, flat).startswith("joint 2 (j2): q_min = 0 >= q_max = 0")
    with pytest.raises(data.DatasetError) as e:
        data.order_by_joint_names(["a_pos", "b_pos"], ["a", "b", "c"])
    assert "joint 3 (c) of the model is named by no column" in str(e.value)

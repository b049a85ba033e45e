"""The README's Python example runs as written (so its shapes and counts cannot drift)."""
import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    ns = {}
    exec(compile(code, str(README), "exec"), ns)
    assert ns["Y"].shape == (500, 6, 72) and ns["base"].rank == 48
    # 1 % torque noise, 48 parameters from 3000 equations: the fitted part of the noise leaves a
    # prediction error of about 1 % * sqrt(48 / 3000) = 0.13 % per joint; allow 3x that.
    pred = (ns["base"].reduce(ns["W"]) @ ns["fit"].theta).reshape(-1, 6)
    assert np.all(np.asarray(ns["jaxid"].metrics.nrmse(ns["tau"], pred)) < 0.4)

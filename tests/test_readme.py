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
    # 1 % torque noise on 500 random states: the fit predicts every joint to well under 1 %.
    pred = (ns["base"].reduce(ns["W"]) @ ns["fit"].theta).reshape(-1, 6)
    assert np.all(np.asarray(ns["jaxid"].metrics.nrmse(ns["tau"], pred)) < 1.0)

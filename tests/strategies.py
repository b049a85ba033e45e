"""Hypothesis strategies of the property tests: float64 arrays of FIXED shapes, so that each
jitted function compiles once per test file however many examples run."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays


def bounded(shape, lo=-3.0, hi=3.0):
    """Arrays of ``shape`` with every entry drawn (no fill value) from [lo, hi]; no subnormals,
    which XLA's CPU backend flushes to zero."""
    return arrays(np.float64, shape, elements=st.floats(lo, hi, allow_subnormal=False), fill=st.nothing())


def states(shape, bound=3.0):
    """(q, qd, qdd), each of ``shape``, entries in [-bound, bound] (rad, rad/s, rad/s^2)."""
    return st.tuples(*(bounded(shape, -bound, bound) for _ in range(3)))

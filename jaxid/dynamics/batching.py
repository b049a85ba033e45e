"""Apply single-sample model functions to inputs with any number of leading batch axes."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def batched(fn, model, *arrays):
    """Call ``fn(model, *arrays)`` where each array is (n,) or (..., n); vmap over leading axes.

    All arrays must share the same leading shape. Returns outputs with that leading shape.
    """
    arrays = [jnp.asarray(x, dtype=float) for x in arrays]
    n = model.n
    lead = arrays[0].shape[:-1]
    for x in arrays:
        if x.ndim == 0 or x.shape[-1] != n:
            raise ValueError(f"expected arrays of shape (n,) or (N, n) with n={n} joints, got {x.shape}")
        if x.shape[:-1] != lead:
            raise ValueError(f"inputs have different batch shapes: {[a.shape for a in arrays]}")
    f = lambda *xs: fn(model, *xs)
    for _ in lead:
        f = jax.vmap(f)
    return f(*arrays)

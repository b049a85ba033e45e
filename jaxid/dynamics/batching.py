"""Apply single-sample model functions to inputs with any number of leading batch axes."""
from __future__ import annotations

import jax
import jax.numpy as jnp

# Samples per vmapped chunk. Large batches are run as a loop over chunks (lax.map with
# batch_size): a chunk's intermediates stay in cache, which measured 5x faster than one
# vmap over 10,000 UR5 samples on 2 CPU cores (benchmarks/regressor.py).
CHUNK = 1024


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
    if not lead:
        return f(*arrays)
    flat = [x.reshape(-1, n) for x in arrays]
    N = flat[0].shape[0]
    if N <= CHUNK:
        out = jax.vmap(f)(*flat)
    else:
        out = jax.lax.map(lambda xs: f(*xs), tuple(flat), batch_size=CHUNK)
    return jax.tree_util.tree_map(lambda y: y.reshape(lead + y.shape[1:]), out)

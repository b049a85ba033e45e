"""Traced or concrete: the few array helpers that the numerics and their edges share.

A concrete (numpy) array passed to a jitted function enters it as it is; ``jnp.asarray`` or a
``jnp`` operation on it outside a jit instead compiles a small program for its shape (a
transfer, a reshape, a square root), and a new process lowers each of those again, uncached by
[`jaxid.cache`][jaxid.cache]. So code that runs both under a trace and on concrete values does its
bookkeeping in numpy when nothing is traced.
"""

from __future__ import annotations

from functools import partial
from typing import TypeAlias

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

#: An argument of a function that only does arithmetic on it (e.g. ``friction.models.viscous``):
#: a jax or numpy array or a number. Such a function returns the same kind: numpy in, numpy out.
Numeric: TypeAlias = "jax.Array | np.ndarray | float"
#: An array argument that a function indexes or slices: a jax or a numpy array.
AnyArray: TypeAlias = "jax.Array | np.ndarray"


def is_traced(*xs) -> bool:
    """Whether any of xs is a tracer (inside ``jax.jit``, ``jax.vmap``, a gradient, ...)."""
    return any(isinstance(x, jax.core.Tracer) for x in xs)


def namespace(*xs):
    """``jax.numpy`` when any of xs is traced, else ``numpy`` (small results at the edges: a
    concrete jax array converts without a copy on the CPU)."""
    return jnp if is_traced(*xs) else np


def host(x: ArrayLike) -> AnyArray:
    """x itself when it is a jax array (traced, or on a device), else ``np.asarray(x)``."""
    return x if isinstance(x, jax.Array) else np.asarray(x)


def device(x: ArrayLike) -> jax.Array:
    """x as a jax array: itself when it is one (traced or not), else ``jax.device_put`` of
    ``np.asarray(x)``, which copies it without compiling anything (``jnp.asarray`` of a numpy
    array compiles a program for its shape)."""
    return x if isinstance(x, jax.Array) else jax.device_put(np.asarray(x))


def seed_key(seed: int) -> jax.Array:
    """``jax.random.PRNGKey(seed)``, the same key, made on the host: for the default threefry
    generator the key is the seed's 64 bits as two uint32 words, high then low (jax's
    ``threefry_seed``), and building it with jax compiles two programs (a conversion and the
    seeding) that every process traces and lowers again. Any other generator, or a seed
    outside int64, goes to ``jax.random.PRNGKey`` itself."""
    impl = getattr(jax.config, "jax_default_prng_impl", "threefry2x32")
    plain_int = isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_))
    if not plain_int or impl != "threefry2x32" or getattr(jax.config, "jax_enable_custom_prng", False):
        return jax.random.PRNGKey(seed)
    try:
        bits = int(np.int64(seed).view(np.uint64))  # a negative seed as jax reads it: two's complement
    except OverflowError:
        return jax.random.PRNGKey(seed)
    return jax.device_put(np.array([bits >> 32, bits & 0xFFFFFFFF], dtype=np.uint32))


@partial(jax.jit, static_argnums=(1, 2, 3))
def slice_tree(tree, start, stop, step):
    """``a[start:stop:step]`` (Python slice semantics, None allowed; static) of every array of
    ``tree`` along its first axis, in one compiled program (outside a jit, a slice compiles one
    program per array)."""
    return jax.tree.map(lambda a: a[start:stop:step], tree)


def plain(x):
    """x for a message: numpy scalars as Python numbers and arrays as (nested) lists, inside
    lists, tuples and dicts too, so that ``f"{plain(x)!r}"`` reads ``0.5`` or ``[1, 2]``, never
    ``np.float64(0.5)``; anything else is returned as it is."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return type(x)(plain(v) for v in x) if type(x) in (list, tuple) else x
    if isinstance(x, dict):
        return {plain(k): plain(v) for k, v in x.items()}
    return x

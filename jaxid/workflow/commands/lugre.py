"""``jaxid lugre`` as a library function: [`run_lugre`][jaxid.workflow.commands.lugre.run_lugre], and the friction CSV it reads."""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass

import numpy as np

from jaxid.workflow import WorkflowError
from jaxid.workflow.commands.common import Log, check_paths, write_json
from jaxid.workflow.requests import LugreRequest


def read_friction_csv(path):
    """(names, dt, x (N, n), v (N, n), F (N, n)) from a friction CSV; WorkflowError if malformed."""
    try:
        with open(path) as f:
            header = [h.strip() for h in f.readline().strip().split(",")]
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except FileNotFoundError:
        raise WorkflowError(f"{path}: no such file") from None
    except ValueError as e:
        raise WorkflowError(f"{path}: not a numeric CSV with a header row ({e})") from None
    if data.shape[1] != len(header):
        raise WorkflowError(f"{path}: {len(header)} header names but {data.shape[1]} columns")
    col = {h: data[:, i] for i, h in enumerate(header)}
    if "t" not in col:
        raise WorkflowError(f"{path}: no 't' column; expected t, x, F or t, q1..qn, F1..Fn")
    names, pos, vel, frc = _friction_columns(path, header, col)
    for name in ["t"] + pos + frc + [c for c in vel if c in col]:
        bad = np.flatnonzero(~np.isfinite(col[name]))
        if bad.size:
            raise WorkflowError(f"{path}: column {name} has NaN/inf at data row {bad[0] + 1}; remove or repair it")
    dt = _uniform_step(path, col["t"])
    x = np.stack([col[c] for c in pos], 1)
    F = np.stack([col[c] for c in frc], 1)
    v = np.stack([col[c] if c in col else np.gradient(col[p], dt) for c, p in zip(vel, pos)], 1)
    return names, dt, x, v, F


def _friction_columns(path, header, col):
    """(axis names, position, velocity and force columns) of a friction CSV: x, v, F for one
    axis, else q1..qn, qd1..qdn, F1..Fn."""
    if "x" in col and "F" in col:
        return ["x"], ["x"], ["v"], ["F"]
    n = sum(1 for h in header if h.startswith("q") and h[1:].isdigit())
    names = [f"q{j}" for j in range(1, n + 1)]
    pos, vel, frc = names, [f"qd{j}" for j in range(1, n + 1)], [f"F{j}" for j in range(1, n + 1)]
    missing = [c for c in pos + frc if c not in col]
    if n == 0 or missing:
        raise WorkflowError(f"{path}: expected columns t, x, F or t, q1..qn, F1..Fn; missing {missing or ['x', 'F']}")
    return names, pos, vel, frc


def _uniform_step(path, t) -> float:
    """The time step (s) of the time stamps t (N,), which must be at least 100 and uniform."""
    if len(t) < 100:
        raise WorkflowError(f"{path}: {len(t)} samples; an identification needs at least 100")
    steps = np.diff(t)
    dt = float(np.median(steps))
    # a clock's stamps (Unix time, 1.7e9 s) carry float64's spacing there (2.4e-7 s): no irregularity
    resolution = 4 * float(np.spacing(np.max(np.abs(t))))
    if not dt > 0 or np.any(np.abs(steps - dt) > 1e-6 * dt + resolution + 1e-12):
        k = int(np.argmax(np.abs(steps - dt))) + 1  # the sample after the irregular step, 0-based
        raise WorkflowError(
            f"{path}: time stamps must increase uniformly (irregular at row {k + 1} (line {k + 2}), "
            f"a step of {steps[k - 1]:.6g} s against the median {dt:.6g} s); resample"
        )
    return float((t[-1] - t[0]) / (len(t) - 1))  # the mean step: exact where one step is rounded


def _force_metrics(real, pred):
    from jaxid.metrics import max_pe, wape

    return {
        "wape_pct": float(wape(real, pred)),
        "max_pe_pct": float(max_pe(real, pred)),
        "rms": float(np.sqrt(np.mean((np.asarray(pred) - real) ** 2))),
    }


@dataclass(frozen=True)
class LugreOutcome:
    """result: the JSON-ready document of [`run_lugre`][jaxid.workflow.commands.lugre.run_lugre] (per axis: parameters, std, warnings,
    WAPE / max PE of the simulated force and of a Coulomb + viscous model); NaN and inf are None."""

    request: LugreRequest
    result: dict


def run_lugre(request: LugreRequest, *, log: Log = None) -> LugreOutcome:
    """``jaxid lugre``: LuGre friction per axis of a friction experiment; writes ``output``; see
    [`LugreRequest`][jaxid.workflow.requests.LugreRequest]."""
    import jax

    from jaxid.identification import lugre as ident

    r = request
    check_paths(r)
    names, dt, x, v, F = read_friction_csv(r.data)
    threshold = ident.THRESHOLD if r.threshold is None else r.threshold
    val = read_friction_csv(r.validation) if r.validation else None
    if val is not None and (val[0] != names or abs(val[1] - dt) > 1e-9 * dt):
        raise WorkflowError(f"--validation: axes {val[0]} at dt {val[1]} s differ from the data's {names} at {dt} s")
    _check_excitation(r.data, names, v, threshold)
    if log is not None:
        log(f"identifying {len(names)} axis(es) from {len(x)} samples at {1 / dt:.0f} Hz, method {r.method}")
    rel_limit = ident.REL_STD if r.rel_std is None else r.rel_std
    with warnings.catch_warnings():  # in the result, with the axis names and rel_std
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = ident.identify_joints(
            x, v, F, dt, jax.random.key(r.seed), method=r.method, threshold=threshold, hold=r.hold
        )
    result = {
        "data": r.data,
        "validation": r.validation,
        "method": r.method,
        "seed": r.seed,
        "dt_s": dt,
        "threshold": threshold,
        "hold": r.hold,
        "rel_std_limit": rel_limit,
        "axes": [],
    }
    held_out = (v, F) if val is None else val[3:]
    for j, name in enumerate(names):
        fj = jax.tree_util.tree_map(lambda a: a[j], fit)
        result["axes"].append(
            _axis_entry(
                name,
                fj,
                rel_limit,
                threshold,
                dt,
                x[:, j],
                v[:, j],
                F[:, j],
                held_out[0][:, j],
                held_out[1][:, j],
                r.hold,
            )
        )
    # NaN/inf (a diverged fit, an unexcited parameter's std) become null: JSON has neither.
    result = json.loads(json.dumps(result), parse_constant=lambda _: None)
    if r.output:
        write_json(result, r.output)
    return LugreOutcome(r, result)


def _check_excitation(path, names, v, threshold) -> None:
    """A WorkflowError, naming the axis, when the velocities v (N, n) cannot identify LuGre."""
    from jaxid.identification import lugre as ident

    try:
        ident.check_excitation(v, threshold)
    except ValueError as e:
        msg = re.sub(r"^axis (\d+):", lambda m: f"axis {names[int(m[1]) - 1]}:", str(e)).replace(
            ": threshold ", ": --threshold "
        )
        raise WorkflowError(f"{path}: {msg}") from None


def _axis_entry(name, fj, rel_limit, threshold, dt, x, v, F, vs, Fs, hold="linear") -> dict:
    """The result of one axis: the fit ``fj`` (fitted on position x, velocity v (N,) and force F
    (N,)), its statistics and warnings (``rel_limit`` %), per parameter whether the record
    determines it (``determinability``: status, reason, the experiment that would), and the force
    metrics of it and of a Coulomb + viscous model (fitted above ``threshold``) on (vs, Fs), the
    validation run's (or the data's)."""
    import jax.numpy as jnp

    from jaxid.friction import lugre as model
    from jaxid.identification import lugre as ident
    from jaxid.identification import lugre_determinability as det

    p = fj.params
    entry = {
        "axis": name,
        "params": {n: float(getattr(p, n)) for n in model.NAMES},
        "std": dict(zip(model.NAMES, np.asarray(fj.std).tolist())),
        "rel_std": dict(zip(model.NAMES, np.asarray(fj.rel_std()).tolist())),
        "correlation": np.asarray(fj.corr).tolist(),
        "residual_std": float(fj.residual_std),
        "to_optimum_std": dict(zip(model.NAMES, np.asarray(fj.to_optimum).tolist())),
        "iterations": int(fj.iterations),
        "converged": bool(fj.converged),
        "physically_consistent": not fj.physical_problems(),
        "physics_problems": fj.physical_problems(),
        "at_bound": [n for n, b in zip(model.NAMES, np.asarray(fj.at_bound)) if b],
        "warnings": fj.warnings(rel_limit, axis=name),
    }
    dets = det.of_fit(fj, x, v, dt, threshold, rel_std=rel_limit, hold=hold)
    entry["determinability"] = {d.name: d.as_dict() for d in dets}
    entry["not_determined"] = det.summary_lines(dets, axis=name)
    pred = model.simulate(p, jnp.asarray(vs), dt, hold=hold)
    cv = ident.coulomb_viscous(jnp.asarray(v), jnp.asarray(F), threshold)
    entry["lugre"] = _force_metrics(Fs, pred)
    entry["coulomb_viscous"] = {
        "Fc": float(cv[0]),
        "fv": float(cv[1]),
        **_force_metrics(Fs, cv[0] * np.sign(vs) + cv[1] * vs),
    }
    return entry

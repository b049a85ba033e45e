"""``jaxid excite`` as a library function: [`run_excite`][jaxid.workflow.commands.excite.run_excite], with its constraints, the approach
from a start pose and the ROS 2 trajectory file."""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxid.workflow import WorkflowError
from jaxid.workflow.commands.common import build_model, check_paths, payload_vector
from jaxid.workflow.requests import ExciteRequest


def _floats(value, count: int, what: str) -> np.ndarray:
    """``count`` finite numbers from 'a,b,...' text or a sequence, or a WorkflowError naming ``what``."""
    try:
        v = np.array([float(x) for x in (value.split(",") if isinstance(value, str) else value)])
    except ValueError:
        v = np.array([])
    if v.size != count or not np.all(np.isfinite(v)):
        raise WorkflowError(f"{what} must be {count} comma-separated finite numbers, got {value!r}")
    return v


def excite_constraints(request: ExciteRequest, robot):
    """(Constraints or None, limit overrides or None) of the request for ``robot``: the collision
    capsules of its URDF (or the built-in UR5's, with its conservative ranges) and the floor,
    workspace and obstacles."""
    from jaxid.excitation.constraints import Constraints
    from jaxid.model import geometry

    r = request
    limits: dict[str, float | np.ndarray] = {} if r.jerk_max is None else {"qddd_max": r.jerk_max}
    if r.model.urdf:
        try:
            caps = geometry.from_urdf(
                r.model.urdf,
                robot,
                tip_link=r.model.tip_link,
                mesh_radius=r.capsule_radius,
                srdf=r.srdf,
                package_dirs=r.model.package_dirs,
                drop_always=False,  # capsules touching in every pose: relaxed_pairs below, not dropped
            )
        except (OSError, ValueError) as e:
            raise WorkflowError(f"--urdf/--srdf: {e}") from None
    elif robot.name == "ur5":
        caps = geometry.ur5()
        limits.update(q_min=geometry.UR5_RANGES[0], q_max=geometry.UR5_RANGES[1])
    else:
        caps = None
    floor = r.floor
    # "auto" (the default): the plane z = 0 of the base frame, unless it cuts the robot in every
    # pose (below): then the base does not stand on it and no floor is checked, with a warning.
    auto = isinstance(floor, str) and floor.strip().lower() == "auto"
    if isinstance(floor, str):
        floor = 0.0 if auto else None if floor.strip().lower() == "none" else _floats(floor, 1, "--floor")[0]
    workspace = None if r.workspace is None else tuple(np.split(_floats(r.workspace, 6, "--workspace"), 2))
    obstacles = tuple(np.split(_floats(o, 6, "--obstacle"), 2) for o in r.obstacles)
    if caps is None:
        if r.workspace or r.obstacles:
            raise WorkflowError(
                f"{robot.name} has no collision geometry: --workspace and --obstacle need the built-in ur5 or a --urdf"
            )
        return None, limits or None
    from jaxid.excitation.constraints import level_capsules, relaxed_floor, relaxed_pairs

    # Pairs closer than the clearance in every pose can never meet it (bounding capsules of
    # neighbouring housings, fatter than the meshes they enclose), yet their meshes may still
    # meet: each keeps a clearance of its own instead (0, or the overlap of its closest quarter of
    # poses), with a warning; only pairs whose gap the joints barely change go.
    own, fixed = relaxed_pairs(robot, caps, r.clearance)
    # Of those, pairs of two meshed links are checked on their meshes instead (a lower bound of
    # the meshes' distance: mesh_pairs), which capsules fatter than the meshes cannot do.
    meshed: tuple = ()
    if r.model.urdf and (own or fixed):
        from jaxid.excitation.constraints import mesh_pairs

        names = {caps.names[k] for row in (*own, *fixed) for k in row[:2]}
        tris = geometry.link_triangles(
            r.model.urdf, robot, sorted(names), base_link=None, package_dirs=r.model.package_dirs
        )
        meshed, own, fixed, notes = mesh_pairs(robot, caps, tris, r.clearance, own, fixed)
        if meshed:
            warnings.warn(
                "link pairs whose capsules are closer than --clearance in every sampled pose are checked on a lower "
                "bound of their meshes' distance instead: " + "; ".join(notes),
                stacklevel=2,
            )
    pair = lambda i, j: f"{caps.names[i]}/{caps.names[j]}"
    on_mesh = {frozenset(mp.names) for mp in meshed}
    capsule_only = [row for row in fixed if frozenset((caps.names[row[0]], caps.names[row[1]])) not in on_mesh]
    if own:
        warnings.warn(
            f"link pairs whose capsules are closer than --clearance {r.clearance:g} m in every sampled pose are "
            "kept from touching or, overlapping in most poses, from overlapping more than in the closest quarter: "
            + ", ".join(f"{pair(i, j)} {1e3 * c:.0f} mm" for i, j, c in own)
            + " (an --srdf decides which pairs to check)",
            stacklevel=2,
        )
    if capsule_only:
        warnings.warn(
            f"not checking link pairs whose capsules are closer than --clearance {r.clearance:g} m in every sampled "
            "pose at a distance the joints change by less than half of it: "
            f"{', '.join(sorted({pair(i, j) for i, j in capsule_only}))}",
            stacklevel=2,
        )

    # Links that no joint raises or lowers (fixed to the base, or turning about a vertical axis
    # through it) sit on the base as it does: not floor-constrained. Capsules never clearance
    # above the floor are kept out of it (0 m, relaxed_floor); one under the floor in
    # every pose means the floor cuts the robot: say where the floor is rather than drop it.
    exempt: tuple[int, ...] = ()
    own_floor: tuple = ()
    if floor is not None:
        exempt = level_capsules(robot, caps)
        own_floor, under = relaxed_floor(robot, caps, floor, r.clearance, exempt=exempt)
        if under and auto:
            # No link of a robot standing on a plane is under it in every pose: its base frame is
            # elsewhere (an arm on a torso, whose base frame is at the shoulder). Where the floor
            # is, only the user knows; refusing would make a default need a flag.
            k, best = min(under, key=lambda x: x[1])
            warnings.warn(
                f"the default floor z = 0 m (base frame) cuts the capsule of {caps.names[k]} in every pose (at best "
                f"{-1e3 * best:.0f} mm under it): the base does not stand on it (an arm mounted on a torso?), so no "
                "floor is checked; give --floor Z, the height of the surface under the robot in the base frame, to "
                "keep the arm above it",
                stacklevel=2,
            )
            floor, exempt, own_floor, under = None, (), (), ()
        if under:
            k, best = min(under, key=lambda x: x[1])
            raise WorkflowError(
                f"the floor z = {floor:g} m (base frame) cuts the capsule of {caps.names[k]} in every pose (at best "
                f"{-1e3 * best:.0f} mm under it): the robot does not stand on it; set --floor Z to the height of "
                "the surface under the robot, m in the base frame (e.g. --floor -1.0 for an arm mounted on a "
                "torso), or --no-floor"
            )
        if own_floor:
            warnings.warn(
                f"capsules closer than --clearance {r.clearance:g} m to the floor ({floor:g} m) in every sampled "
                "pose are kept from going through it (0 m) instead: " + ", ".join(caps.names[k] for k, _ in own_floor),
                stacklevel=2,
            )
    try:
        c = Constraints(
            caps,
            clearance=r.clearance,
            floor=floor,
            workspace=workspace,
            obstacles=obstacles,
            floor_exempt=exempt,
            pair_clearance=own,
            pair_exempt=fixed,
            floor_clearance=own_floor,
            mesh_pairs=meshed,
        )
        return c, limits
    except ValueError as e:
        raise WorkflowError(str(e)) from None


def with_approach(res, robot, start, fs, periods, limits, constraints):
    """(duration s, ``periods`` of the excitation ``res`` at fs Hz preceded by the approach from
    the pose ``start`` to home), the approach checked with its jerk on a grid 10x denser than fs
    against the limits and constraints (a WorkflowError if it fails)."""
    from jaxid.excitation.optimize import LIMITS, check_limits
    from jaxid.excitation.trajectories import approach, approach_jerk

    T = res.approach_time(start, fs)
    if T == 0:
        return 0.0, res.trajectory(fs, periods)
    dense = np.linspace(0.0, T, int(round(10 * T * fs)) + 1)
    home = np.asarray(res.sample(np.zeros(1))[0][0])
    rep = check_limits(
        robot,
        *approach(start, home, T, dense),
        limits=limits,
        qddd=approach_jerk(start, home, T, dense),
        constraints=constraints,
    )
    if not rep.feasible:
        bad = [f"{k} {v:.3g} {LIMITS[k]}" for k, v in rep.violation.items() if v > 0]
        bad += [ln for ln in rep.lines() if "VIOLATED" in ln]
        raise WorkflowError(
            f"--start-from: the {T:g} s move to home violates {'; '.join(bad)}; start from "
            "another pose or move the robot to home first"
        )
    return T, res.trajectory(fs, periods, start_from=start)


def joint_trajectory(names, t, q, qd, qdd) -> dict:
    """A ROS 2 ``trajectory_msgs/JointTrajectory`` as a dict: ``joint_names`` and ``points``
    with positions (rad), velocities (rad/s), accelerations (rad/s^2) and
    ``time_from_start`` {sec, nanosec}, from t (N,) s and q, qd, qdd (N, n)."""
    ns = np.round(np.asarray(t, dtype=float) * 1e9).astype(np.int64)
    rows = (np.asarray(x, dtype=float).tolist() for x in (q, qd, qdd))
    return {
        "joint_names": list(names),
        "points": [
            {
                "positions": p,
                "velocities": v,
                "accelerations": a,
                "time_from_start": {"sec": int(k // 1_000_000_000), "nanosec": int(k % 1_000_000_000)},
            }
            for p, v, a, k in zip(*rows, ns)
        ],
    }


@dataclass(frozen=True)
class ExciteOutcome:
    """robot (with the payload attached, if any); description: its params.json model entry;
    result: the ``jaxid.excitation.optimize.Excitation``; limits: the model's limits (n,) each,
    with the overrides; constraints; home (n,) rad; payload 10-vector or None; written: the
    trajectory was written (False: infeasible, not allowed); t (N,) s of the written samples;
    t_approach: s of the move from ``start_from`` (0 without); home_note: why home is not the
    range centres when it was searched (``default_home``), else None; design: with --payload, the
    ``jaxid.identification.payload_design.PayloadDesign`` of the trajectory (its periods, the
    torque noise, the payload joints), else None; design_noise: where that noise came from."""

    request: ExciteRequest
    robot: Any
    description: dict
    result: Any
    limits: dict
    constraints: Any
    home: np.ndarray
    payload: np.ndarray | None
    written: bool
    t: np.ndarray | None
    t_approach: float
    home_note: str | None = None
    design: Any = None
    design_noise: str | None = None


def run_excite(request: ExciteRequest, *, progress: bool = False) -> ExciteOutcome:
    """``jaxid excite``: optimise the excitation, draw the preview, write the trajectory when it
    meets every limit and constraint (or ``allow_infeasible``); see [`ExciteRequest`][jaxid.workflow.requests.ExciteRequest]."""
    from jaxid.excitation.optimize import model_limits

    r = request
    check_paths(r)
    robot, description = build_model(r.model)
    constraints, limits = excite_constraints(r, robot)
    lim = model_limits(robot, limits)
    home_note = None
    if r.home is None:
        home, home_note = default_home(robot, lim, constraints)
    else:
        home = _floats(r.home, robot.n, "--home")
    start = None if r.start_from is None else _floats(r.start_from, robot.n, "--start-from")
    payload = payload_vector(r.payload)
    if (r.payload_design or payload is not None) and not hasattr(robot, "tip"):
        raise WorkflowError("--payload and --payload-mass need a rigid-body robot with a flange (built-in or URDF)")
    regressor_fn = _payload_rows(robot, lim) if r.payload_design else None
    if payload is not None:
        from jaxid.identification.payload import attach_payload

        robot = attach_payload(robot, payload)  # the torques of the limits and of the file
    res = _optimize(r, robot, regressor_fn, limits, constraints, home, progress)
    if r.preview is not None:
        from jaxid.excitation.preview import preview

        preview(robot, res, r.preview, limits=limits, constraints=constraints, start_from=start)
    payload = None if payload is None else np.asarray(payload)
    if not res.feasible and not r.allow_infeasible:
        return ExciteOutcome(r, robot, description, res, lim, constraints, home, payload, False, None, 0.0, home_note)
    t_approach, (t, q, qd, qdd) = (
        with_approach(res, robot, start, r.fs, r.periods, limits, constraints)
        if start is not None
        else (0.0, res.trajectory(r.fs, r.periods))
    )
    _write_trajectory(r.output, robot, res, (t, q, qd, qdd), t_approach)
    design, noise_note = _payload_design(r, robot, res, payload) if r.payload_design else (None, None)
    return ExciteOutcome(
        r,
        robot,
        description,
        res,
        lim,
        constraints,
        home,
        payload,
        True,
        np.asarray(t),
        t_approach,
        home_note,
        design,
        noise_note,
    )


def _payload_design(r: ExciteRequest, robot, res, payload):
    """(PayloadDesign, where its noise came from) of one period of the excitation ``res`` at the
    request's rate, ``r.periods`` periods, on ``r.payload_joints`` (1-based; default all), against
    the payload ``payload``; ``robot`` carries it (its torques set the default noise)."""
    from jaxid.dynamics.terms import rnea
    from jaxid.identification.payload_design import design_payload

    _, q, qd, qdd = res.trajectory(r.fs, 1)
    joints = None
    if r.payload_joints is not None:
        if any(not 1 <= j <= robot.n for j in r.payload_joints) or len(set(r.payload_joints)) != len(r.payload_joints):
            raise WorkflowError(f"--payload-joints must list distinct joints between 1 and {robot.n}")
        joints = [j - 1 for j in r.payload_joints]
    if r.torque_noise is None:
        tau = np.asarray(rnea(robot, q, qd, qdd))
        noise = SIMULATE_NOISE * (tau.max(axis=0) - tau.min(axis=0))
        noise = np.where(noise > 0, noise, 1e-3)  # a joint whose torque never changes: 1 mN m
        note = f"assumed {100 * SIMULATE_NOISE:g} % of each joint's torque range (jaxid simulate's default; set --torque-noise)"
    else:
        noise = (
            np.broadcast_to(np.asarray(r.torque_noise, dtype=float), (robot.n,))
            if len(r.torque_noise) in (1, robot.n)
            else None
        )
        if noise is None:
            raise WorkflowError(f"--torque-noise: one value or {robot.n} (one per joint), got {len(r.torque_noise)}")
        note = "--torque-noise"
    try:
        design = design_payload(robot, q, qd, qdd, noise, joints=joints, periods=r.periods, nominal=payload)
    except ValueError as e:
        raise WorkflowError(f"payload design: {e}") from None
    return design, note


#: ``jaxid simulate``'s default torque noise: std as a fraction of each joint's torque range.
SIMULATE_NOISE = 0.005


def default_home(robot, lim, constraints) -> tuple[np.ndarray, str | None]:
    """(home (n,) rad, note): the centres of the position ranges ``lim`` (0 for an unlimited
    joint) when they meet the constraints, else the nearest clear pose
    (``constraints.search_home``) with a note saying why; a WorkflowError naming the pair or
    link and the flags to set when none is found."""
    from jaxid.excitation.constraints import blocking_constraint, search_home
    from jaxid.excitation.optimize import _worst_margins

    finite = lambda x: np.where(np.isfinite(x), x, 0.0)
    centre = 0.5 * (finite(lim["q_min"]) + finite(lim["q_max"]))
    if constraints is None:
        return centre, None
    worst = np.asarray(_worst_margins(constraints, robot, centre[None]))
    bad = sorted(
        (m, kind, where, c) for kind, (m, where, c) in constraints.report(robot.parents, worst).items() if m < 0
    )
    if not bad:
        return centre, None
    m, kind, where, c = bad[0]
    what = f"the range centres violate the {kind} constraint at {where} ({_shortfall(m, c)})"
    found = search_home(constraints, robot, lim["q_min"], lim["q_max"])
    if found is None:
        kind, where, best, c = blocking_constraint(constraints, robot, lim["q_min"], lim["q_max"])
        if best < 0:  # one constraint alone is never met: name it rather than the centres' worst
            what = f"the {kind} constraint at {where} is not met in any pose (at best {_shortfall(best, c)})"
        raise WorkflowError(
            f"home: {what}, and no pose within 90 % of the ranges about the centres is clear; give a clear "
            "--home Q1,..., move the floor (--floor Z, m in the base frame) or drop it (--no-floor), "
            "exclude a pair that cannot touch (--srdf), or shrink skeleton capsules (--capsule-radius M)"
        )
    home, dist = found
    return (
        home,
        f"{what}; searched the nearest clear home: {np.round(home, 3).tolist()} rad ({dist:.2f} of the half ranges away)",
    )


def _shortfall(margin: float, required: float) -> str:
    """How far a margin (m, < 0 when short) is from its constraint, in words: the distance and the
    clearance it keeps (a pair or capsule on a clearance of its own is judged by that one)."""
    return f"clearance {1e3 * (margin + required):.0f} mm, {1e3 * required:.0f} mm required"


def _payload_rows(robot, lim):
    """The regressor of a payload design: ``PayloadRows`` weighted by 1 / the torque limits."""
    from jaxid.identification.payload import PayloadRows

    return PayloadRows(robot, np.where(np.isfinite(lim["tau_max"]), 1.0 / lim["tau_max"], 1.0))


def _optimize(r: ExciteRequest, robot, regressor_fn, limits, constraints, home, progress: bool):
    """``jaxid.excitation.optimize.optimize`` with the request's settings; a ValueError becomes a WorkflowError."""
    from jaxid.excitation.optimize import optimize

    try:
        return optimize(
            robot,
            harmonics=r.harmonics,
            base_frequency=r.base_frequency,
            objective=r.chosen_objective,
            regressor_fn=regressor_fn,
            n_starts=r.starts,
            steps=r.steps,
            learning_rate=r.learning_rate,
            margin=r.margin,
            seed=r.seed,
            progress=progress,
            limits=limits,
            constraints=constraints,
            home=home,
        )
    except ValueError as e:
        raise WorkflowError(str(e)) from None


def _write_trajectory(output: str, robot, res, samples, t_approach: float) -> None:
    """Write samples (t, q, qd, qdd) of the excitation ``res`` to ``output``: a ROS 2 trajectory
    (.json, [`joint_trajectory`][jaxid.workflow.commands.excite.joint_trajectory]) or a dataset with the robot's torques, which carries the
    base frequency when it holds whole periods (no approach)."""
    from jaxid import data
    from jaxid.dynamics.terms import rnea

    t, q, qd, qdd = samples
    if output.lower().endswith(".json"):
        from jaxid.atomic import atomic_write

        with atomic_write(output) as fh:
            json.dump(joint_trajectory(robot.coordinate_names, t, q, qd, qdd), fh)
        return
    ds = data.from_arrays(t, q, rnea(robot, q, qd, qdd), qd, qdd, source="excitation")
    if not t_approach:  # whole periods of the series: the base frequency travels with the file
        ds = dataclasses.replace(ds, base_frequency=res.omega_f / (2 * np.pi), harmonics=int(res.a.shape[1]))
    data.write(ds, output)

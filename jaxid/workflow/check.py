"""What is physically wrong with an identification ([`physics_report`][jaxid.workflow.check.physics_report]), the estimate's scale
against the model's ([`scale_vs_model`][jaxid.workflow.check.scale_vs_model]), and the per-parameter flags of the sign rule
([`parameter_flags`][jaxid.workflow.check.parameter_flags])."""

from __future__ import annotations

import dataclasses
import math
import re
import warnings

import numpy as np

from jaxid.identification.base import GAP_WARN
from jaxid.model.inertia import INERTIAL_NAMES
from jaxid.workflow.records import Consistency, PhysicsCheck, least_squares_cov

FLAG_MASS = "negative mass"
FLAG_INERTIA = "non-positive-definite inertia"
FLAG_FRICTION = "negative friction"
FLAG_STIFFNESS = "negative stiffness"
FLAG_UNIDENTIFIED = "not identified"
FLAG_AT_BOUND = "at its bound 0 (consistent fit): no std"
#: A consistent estimate below this fraction of its std is at its bound 0
#: ([`at_bound`][jaxid.workflow.check.at_bound]): the barrier keeps it strictly positive, at
#: ~1e-8 of its scale, and 100 std / value is then a meaningless 1e7 %.
AT_BOUND_FRACTION = 1e-3
#: Standard parameters that a physical robot has >= 0, by kind: a mass, the diagonal moments
#: of a body's inertia about any point (Ixx = Ixx_c + m (cy^2 + cz^2) >= 0 when the inertia is
#: positive semi-definite), the rotor inertia, viscous, Coulomb and Stribeck friction, and the
#: stiffness of a passive spring.
_NONNEGATIVE = {
    "m": FLAG_MASS,
    "Ixx": FLAG_INERTIA,
    "Iyy": FLAG_INERTIA,
    "Izz": FLAG_INERTIA,
    "ia": FLAG_INERTIA,
    "fv": FLAG_FRICTION,
    "fc": FLAG_FRICTION,
    "fs": FLAG_FRICTION,
    "ks": FLAG_STIFFNESS,
}


def _split_name(name: str) -> tuple[str, int]:
    """``"Izz12"`` -> ``("Izz", 12)``: the kind of a standard parameter and its joint (1-based); a
    motor-side joint term's (``"fv_m5"``, ``Robot.transmission``) -> ``("fv", 5)``."""
    m = re.fullmatch(r"([A-Za-z_]+?)(?:_m)?(\d+)", name)
    if not m:
        raise ValueError(f"not a standard parameter name (kind followed by a joint number): {name!r}")
    return m[1], int(m[2])


def data_std(params) -> np.ndarray:
    """(b,) what the data alone determine of each base parameter: the least-squares std, which for
    a consistent fit is ``fit.cov_ls`` (its own std, ``params.std``, is also held by its prior and
    constraints); ``params.std`` otherwise (and in files written before ``cov_ls``)."""
    return np.sqrt(np.maximum(np.diag(np.asarray(least_squares_cov(params), dtype=float)), 0.0))


def at_bound(params) -> np.ndarray:
    """(b,) bool: the base parameters of a consistent fit held at their bound 0: a base parameter
    that is one joint term kept >= 0 (rotor inertia, viscous, Coulomb or Stribeck friction, a
    spring's stiffness; ``jaxid.identification.consistent_problem.POSITIVE_TERMS``), alone in its
    combination, whose estimate is below [`AT_BOUND_FRACTION`][jaxid.workflow.check.AT_BOUND_FRACTION]
    of the unconstrained fit's std. A std does not describe an estimate on a bound: the data would
    put it below 0. All False without a consistent fit."""
    from jaxid.identification.consistent_problem import POSITIVE_TERMS

    theta, std = np.asarray(params.theta, dtype=float), data_std(params)
    if params.consistency is None or params.standard is None:
        return np.zeros(theta.shape, dtype=bool)
    K = np.asarray(params.base.K, dtype=float)
    names = params.parameter_names
    out = np.zeros(theta.shape, dtype=bool)
    for k, i in enumerate(np.asarray(params.base.indices)):
        alone = not K.size or not np.any(np.abs(K[k]) > 1e-12)
        kind = _split_name(names[int(i)])[0]
        out[k] = alone and kind in POSITIVE_TERMS and 0 <= theta[k] < AT_BOUND_FRACTION * std[k]
    return out


def parameter_flags(params, n_std: float = 2.0) -> list[tuple[str, ...]]:
    """What is physically impossible or unidentified about each base parameter of ``params``
    (a [`Params`][jaxid.workflow.params.Params]): a tuple of flags per base parameter (b entries, empty when
    nothing is wrong).

    - ``"negative mass"``, ``"non-positive-definite inertia"``, ``"negative friction"``: the
      estimate is < 0 although the base parameter is a combination, with positive
      coefficients, of standard parameters that are >= 0 for any physical robot (masses;
      diagonal moments of inertia Ixx, Iyy, Izz about any point, >= 0 for a positive
      semi-definite inertia; rotor inertia; viscous, Coulomb and Stribeck friction), named by
      the kind the combination holds (inertia before mass before friction). Where
      ``params.standard`` holds standard parameters, a link with mass <= 0 or a pseudo-inertia
      that is not positive definite (Wensing, Kim and Slotine 2017) flags the base parameters
      led by that link's parameters too.
    - ``"not identified"``: |estimate| < ``n_std`` standard deviations of what the data alone
      determine ([`data_std`][jaxid.workflow.check.data_std]; the data cannot tell the value from 0).
    - ``FLAG_AT_BOUND``: a consistent estimate held at its bound 0 ([`at_bound`][jaxid.workflow.check.at_bound]),
      in place of "not identified".
    """
    base = params.base
    names = params.parameter_names
    theta, std = np.asarray(params.theta, dtype=float), data_std(params)
    K = np.asarray(base.K, dtype=float)
    indices, dependent = np.asarray(base.indices), np.asarray(base.dependent)
    bad_links = {}
    if params.standard is not None:
        from jaxid.model import inertia

        n = sum(1 for s in names if re.fullmatch(r"m\d+", s))
        links = np.asarray(params.standard, dtype=float)[: 10 * n].reshape(n, 10)
        ok = np.asarray(inertia.is_consistent(links))
        bad_links = {int(j) + 1: (FLAG_MASS if links[j, 0] <= 0 else FLAG_INERTIA) for j in np.nonzero(~ok)[0]}
    scale = max(1.0, float(np.max(np.abs(K)))) if K.size else 1.0
    bound = at_bound(params)
    flags = []
    for k in range(len(theta)):
        lead_kind, lead_joint = _split_name(names[int(indices[k])])
        members = [(lead_kind, 1.0)] + [
            (_split_name(names[int(j)])[0], c) for j, c in zip(dependent, K[k]) if abs(c) > 1e-9 * scale
        ]
        f = []
        if theta[k] < 0 and all(kind in _NONNEGATIVE and c > 0 for kind, c in members):
            kinds = {_NONNEGATIVE[kind] for kind, _ in members}
            f.append(next(x for x in (FLAG_INERTIA, FLAG_MASS, FLAG_FRICTION, FLAG_STIFFNESS) if x in kinds))
        if lead_kind in INERTIAL_NAMES and bad_links.get(lead_joint) not in (None, *f):
            f.append(bad_links[lead_joint])
        if bound[k]:
            f.append(FLAG_AT_BOUND)
        elif not abs(theta[k]) >= n_std * std[k]:
            f.append(FLAG_UNIDENTIFIED)
        flags.append(tuple(f))
    return flags


#: Factor between the identified and the model's nominal inertial parameters from which
#: [`check_physics`][jaxid.workflow.check.check_physics] warns (a unit or gain error is 10^3, or a gear ratio; a model's
#: inertials are seldom 30x off the real robot's, placeholder ones may be).
SCALE_WARN = 30.0


def scale_vs_model(robot, params) -> float | None:
    """The geometric median of estimate / nominal over the inertial base parameters identified to
    10 % whose nominal value (from the model's own inertials) is not negligible; None with fewer
    than three such parameters. About 1 for a model whose inertials are roughly right; a torque
    logged in another unit, or a wrong gain, scales every one of them by the same factor."""
    theta, std = np.asarray(params.theta), np.asarray(params.std)
    nominal = np.asarray(params.base.to_base(np.asarray(robot.parameter_vector())))
    lead = [name.split(" ")[0].rstrip("0123456789") for name in params.base.names]
    keep = (
        np.array([k in INERTIAL_NAMES for k in lead])
        & (std < 0.1 * np.abs(theta))
        & (np.abs(nominal) > 1e-3 * np.max(np.abs(nominal), initial=0.0))
        & (np.sign(theta) == np.sign(nominal))
    )
    if keep.sum() < 3:
        return None
    return float(np.exp(np.median(np.log(theta[keep] / nominal[keep]))))


#: Standard deviations below zero from which viscous and Coulomb friction both negative are read
#: as an inverted torque sign ([`physics_report`][jaxid.workflow.check.physics_report]).
SIGN_Z = 10.0


def physics_report(robot, params) -> list[str]:
    """What is physically wrong with an identification, in words (empty when nothing is).

    Named: base parameters estimated below zero although they are positive combinations of
    quantities that are >= 0 for any physical robot (masses, diagonal moments of inertia,
    rotor inertia, friction: [`parameter_flags`][jaxid.workflow.check.parameter_flags], the report's flags), with
    their distance to zero in standard deviations; bodies that are not physically consistent
    (non-positive mass, inertia not positive definite or violating the triangle inequality)
    in the standard parameters written; a constrained fit that did not converge; an
    ambiguous rank of the regressor; and a joint whose viscous and Coulomb friction are both more
    than [`SIGN_Z`][jaxid.workflow.check.SIGN_Z] std below zero, as the sign of its logged torque (or position) inverted.
    """
    return (
        _negative_parameters(robot, params)
        + _inconsistent_links(robot, params)
        + _consistent_fit_problems(params.consistency)
        + _fit_problems(params)
    )


#: The problem a negative base parameter is, by the name of a single standard parameter...
_NEGATIVE_SINGLE = dict(
    fv="viscous friction",
    fc="Coulomb friction",
    fs="Stribeck friction",
    ia="rotor inertia",
    ks="joint stiffness (no passive spring has one)",
)
#: ... else by its flag.
_NEGATIVE_FLAG = {
    FLAG_MASS: "negative mass",
    FLAG_FRICTION: "negative friction",
    FLAG_STIFFNESS: "negative stiffness",
    FLAG_INERTIA: "negative moment of inertia (no positive semi-definite inertia has one)",
}


def _negative_parameters(robot, params) -> list[str]:
    """The base parameters below zero that the sign rule flags ([`parameter_flags`][jaxid.workflow.check.parameter_flags] without the
    standard parameters; bad links are `_inconsistent_links`), and then the joints whose
    viscous and Coulomb friction are both more than [`SIGN_Z`][jaxid.workflow.check.SIGN_Z] std below zero."""
    theta, std = np.asarray(params.theta), np.asarray(params.std)
    problems = []
    negative = {}  # (term, joint number) -> std below zero, for the single-parameter names
    for i, (name, flags) in enumerate(
        zip(params.base.names, parameter_flags(dataclasses.replace(params, standard=None)))
    ):
        kind = next((f for f in flags if f in _NEGATIVE_FLAG), None)
        if kind is None:
            continue
        z = -theta[i] / std[i] if std[i] > 0 else math.inf
        # a single standard parameter (fv3, or fv_m3 on a motor) is named by its kind; a combination by its flag
        single = re.fullmatch(r"([A-Za-z_]+?)(?:_m)?(\d+)", name)
        term = single[1] if single else name
        if single:
            negative[term, single[2]] = z
        problems.append(
            f"{name} = {theta[i]:.4g} < 0 ({z:.1f} std below zero): "
            + (f"negative {_NEGATIVE_SINGLE[term]}" if term in _NEGATIVE_SINGLE else _NEGATIVE_FLAG[kind])
        )
    # Friction that pushes the joint along its motion, viscous and Coulomb alike, is what a log
    # whose torque (or position) sign is the opposite of the model's joint axis looks like.
    for _, joint in [k for k in negative if k[0] == "fv"]:
        if negative.get(("fc", joint), 0.0) > SIGN_Z and negative["fv", joint] > SIGN_Z:
            label = f"joint {joint}" + (f" ({robot.names[int(joint) - 1]})" if robot is not None else "")
            problems.append(
                f"{label}: viscous and Coulomb friction both negative: the sign of its logged "
                "torque (or position) is likely opposite to the model's joint axis; check that "
                "column's sign or its gain (--gains)"
            )
    return problems


def _inconsistent_links(robot, params) -> list[str]:
    """The links whose standard parameters (when written) are not a physical body."""
    from jaxid.model import inertia

    if params.standard is None:
        return []
    ok = inertia.is_consistent(robot.split(params.standard)[0])  # concrete: on the host
    return [f"link {j + 1} ({robot.names[j]}): not a physical body (mass, inertia)" for j in np.nonzero(~ok)[0]]


def _consistent_fit_problems(c: Consistency | None) -> list[str]:
    """A consistent fit that did not converge, or whose cost is above the SDP optimum's."""
    if c is None:
        return []
    problems = []
    if c.converged is False:
        bound = (
            f" (its cost may be up to {c.gap_bound:.3g} = {c.gap_bound / c.cost:.1e} of it above the optimum)"
            if c.gap_bound is not None and c.cost
            else ""
        )
        why = (
            (
                "; at prior weight 0 the optimum may be reached only as bodies grow without bound along directions "
                "the data cannot see: give a positive --prior-weight"
            )
            if c.prior_weight == 0
            else ""
        )
        problems.append(f"the consistent fit did not converge in {c.steps} steps{bound}{why}")
    if c.sdp_cost is not None and c.cost is not None and c.sdp_cost > 0 and c.cost / c.sdp_cost - 1 > 1e-6:
        problems.append(f"the consistent fit's cost is {c.cost / c.sdp_cost - 1:.1e} above the SDP optimum")
    return problems


def _fit_problems(params) -> list[str]:
    """A LuGre fit that did not converge, and a regressor rank that is not clear-cut."""
    problems = []
    if params.lugre_fit is not None and params.lugre_fit.converged is False:
        problems.append(f"the joint rigid-body + LuGre fit did not converge in {params.lugre_fit.steps} steps")
    e = params.estimation
    gap = e.rank_gap if e is not None and e.rank_gap is not None else params.base.gap
    if gap is not None and gap < GAP_WARN:
        problems.append(f"the rank of the regressor is not clear-cut (R-diagonal gap {gap:.3g})")
    return problems


def check_physics(robot, params, *, scale: bool = True, capsules=None):
    """``params`` with its [`PhysicsCheck`][jaxid.workflow.records.PhysicsCheck]: the problems of
    [`physics_report`][jaxid.workflow.check.physics_report], whether the standard parameters are a physical model with none of them
    (and a consistent fit that converged), the named checks (consistent, converged, plausible:
    [`jaxid.workflow.verdicts.verdict_checks`][jaxid.workflow.verdicts.verdict_checks], the link geometry from ``capsules`` or the
    model's URDF) and whether all pass, and, with ``scale``, [`scale_vs_model`][jaxid.workflow.check.scale_vs_model], warned about
    beyond [`SCALE_WARN`][jaxid.workflow.check.SCALE_WARN] (a torque unit or gain off by that factor)."""
    from jaxid.workflow import verdicts

    problems = physics_report(robot, params)
    ratio = scale_vs_model(robot, params) if scale else None
    converged = params.consistency is None or params.consistency.converged
    checks = verdicts.verdict_checks(robot, params, capsules=capsules)
    physics = PhysicsCheck(
        consistent=params.standard is not None and not problems and converged,
        problems=problems,
        scale_vs_model=ratio,
        checks=checks,
        plausible=verdicts.overall(checks),
    )
    if ratio is not None and not 1 / SCALE_WARN < ratio < SCALE_WARN:
        warnings.warn(
            f"the inertial base parameters are {ratio:.3g} times the model's nominal values (median over "
            "those identified to 10 %): a torque unit or gain off by that factor (--units tau=..., "
            "--gains), or placeholder inertials in the model",
            stacklevel=3,
        )
    return dataclasses.replace(params, physics=physics)

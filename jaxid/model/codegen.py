"""A robot's torque model as standalone code for a controller: a serialised JAX program
([`stablehlo`][jaxid.model.codegen.stablehlo]), a dependency-free numpy module ([`numpy_source`][jaxid.model.codegen.numpy_source]) and a C99 file
([`c_source`][jaxid.model.codegen.c_source]).

Each computes ``Robot.torque(theta, q, qd, qdd)``: the rigid-body generalised forces by the
recursive Newton-Euler algorithm (Luh, Walker and Paul 1980; Featherstone, "Rigid Body Dynamics
Algorithms", 2008, table 5.1, as ``jaxid.dynamics.rnea.rnea_recursive`` writes it: velocities and
accelerations outward in each link's frame, net wrenches inward, gravity as an upward acceleration of
the base) plus the enabled per-joint terms of ``jaxid.friction.models.JOINT_BASIS`` (viscous,
smooth Coulomb ``tanh(qd/eps)``, Stribeck, asymmetric viscous, offset, stiffness, rotor inertia),
with the numbers of one parameter vector baked in. Coupled (mimic) joints follow their masters and a
motor transmission puts the joint terms on the motors, as in ``Robot``. The generated code needs
nothing but numpy (or a C compiler and libm): the controller does not import jaxid or JAX.

The numbers are written with ``repr`` (17 significant digits, exact for float64), so the generated
code reproduces ``Robot.torque`` to rounding (the tests check 1e-10 relative).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import numpy as np

from jaxid.friction.models import JOINT_TERMS

__all__ = ["c_source", "model_constants", "numpy_source", "stablehlo"]


def model_constants(robot, theta) -> dict:
    """The numbers the generated code bakes in, as numpy arrays (float64) and tuples: per joint
    (n_joints) the parent, whether revolute, the placement's rotation ``PR`` (3, 3) and its products
    with the axis' cross-product matrix K (``PK = PR K``, ``PK2 = PR K^2``: Rodrigues' formula
    ``E = PR + sin q PK + (1 - cos q) PK2``), the placement's origin ``PP`` (3,), the axis (3,), the
    prismatic step ``PR axis`` (3,), the inertial parameters (10,) and the joint terms' values (k,);
    the coordinate that drives each joint with its ratio and offset; gravity (3,) m/s^2; the
    transmission's offset (n,) and ``R^{-1}`` (n, n) or None. theta: the model's parameters (p,)."""
    if not all(hasattr(robot, k) for k in ("placements", "axes", "joint_types", "joint_terms", "inertial")):
        raise ValueError(
            f"the numpy and C exports write a Robot's recursion (rigid bodies + joint terms); {type(robot).__name__} "
            "is another model: export it as stablehlo"
        )
    theta = _checked_theta(robot, theta)
    nj = robot.n_joints
    inertial = theta[: 10 * nj].reshape(nj, 10)
    joint_params = theta[10 * nj :].reshape(nj, len(robot.joint_terms))
    P = np.asarray(robot.placements, dtype=float)
    axes = np.asarray(robot.axes, dtype=float)
    PR, PP = P[:, :3, :3], P[:, :3, 3]
    K = np.stack([np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]]) for a in axes])
    t = robot.transmission
    transmission = None
    if t is not None:
        R = np.asarray(t.matrix, dtype=float)
        transmission = (np.asarray(t.offset, dtype=float), np.linalg.inv(R))
    return {
        "n": int(robot.n),
        "n_joints": nj,
        "parents": tuple(int(k) for k in robot.parents),
        "revolute": tuple(k == "R" for k in robot.joint_types),
        "PR": PR,
        "PK": PR @ K,
        "PK2": PR @ K @ K,
        "PP": PP,
        "axes": axes,
        "step": np.einsum("nij,nj->ni", PR, axes),
        "inertial": inertial,
        "joint_terms": tuple(robot.joint_terms),
        "joint_params": joint_params,
        "coordinates": tuple(int(c) for c in robot.coordinates),
        "ratio": np.asarray(robot.mimic_ratio, dtype=float),
        "offset": np.asarray(robot.mimic_offset, dtype=float),
        "gravity": np.asarray(robot.gravity, dtype=float),
        "eps": float(robot.coulomb_eps),
        "vs": float(robot.stribeck_vs),
        "transmission": transmission,
    }


def _checked_theta(model, theta) -> np.ndarray:
    """theta as a float64 array (p,); ValueError unless it has the model's p finite entries."""
    theta = np.asarray(theta, dtype=float)
    p = len(model.parameter_names())
    if theta.shape != (p,):
        raise ValueError(
            f"theta has shape {theta.shape} but the model has {p} parameters; give the full standard vector "
            "(Params.full())"
        )
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta has non-finite values; export a finite parameter vector")
    return theta


def _header_lines(robot, theta, about: str | None) -> list[str]:
    """The header comment's lines: the model, the parameter set, the conventions."""
    names = robot.parameter_names()
    c = robot.joint_terms
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Inverse dynamics of the identified model {robot.name!r} ({robot.n} coordinates, "
        f"{robot.n_joints} joints: {', '.join(robot.names)}), generated by jaxid on {when}.",
        f"Parameter set: {about or 'a parameter vector given in code'}.",
        "tau(q, qd, qdd): generalised forces (n,) N m (N for a prismatic joint) at joint positions q (n,) rad",
        "(m), velocities qd (n,) rad/s and accelerations qdd (n,) rad/s^2, in the model's coordinate order",
        f"({', '.join(robot.coordinate_names)}); gravity {np.asarray(robot.gravity).tolist()} m/s^2 in the base frame.",
        "Rigid bodies: recursive Newton-Euler (Featherstone 2008, table 5.1), inertial parameters per link in",
        "its joint frame [m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (inertia about the frame origin).",
        f"Joint terms: {', '.join(c) if c else 'none'}"
        + (
            f" (Coulomb sign tanh(qd/{robot.coulomb_eps:g}), Stribeck velocity {robot.stribeck_vs:g} rad/s"
            + (", on the motor side of the transmission" if robot.transmission is not None else "")
            + ")."
            if c
            else "."
        ),
        "Parameters (name = value):",
    ]
    theta = np.asarray(theta, dtype=float)
    row: list[str] = []
    for name, v in zip(names, theta):
        row.append(f"{name} = {v:.10g}")
        if len(row) == 4:
            lines.append("  " + ", ".join(row))
            row = []
    if row:
        lines.append("  " + ", ".join(row))
    return lines


def _np_array(x) -> str:
    return f"np.array({np.asarray(x, dtype=float).tolist()!r})"


def numpy_source(robot, theta, *, about: str | None = None) -> str:
    """Source (str) of a Python module with one function ``tau(q, qd, qdd)`` that needs only numpy:
    q, qd, qdd (n,) or batched (..., n), rad, rad/s, rad/s^2; returns the torques of the same
    shape, N m. ``about`` names the parameter set in the header comment (e.g. the params.json it
    came from). theta: the model's parameters (p,), e.g. ``Params.full()``."""
    k = model_constants(robot, theta)
    head = "\n".join(_header_lines(robot, theta, about))
    t = k["transmission"]
    consts = [
        f"N = {k['n']}",
        f"N_JOINTS = {k['n_joints']}",
        f"PARENTS = {k['parents']!r}",
        f"REVOLUTE = {k['revolute']!r}",
        f"PR = {_np_array(k['PR'])}",
        f"PK = {_np_array(k['PK'])}",
        f"PK2 = {_np_array(k['PK2'])}",
        f"PP = {_np_array(k['PP'])}",
        f"AXES = {_np_array(k['axes'])}",
        f"STEP = {_np_array(k['step'])}",
        f"INERTIAL = {_np_array(k['inertial'])}",
        f"JOINT_TERMS = {k['joint_terms']!r}",
        f"JOINT_PARAMS = {_np_array(k['joint_params']) if k['joint_terms'] else 'np.zeros((N_JOINTS, 0))'}",
        f"COORDINATES = {k['coordinates']!r}",
        f"RATIO = {_np_array(k['ratio'])}",
        f"OFFSET = {_np_array(k['offset'])}",
        f"GRAVITY = {_np_array(k['gravity'])}",
        f"EPS = {k['eps']!r}",
        f"VS = {k['vs']!r}",
        f"TRANSMISSION_OFFSET = {None if t is None else _np_array(t[0])}",
        f"TRANSMISSION_INV = {None if t is None else _np_array(t[1])}",
    ]
    return _NUMPY_TEMPLATE.format(header=_comment(head, "# "), constants="\n".join(consts))


def _comment(text: str, prefix: str) -> str:
    return "\n".join((prefix + line).rstrip() for line in text.splitlines())


_NUMPY_TEMPLATE = '''{header}
"""Identified inverse dynamics as plain numpy (generated by jaxid; see the comment above)."""

import numpy as np

{constants}


def _mv(E, x):
    return np.einsum("...ij,...j->...i", E, x)


def _mtv(E, x):
    return np.einsum("...ji,...j->...i", E, x)


def _cross_motion(v, m):
    w, u = v[..., :3], v[..., 3:]
    return np.concatenate([np.cross(w, m[..., :3]), np.cross(w, m[..., 3:]) + np.cross(u, m[..., :3])], axis=-1)


def _wrench(pi, vl, al):
    # net wrench I a + v x* (I v) of one link in its frame (inertia about the frame origin)
    m, h = pi[0], pi[1:4]
    I = np.array([[pi[4], pi[5], pi[7]], [pi[5], pi[6], pi[8]], [pi[7], pi[8], pi[9]]])
    w, v, dw, dv = vl[..., :3], vl[..., 3:], al[..., :3], al[..., 3:]
    Lw = w @ I.T + np.cross(h, v)
    Lv = m * v - np.cross(h, w)
    n = dw @ I.T + np.cross(h, dv) + np.cross(w, Lw) + np.cross(v, Lv)
    f = m * dv - np.cross(h, dw) + np.cross(w, Lv)
    return np.concatenate([n, f], axis=-1)


def _columns(term, q, qd, qdd):
    s = np.tanh(qd / EPS)
    return {{
        "ia": lambda: qdd,
        "fv": lambda: qd,
        "fc": lambda: s,
        "fs": lambda: s * np.exp(-((qd / VS) ** 2)),
        "fva": lambda: qd * s,
        "offset": lambda: np.ones_like(qd),
        "ks": lambda: q,
    }}[term]()


def _to_coordinates(tau_joints):
    out = np.zeros(tau_joints.shape[:-1] + (N,))
    for j, c in enumerate(COORDINATES):
        out[..., c] += RATIO[j] * tau_joints[..., j]
    return out


def tau(q, qd, qdd):
    """Torques (..., N) N m at q, qd, qdd (..., N) rad, rad/s, rad/s^2."""
    q, qd, qdd = (np.asarray(x, dtype=float) for x in (q, qd, qdd))
    if q.shape[-1:] != (N,) or qd.shape != q.shape or qdd.shape != q.shape:
        raise ValueError(f"q, qd, qdd must have the same shape (..., {{N}}), got {{q.shape}}, {{qd.shape}}, {{qdd.shape}}")
    idx = list(COORDINATES)
    qj, qdj, qddj = q[..., idx] * RATIO + OFFSET, qd[..., idx] * RATIO, qdd[..., idx] * RATIO
    batch = q.shape[:-1]
    a0 = np.broadcast_to(np.concatenate([np.zeros(3), -GRAVITY]), batch + (6,))
    E, r, v, a, f = [], [], [], [], []
    for i, parent in enumerate(PARENTS):
        x = qj[..., i]
        if REVOLUTE[i]:
            s, c = np.sin(x)[..., None, None], (1.0 - np.cos(x))[..., None, None]
            Ei, ri = PR[i] + s * PK[i] + c * PK2[i], np.broadcast_to(PP[i], batch + (3,))
            S = np.concatenate([AXES[i], np.zeros(3)])
        else:
            Ei, ri = np.broadcast_to(PR[i], batch + (3, 3)), PP[i] + x[..., None] * STEP[i]
            S = np.concatenate([np.zeros(3), AXES[i]])
        vp, ap = (np.zeros(batch + (6,)), a0) if parent < 0 else (v[parent], a[parent])
        # parent motion seen from the child: E^T [w; v + w x r]
        to_child = lambda m: np.concatenate([_mtv(Ei, m[..., :3]), _mtv(Ei, m[..., 3:] + np.cross(m[..., :3], ri))], axis=-1)
        vi = to_child(vp) + S * qdj[..., i, None]
        ai = to_child(ap) + S * qddj[..., i, None] + _cross_motion(vi, np.broadcast_to(S, vi.shape)) * qdj[..., i, None]
        E.append(Ei)
        r.append(ri)
        v.append(vi)
        a.append(ai)
        f.append(_wrench(INERTIAL[i], vi, ai))
    tau_j = [None] * N_JOINTS
    for i in reversed(range(N_JOINTS)):
        S = np.concatenate([AXES[i], np.zeros(3)]) if REVOLUTE[i] else np.concatenate([np.zeros(3), AXES[i]])
        tau_j[i] = f[i] @ S
        if PARENTS[i] >= 0:
            ff = _mv(E[i], f[i][..., 3:])
            f[PARENTS[i]] = f[PARENTS[i]] + np.concatenate([_mv(E[i], f[i][..., :3]) + np.cross(r[i], ff), ff], axis=-1)
    out = _to_coordinates(np.stack(tau_j, axis=-1))
    if not JOINT_TERMS:
        return out
    if TRANSMISSION_INV is not None:  # the joint terms act on the motors: q_m = R^-1 (q - offset), tau += R^-T tau_m
        qm, qdm, qddm = (q - TRANSMISSION_OFFSET) @ TRANSMISSION_INV.T, qd @ TRANSMISSION_INV.T, qdd @ TRANSMISSION_INV.T
        cols = np.stack([_columns(t, qm, qdm, qddm) for t in JOINT_TERMS], axis=-1)
        return out + np.sum(cols * JOINT_PARAMS, axis=-1) @ TRANSMISSION_INV
    cols = np.stack([_columns(t, qj, qdj, qddj) for t in JOINT_TERMS], axis=-1)
    return out + _to_coordinates(np.sum(cols * JOINT_PARAMS, axis=-1))
'''


def _c_array(x) -> str:
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return repr(float(x))
    return "{" + ", ".join(_c_array(v) for v in x) + "}"


def c_source(robot, theta, *, about: str | None = None, name: str = "tau") -> str:
    """Source (str) of a C99 file with ``void <name>(const double q[N], const double qd[N], const
    double qdd[N], double out[N])`` (N = robot.n; rad, rad/s, rad/s^2 in, N m out) and no
    dependency beyond libm (``sin``, ``cos``, ``tanh``, ``exp``): the same recursion and joint
    terms as [`numpy_source`][jaxid.model.codegen.numpy_source], for one sample. ``name`` must be a C identifier."""
    if not name.isidentifier() or not name.isascii():
        raise ValueError(f"the C function name {name!r} is not a C identifier")
    k = model_constants(robot, theta)
    n, nj, nt = k["n"], k["n_joints"], len(k["joint_terms"])
    head = "\n".join(_header_lines(robot, theta, about))
    t = k["transmission"]
    term_code = {
        "ia": "qdd_",
        "fv": "qd_",
        "fc": "tanh(qd_ / EPS)",
        "fs": "tanh(qd_ / EPS) * exp(-(qd_ / VS) * (qd_ / VS))",
        "fva": "qd_ * tanh(qd_ / EPS)",
        "offset": "1.0",
        "ks": "q_",
    }
    assert set(term_code) == set(JOINT_TERMS)
    terms = " + ".join(f"JP[i][{j}] * ({term_code[tn]})" for j, tn in enumerate(k["joint_terms"])) or "0.0"
    lines = [
        "/*",
        _comment(head, " * "),
        " *",
        " * Compile: cc -std=c99 -O2 -c FILE.c (link with -lm). Thread-safe, no allocation.",
        " */",
        "#include <math.h>",
        "",
        f"#define N {n}",
        f"#define NJ {nj}",
        f"static const double EPS = {k['eps']!r};",
        f"static const double VS = {k['vs']!r};",
        f"static const int PARENT[NJ] = {{{', '.join(map(str, k['parents']))}}};",
        f"static const int REVOLUTE[NJ] = {{{', '.join(str(int(x)) for x in k['revolute'])}}};",
        f"static const int COORD[NJ] = {{{', '.join(map(str, k['coordinates']))}}};",
        f"static const double RATIO[NJ] = {_c_array(k['ratio'])};",
        f"static const double OFFSET[NJ] = {_c_array(k['offset'])};",
        f"static const double PR[NJ][3][3] = {_c_array(k['PR'])};",
        f"static const double PK[NJ][3][3] = {_c_array(k['PK'])};",
        f"static const double PK2[NJ][3][3] = {_c_array(k['PK2'])};",
        f"static const double PP[NJ][3] = {_c_array(k['PP'])};",
        f"static const double AXIS[NJ][3] = {_c_array(k['axes'])};",
        f"static const double STEP[NJ][3] = {_c_array(k['step'])};",
        f"static const double INERTIAL[NJ][10] = {_c_array(k['inertial'])};",
        f"static const double GRAVITY[3] = {_c_array(k['gravity'])};",
    ]
    if nt:
        lines.append(f"static const double JP[NJ][{nt}] = {_c_array(k['joint_params'])};")
    if t is not None:
        lines += [
            f"static const double T_OFFSET[N] = {_c_array(t[0])};",
            f"static const double T_INV[N][N] = {_c_array(t[1])};",
        ]
    lines.append(_C_BODY.replace("@NAME@", name))
    if not nt:
        joint = ""
    elif t is None:
        joint = f"""    for (int i = 0; i < NJ; ++i) {{
        const double q_ = qj[i], qd_ = qdj[i], qdd_ = qddj[i];
        (void)q_; (void)qd_; (void)qdd_;
        out[COORD[i]] += RATIO[i] * ({terms});
    }}
"""
    else:
        joint = f"""    double qm[N], qdm[N], qddm[N], taum[N];
    for (int i = 0; i < N; ++i) {{
        qm[i] = 0.0; qdm[i] = 0.0; qddm[i] = 0.0;
        for (int j = 0; j < N; ++j) {{
            qm[i] += T_INV[i][j] * (q[j] - T_OFFSET[j]);
            qdm[i] += T_INV[i][j] * qd[j];
            qddm[i] += T_INV[i][j] * qdd[j];
        }}
    }}
    for (int i = 0; i < NJ; ++i) {{
        const double q_ = qm[i], qd_ = qdm[i], qdd_ = qddm[i];
        (void)q_; (void)qd_; (void)qdd_;
        taum[i] = {terms};
    }}
    for (int j = 0; j < N; ++j)
        for (int i = 0; i < N; ++i) out[j] += taum[i] * T_INV[i][j];
"""
    return "\n".join(lines) + joint + "}\n"


_C_BODY = r"""
static void cross3(const double a[3], const double b[3], double c[3]) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* net wrench I a + v x* (I v) of link i in its frame (inertia about the frame origin) */
static void wrench(int i, const double vl[6], const double al[6], double f[6]) {
    const double *pi = INERTIAL[i];
    const double m = pi[0], h[3] = {pi[1], pi[2], pi[3]};
    const double I[3][3] = {{pi[4], pi[5], pi[7]}, {pi[5], pi[6], pi[8]}, {pi[7], pi[8], pi[9]}};
    const double *w = vl, *v = vl + 3, *dw = al, *dv = al + 3;
    double Lw[3], Lv[3], t1[3], t2[3], t3[3];
    cross3(h, v, t1);
    cross3(h, w, t2);
    for (int k = 0; k < 3; ++k) {
        Lw[k] = I[k][0] * w[0] + I[k][1] * w[1] + I[k][2] * w[2] + t1[k];
        Lv[k] = m * v[k] - t2[k];
    }
    cross3(h, dv, t1);
    cross3(w, Lw, t2);
    cross3(v, Lv, t3);
    for (int k = 0; k < 3; ++k) f[k] = I[k][0] * dw[0] + I[k][1] * dw[1] + I[k][2] * dw[2] + t1[k] + t2[k] + t3[k];
    cross3(h, dw, t1);
    cross3(w, Lv, t2);
    for (int k = 0; k < 3; ++k) f[3 + k] = m * dv[k] - t1[k] + t2[k];
}

/* motion vector m of the parent seen from the child at pose (E, r): E^T [w; v + w x r] */
static void to_child(const double E[3][3], const double r[3], const double m[6], double out[6]) {
    double wr[3], u[3];
    cross3(m, r, wr);
    for (int k = 0; k < 3; ++k) u[k] = m[3 + k] + wr[k];
    for (int k = 0; k < 3; ++k) {
        out[k] = E[0][k] * m[0] + E[1][k] * m[1] + E[2][k] * m[2];
        out[3 + k] = E[0][k] * u[0] + E[1][k] * u[1] + E[2][k] * u[2];
    }
}

void @NAME@(const double q[N], const double qd[N], const double qdd[N], double out[N]) {
    double qj[NJ], qdj[NJ], qddj[NJ];
    double E[NJ][3][3], r[NJ][3], S[NJ][6], v[NJ][6], a[NJ][6], f[NJ][6];
    const double zero[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    const double a0[6] = {0.0, 0.0, 0.0, -GRAVITY[0], -GRAVITY[1], -GRAVITY[2]};
    for (int i = 0; i < NJ; ++i) {
        qj[i] = q[COORD[i]] * RATIO[i] + OFFSET[i];
        qdj[i] = qd[COORD[i]] * RATIO[i];
        qddj[i] = qdd[COORD[i]] * RATIO[i];
    }
    for (int i = 0; i < NJ; ++i) {
        double vp[6], ap[6], cr[6];
        if (REVOLUTE[i]) {
            const double s = sin(qj[i]), c = 1.0 - cos(qj[i]);
            for (int x = 0; x < 3; ++x)
                for (int y = 0; y < 3; ++y) E[i][x][y] = PR[i][x][y] + s * PK[i][x][y] + c * PK2[i][x][y];
            for (int x = 0; x < 3; ++x) {
                r[i][x] = PP[i][x];
                S[i][x] = AXIS[i][x];
                S[i][3 + x] = 0.0;
            }
        } else {
            for (int x = 0; x < 3; ++x)
                for (int y = 0; y < 3; ++y) E[i][x][y] = PR[i][x][y];
            for (int x = 0; x < 3; ++x) {
                r[i][x] = PP[i][x] + qj[i] * STEP[i][x];
                S[i][x] = 0.0;
                S[i][3 + x] = AXIS[i][x];
            }
        }
        to_child((const double(*)[3])E[i], r[i], PARENT[i] < 0 ? zero : v[PARENT[i]], vp);
        to_child((const double(*)[3])E[i], r[i], PARENT[i] < 0 ? a0 : a[PARENT[i]], ap);
        for (int k = 0; k < 6; ++k) v[i][k] = vp[k] + S[i][k] * qdj[i];
        /* v x S (Featherstone's crm) */
        cross3(v[i], S[i], cr);
        cross3(v[i], S[i] + 3, cr + 3);
        {
            double t[3];
            cross3(v[i] + 3, S[i], t);
            for (int k = 0; k < 3; ++k) cr[3 + k] += t[k];
        }
        for (int k = 0; k < 6; ++k) a[i][k] = ap[k] + S[i][k] * qddj[i] + cr[k] * qdj[i];
        wrench(i, v[i], a[i], f[i]);
    }
    for (int c = 0; c < N; ++c) out[c] = 0.0;
    for (int i = NJ - 1; i >= 0; --i) {
        double t = 0.0;
        for (int k = 0; k < 6; ++k) t += S[i][k] * f[i][k];
        out[COORD[i]] += RATIO[i] * t;
        if (PARENT[i] >= 0) {
            /* the child's wrench in the parent frame: [E n + r x E f; E f] */
            double En[3], Ef[3], rf[3];
            for (int x = 0; x < 3; ++x) {
                En[x] = E[i][x][0] * f[i][0] + E[i][x][1] * f[i][1] + E[i][x][2] * f[i][2];
                Ef[x] = E[i][x][0] * f[i][3] + E[i][x][1] * f[i][4] + E[i][x][2] * f[i][5];
            }
            cross3(r[i], Ef, rf);
            for (int x = 0; x < 3; ++x) {
                f[PARENT[i]][x] += En[x] + rf[x];
                f[PARENT[i]][3 + x] += Ef[x];
            }
        }
    }
"""


def stablehlo(robot, theta, *, batched: bool = False, platforms: Sequence[str] = ("cpu",)) -> bytes:
    """``robot.torque`` at ``theta`` (p,) (a ``Robot`` or any model of the interface) as a serialised ``jax.export.Exported`` (StableHLO and
    its calling convention): a function of (q, qd, qdd) of shape (n,) each, or with ``batched``
    (N, n) for any N (a symbolic dimension), returning the torques of the same shape, float64,
    rad / rad/s / rad/s^2 in, N m out. Load it with ``jax.export.deserialize(data)`` and call
    ``.call(q, qd, qdd)`` (JAX with float64 enabled; no jaxid needed). ``platforms``: the
    backends it is lowered for (``jax.export``'s names: "cpu", "cuda", "rocm", "tpu")."""
    import importlib.util

    import jax
    import jax.numpy as jnp
    from jax import export

    if importlib.util.find_spec("flatbuffers") is None:  # jax.export's serialisation needs it; jax does not install it
        raise ImportError(
            "a serialised JAX export needs the flatbuffers package: pip install flatbuffers "
            "(or jaxid[export]); the numpy and C exports need nothing"
        )
    th = jnp.asarray(_checked_theta(robot, theta))
    n = robot.n
    one = lambda q, qd, qdd: robot.torque(th, q, qd, qdd)
    f = jax.vmap(one) if batched else one
    shape = export.symbolic_shape(f"N, {n}") if batched else (n,)
    spec = jax.ShapeDtypeStruct(shape, jnp.float64)
    exp = export.export(jax.jit(f), platforms=tuple(platforms))(spec, spec, spec)
    return bytes(exp.serialize())

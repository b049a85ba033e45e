"""Interchange with Pinocchio models (the optional ``pin`` extra): ``Robot.from_pinocchio``
and ``Robot.to_pinocchio``.

Both keep the parametrisation: a Pinocchio joint's inertia, ``Inertia.toDynamicParameters``
in the joint frame, is a link's 10-vector here (docs/conventions.md). Joints with one degree
of freedom are read: revolute and prismatic about any axis, and mimic joints (Pinocchio 3.4
and later) as coupled joints; free-flyer, spherical, planar and continuous (``RUBX``, whose
configuration is (cos q, sin q)) joints are refused by name. Limits come from the model's
position, velocity and effort limits, the nominal joint terms fv, fc, ia from its
``damping``, ``friction`` and ``armature``.
"""

from __future__ import annotations

import numpy as np

from jaxid.friction.models import JOINT_TERMS
from jaxid.model.urdf import flange

#: Joint terms with a Pinocchio model array, read as nominal values and written back.
TERM_ARRAYS = {"fv": "damping", "fc": "friction", "ia": "armature"}


def _pin():
    try:
        import pinocchio
    except ImportError:
        raise ImportError("Pinocchio interchange needs the 'pin' extra: pip install 'jaxid[pin]'") from None
    return pinocchio


def read(model, *, tool_frame=None, joint_terms=(), name=None) -> dict:
    """The keyword arguments of [`Robot`][jaxid.model.robot.Robot] for a ``pinocchio.Model`` (what
    is read: the module docstring); ``Robot.from_pinocchio(model, ...)`` is ``Robot(**read(model, ...))``.

    tool_frame: name of the model frame a payload is mounted on (``Robot.tip``); default a
    frame named like a tool flange (``tool0``, ``flange``, ``..._flange``), else the last
    joint's frame. joint_terms: enabled joint terms, nominal values from the model's arrays.
    """
    pin = _pin()
    q0 = pin.neutral(model)
    placements, axes, inertial, types, names, parents = [], [], [], [], [], []
    mimic: list[tuple[int, float, float] | None] = []
    lo, hi, vel, eff = [], [], [], []
    master_of_q: dict[int, int] = {}
    for i in range(1, model.njoints):
        jm, jname = model.joints[i], model.names[i]
        coupled = jm.shortname() == "JointModelMimic"  # no variable of its own: nq = nv = 0
        if not coupled and (jm.nv != 1 or jm.nq != 1):
            raise ValueError(
                f"Pinocchio joint {jname!r} ({jm.shortname()}) has nq={jm.nq}, nv={jm.nv}: only "
                "one-degree-of-freedom revolute and prismatic joints are supported (floating bases, "
                "spherical and continuous joints are not yet)"
            )
        data = jm.createData()
        jm.calc(data, q0)
        S = np.asarray(data.S).ravel()  # [v; omega] of a unit joint velocity, in the joint frame
        scale = jm.extract().scaling if coupled else 1.0
        S = S / scale
        revolute = np.linalg.norm(S[3:]) > 1e-12
        if revolute and np.linalg.norm(S[:3]) > 1e-12:
            raise ValueError(
                f"Pinocchio joint {jname!r} ({jm.shortname()}): a screw motion (rotation and "
                "translation) is not a revolute or prismatic joint"
            )
        axis = S[3:] if revolute else S[:3]
        placements.append(model.jointPlacements[i].homogeneous @ data.M.homogeneous)
        axes.append(axis / np.linalg.norm(axis))
        types.append("R" if revolute else "P")
        names.append(jname)
        parents.append(model.parents[i] - 1)
        inertial.append(np.asarray(model.inertias[i].toDynamicParameters()))
        if coupled:
            e = jm.extract()
            mimic.append((master_of_q[e.idx_q], float(e.scaling), float(e.offset)))
            continue
        master_of_q[jm.idx_q] = i - 1
        mimic.append(None)
        lo.append(model.lowerPositionLimit[jm.idx_q])
        hi.append(model.upperPositionLimit[jm.idx_q])
        vel.append(model.velocityLimit[jm.idx_v])
        eff.append(model.effortLimit[jm.idx_v])
    if not names:
        raise ValueError("the Pinocchio model has no joints")
    enabled = tuple(t for t in JOINT_TERMS if t in joint_terms)
    values = np.zeros((len(names), len(enabled)))
    for k, term in enumerate(enabled):
        if term in TERM_ARRAYS:
            per_v = np.asarray(getattr(model, TERM_ARRAYS[term]))
            values[:, k] = [per_v[model.joints[i].idx_v] for i in range(1, model.njoints)]
    frames = {
        f.name: (f.parentJoint - 1, f.placement.homogeneous) for f in model.frames if f.type != pin.FrameType.JOINT
    }
    tip_joint, tip = flange(
        frames, tool_frame, len(names), "tool_frame", "is not a frame of the Pinocchio model", ValueError
    )
    big = lambda x: np.where(x >= 1e300, np.inf, np.where(x <= -1e300, -np.inf, x))  # Pinocchio's "unlimited"
    return dict(
        placements=np.stack(placements),
        axes=np.stack(axes),
        inertial=np.stack(inertial),
        joint_types=tuple(types),
        parents=tuple(parents),
        names=tuple(names),
        joint_terms=enabled,
        joint_params=values,
        tip=tip,
        tip_joint=tip_joint,
        gravity=np.asarray(model.gravity.linear),
        q_min=big(np.array(lo)),
        q_max=big(np.array(hi)),
        qd_max=big(np.array(vel)),
        tau_max=big(np.array(eff)),
        mimic=mimic,
        name=name or model.name or "robot",
    )


def to_pinocchio(robot, theta=None):
    """A ``pinocchio.Model`` of ``robot`` (a [`Robot`][jaxid.model.robot.Robot]) with parameters
    theta (p,) (default its own).

    Joints become ``JointModelRevoluteUnaligned``/``PrismaticUnaligned`` about the robot's
    axes, coupled joints Pinocchio mimic joints; each link's inertia its joint's body
    (``Inertia.FromDynamicParameters``); fv, fc, ia go into ``damping``, ``friction``,
    ``armature``; the flange is an operational frame named ``"tool"``. Other joint terms
    (fs, fva, offset, ks) have no Pinocchio counterpart and are left out.
    """
    pin = _pin()
    robot = robot if theta is None else robot.with_parameters(theta)
    model = pin.Model()
    model.name = robot.name
    model.gravity.linear = np.asarray(robot.gravity, dtype=float)
    from jaxid.model.transmission import file_values

    inertial, joint_params = (np.asarray(x) for x in robot.split(robot.parameter_vector()))
    joint_params = file_values(robot, joint_params)  # motor-side terms as the joints' (NaN: none)
    coords, ids = robot.coordinates, []
    for i in range(robot.n_joints):
        axis = np.asarray(robot.axes[i], dtype=float)
        jm = (pin.JointModelRevoluteUnaligned if robot.joint_types[i] == "R" else pin.JointModelPrismaticUnaligned)(
            axis
        )
        c = coords[i]
        limits = [np.array([float(x[c])]) for x in (robot.tau_max, robot.qd_max, robot.q_min, robot.q_max)]
        finite = lambda x: np.where(np.isfinite(x), x, np.sign(x) * np.finfo(float).max)
        jid = model.addJoint(
            robot.parents[i] + 1 if robot.parents[i] >= 0 else 0,
            jm,
            pin.SE3(np.asarray(robot.placements[i], dtype=float)),
            robot.names[i],
            *(finite(x) for x in limits),
        )
        model.appendBodyToJoint(jid, pin.Inertia.FromDynamicParameters(inertial[i]), pin.SE3.Identity())
        ids.append(jid)
    model.addFrame(
        pin.Frame("tool", ids[robot.tip_joint], pin.SE3(np.asarray(robot.tip, dtype=float)), pin.FrameType.OP_FRAME)
    )
    for i, m in enumerate(robot.mimic):
        if m >= 0:
            model = pin.transformJointIntoMimic(
                model, ids[m], ids[i], float(robot.mimic_ratio[i]), float(robot.mimic_offset[i])
            )
    for k, term in enumerate(robot.joint_terms):  # per velocity: a mimic joint's own terms have no place
        if term in TERM_ARRAYS:
            values = np.asarray(getattr(model, TERM_ARRAYS[term])).copy()
            for i in range(robot.n_joints):
                if robot.mimic[i] < 0 and np.isfinite(joint_params[i, k]):
                    values[model.joints[ids[i]].idx_v] = joint_params[i, k]
            setattr(model, TERM_ARRAYS[term], values)
    return model

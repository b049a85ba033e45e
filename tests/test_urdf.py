"""URDF reading: structure, merging of fixed links, and clear errors for malformed files."""

import re

import numpy as np
import pytest

import jaxid

GOOD = """<robot name="two">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0.1 0 0" rpy="0 0 0.3"/><mass value="2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="tool"><inertial><origin xyz="0 0 0.05"/><mass value="0.5"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3" rpy="0 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint>
  <joint name="j2" type="prismatic"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.4 0 0" rpy="1.5707963 0 0"/><axis xyz="1 0 0"/><limit lower="0" upper="0.5" effort="100" velocity="1"/></joint>
  <joint name="fix" type="fixed"><parent link="l2"/><child link="tool"/><origin xyz="0 0 0.1"/></joint>
</robot>"""


def write(tmp_path, text, name="r.urdf"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_reads_chain_limits_and_merges_fixed_links(tmp_path):
    robot = jaxid.Robot.from_urdf(write(tmp_path, GOOD))
    assert robot.n == 2 and robot.joint_types == ("R", "P") and robot.names == ("j1", "j2")
    np.testing.assert_allclose(robot.q_max, [3, 0.5])
    np.testing.assert_allclose(robot.tau_max, [50, 100])
    np.testing.assert_allclose(robot.inertial[1, 0], 1.5)  # tool merged into l2
    np.testing.assert_allclose(robot.inertial[1, 1:4], [0, 0, 0.5 * 0.15])
    np.testing.assert_allclose(robot.tip, np.eye(4))  # default tip: the last moving link
    flanged = jaxid.Robot.from_urdf(write(tmp_path, GOOD), tip_link="tool")
    np.testing.assert_allclose(flanged.tip[:3, 3], [0, 0, 0.1])
    np.testing.assert_allclose(flanged.inertial, robot.inertial)
    # The regressor identity holds for prismatic joints too.
    q, qd, qdd = np.random.default_rng(0).normal(size=(3, 2))
    np.testing.assert_allclose(
        jaxid.regressor(robot, q, qd, qdd) @ robot.parameter_vector(), jaxid.rnea(robot, q, qd, qdd), atol=1e-12
    )


def test_kuka_urdf_loads():
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "examples/data/kuka_lwr4/kuka_lwr4.urdf"
    robot = jaxid.Robot.from_urdf(path)
    assert robot.n == 7
    np.testing.assert_allclose(robot.tau_max, [176, 176, 100, 100, 100, 38, 38])


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s.replace('<mass value="2"/>', ""), r"link 'l1' <inertial>: missing <mass"),
        (lambda s: s.replace('xyz="0 0 0.3"', 'xyz="0 0"'), r"joint 'j1' <origin xyz>"),
        (lambda s: s.replace('<axis xyz="1 0 0"/>', '<axis xyz="0 0 0"/>'), r"joint 'j2' <axis xyz>: zero axis"),
        (lambda s: s.replace('type="prismatic"', 'type="planar"'), r"joint 'j2' has type 'planar'"),
        (lambda s: s.replace('<child link="l2"/>', '<child link="nope"/>'), r"unknown link 'nope'"),
        (
            lambda s: s.replace('ixx="0.01" ixy="0" ixz="0" iyy="0.02"', 'ixy="0" ixz="0" iyy="0.02"'),
            r"missing attribute\(s\) \['ixx'\]",
        ),
        (
            lambda s: s.replace('<limit lower="-3" upper="3" effort="50" velocity="2"/>', ""),
            r"joint 'j1': a revolute joint needs <limit",
        ),
        (lambda s: s.replace("</robot>", ""), r"not well-formed XML"),
        (lambda s: s.replace('<mass value="1"/>', '<mass value="abc"/>'), r"link 'l2' <inertial> <mass value>"),
    ],
)
def test_malformed_urdf_errors_name_the_problem(tmp_path, edit, message):
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(ValueError, match=message) as info:
        jaxid.Robot.from_urdf(path)
    assert path in str(info.value)


def test_missing_file_and_bad_tip(tmp_path):
    with pytest.raises(FileNotFoundError):
        jaxid.Robot.from_urdf(str(tmp_path / "missing.urdf"))
    with pytest.raises(ValueError, match="tip_link 'zzz' is not a link"):
        jaxid.Robot.from_urdf(write(tmp_path, GOOD), tip_link="zzz")


def test_robot_constructor_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"placements must have shape \(n, 4, 4\)"):
        jaxid.Robot(np.zeros((2, 3, 3)), np.zeros((2, 3)), np.zeros((2, 10)))
    with pytest.raises(ValueError, match=r"inertial must have shape \(2, 10\)"):
        jaxid.Robot(np.tile(np.eye(4), (2, 1, 1)), np.ones((2, 3)), np.zeros((2, 9)))
    with pytest.raises(ValueError, match="unknown joint terms"):
        jaxid.models.ur5(joint_terms=("viscous",))


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda s: s.replace(
                'ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"',
                'ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.03"',
            ),
            r"link 'l2' <inertial>: principal moments .* violate the triangle inequality",
        ),
        (
            lambda s: s.replace('ixx="0.01" ixy="0" ixz="0" iyy="0.02"', 'ixx="-0.01" ixy="0" ixz="0" iyy="0.02"'),
            r"link 'l1' <inertial>: inertia is not positive semi-definite",
        ),
        (
            lambda s: s.replace('<mass value="0.5"/>', '<mass value="0"/>'),
            r"link 'tool' <inertial>: zero mass with a non-zero inertia",
        ),
    ],
)
def test_unphysical_inertia_is_named_and_can_be_skipped(tmp_path, edit, message):
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(ValueError, match=message + r".*(check_inertia=False; on the command line --no-inertia-check)"):
        jaxid.Robot.from_urdf(path)
    assert jaxid.Robot.from_urdf(path, check_inertia=False).n == 2


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda s: s.replace('<link name="l2">', '<link name="l1">').replace(
                '<child link="l2"/>', '<child link="l1"/>'
            ),
            r"two <link> elements are named 'l1'",
        ),
        (lambda s: s.replace('name="fix"', 'name="j2"'), r"two <joint> elements are named 'j2'"),
        (
            lambda s: s.replace('<axis xyz="1 0 0"/>', '<axis xyz="1 0 0"/><mimic joint="jx"/>'),
            r"joint 'j2' <mimic joint='jx'>: no joint of that name",
        ),
        (
            lambda s: s.replace('<axis xyz="1 0 0"/>', '<axis xyz="1 0 0"/><mimic joint="fix"/>'),
            r"joint 'j2' <mimic joint='fix'>: that joint is not in the model",
        ),
        (
            lambda s: s.replace('<axis xyz="1 0 0"/>', '<axis xyz="1 0 0"/><mimic joint="j1"/>').replace(
                '<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/><mimic joint="j2"/>'
            ),
            r"form a cycle",
        ),
        (
            lambda s: s.replace('<limit lower="-3"', '<dynamics damping="-0.1"/><limit lower="-3"'),
            r"joint 'j1' <dynamics damping>: negative friction -0.1",
        ),
    ],
)
def test_duplicate_names_and_bad_mimic_joints_are_rejected(tmp_path, edit, message):
    with pytest.raises(ValueError, match=message):
        jaxid.Robot.from_urdf(write(tmp_path, edit(GOOD)), joint_terms=("fv",))


def test_coupled_mimic_joint(tmp_path):
    """j2 follows j1 (q2 = 0.3 q1 + 0.1): one coordinate, and its torque is the virtual-work
    projection G^T tau of the unconstrained robot's joint torques at the coupled motion."""
    path = write(
        tmp_path,
        GOOD.replace('<axis xyz="1 0 0"/>', '<axis xyz="1 0 0"/><mimic joint="j1" multiplier="0.3" offset="0.1"/>'),
    )
    robot = jaxid.Robot.from_urdf(path, joint_terms=("fv",))
    free = jaxid.Robot.from_urdf(path, mimic="independent", joint_terms=("fv",))
    assert (robot.n, robot.n_joints, robot.coordinate_names, free.n) == (1, 2, ("j1",), 2)
    np.testing.assert_allclose(robot.q_max, [3.0])
    theta = np.random.default_rng(1).uniform(0.1, 1.0, free.parameter_vector().shape)
    robot, free = robot.with_parameters(theta), free.with_parameters(theta)
    G = np.array([[1.0], [0.3]])
    q, qd, qdd = np.random.default_rng(2).normal(size=(3, 4, 1))
    full = lambda x, o: x @ G.T + [0.0, o]
    tau = np.asarray(jaxid.rnea(free, full(q, 0.1), full(qd, 0), full(qdd, 0))) @ G
    np.testing.assert_allclose(jaxid.rnea(robot, q, qd, qdd), tau, rtol=1e-12)
    Y = np.asarray(jaxid.regressor(robot, q, qd, qdd))
    np.testing.assert_allclose(Y @ theta, tau[..., 0:1] if tau.ndim == 1 else tau, rtol=1e-12)
    np.testing.assert_allclose(
        jaxid.mass_matrix(robot, q[0]), G.T @ jaxid.mass_matrix(free, full(q[0], 0.1)) @ G, rtol=1e-12
    )
    assert jaxid.Robot.from_urdf(path, tip_link="l1").n == 1  # j2 locked: its mimic does not matter


DH = np.array([[0.0, 0.3, 0.0, np.pi / 2], [0.0, 0.0, 0.4, 0.0]])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(table=np.where(np.eye(2, 4) > 0, np.nan, DH)), r"DH table row 0 is not finite"),
        (dict(masses=[1.0, -2.0]), r"DH link 2 \(joint2\): negative mass -2 kg"),
        (
            dict(masses=[1.0, 1.0], inertias=[np.eye(3), [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]]),
            r"DH link 2 \(joint2\): inertia is not symmetric",
        ),
        (
            dict(masses=[1.0, 1.0], inertias=[np.eye(3), np.diag([0.1, 0.1, 0.3])]),
            r"DH link 2 \(joint2\): principal moments .* triangle inequality",
        ),
        (
            dict(masses=[1.0, 1.0], coms=[[0, 0, np.inf], [0, 0, 0]]),
            r"DH link 1 \(joint1\): centre of mass .* not finite",
        ),
        (dict(joint_types="R"), r"joint_types must be 2 entries \(one per DH row\)"),
        (dict(masses=[1.0]), r"masses must have shape \(2,\) for a 2-row DH table"),
    ],
)
def test_from_dh_rejects_bad_input(kwargs, message):
    kwargs = dict(dict(table=DH), **kwargs)
    with pytest.raises(ValueError, match=message):
        jaxid.Robot.from_dh(kwargs.pop("table"), **kwargs)


def test_from_dh_without_inertials_for_least_squares():
    robot = jaxid.Robot.from_dh(DH)
    np.testing.assert_array_equal(robot.inertial, 0.0)  # massless placeholders, unused by the regressor
    unchecked = jaxid.Robot.from_dh(
        DH, masses=[1.0, 1.0], inertias=[np.eye(3), np.diag([0.1, 0.1, 0.3])], check_inertia=False
    )
    assert unchecked.n == 2


def _link(name, m, xyz, I):
    return (
        f'<link name="{name}"><inertial><origin xyz="{xyz}" rpy="0.1 0.2 0.3"/><mass value="{m}"/>'
        f'<inertia ixx="{I[0]}" ixy="0.001" ixz="0" iyy="{I[1]}" iyz="0.002" izz="{I[2]}"/></inertial></link>'
    )


def _joint(name, kind, parent, child, xyz, rpy, axis):
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/><limit lower="-2" upper="2" effort="9" velocity="3"/></joint>'
    )


# A torso on a revolute joint with two 2-joint branches, one through a fixed mount, one ending
# in a prismatic joint: parents (-1, 0, 1, 0, 3).
TREE = "\n".join(
    [
        '<robot name="tree">',
        '<link name="base"/>',
        _link("torso", 3, "0 0 0.2", (0.05, 0.04, 0.03)),
        _link("mount", 0.5, "0.02 0 0", (0.01, 0.01, 0.01)),
        _link("l1", 1.5, "0.1 0 0", (0.01, 0.02, 0.02)),
        _link("l2", 1, "0.1 0.02 0", (0.01, 0.015, 0.02)),
        _link("r1", 1.2, "0 0.1 0", (0.02, 0.01, 0.02)),
        _link("r2", 0.8, "0 0 0.05", (0.01, 0.01, 0.01)),
        _joint("waist", "revolute", "base", "torso", "0 0 0.1", "0 0 0", "0 0 1"),
        _joint("mount_fix", "fixed", "torso", "mount", "0 0.2 0.4", "0.3 0 0", "1 0 0"),
        _joint("left1", "revolute", "mount", "l1", "0.1 0 0", "0 0.4 0", "0 1 0"),
        _joint("left2", "continuous", "l1", "l2", "0.3 0 0", "0 0 0.2", "0.6 0 0.8"),
        _joint("right1", "revolute", "torso", "r1", "0 -0.2 0.4", "-0.3 0 0", "1 0 0"),
        _joint("right2", "prismatic", "r1", "r2", "0 -0.3 0", "0 0 0", "0 1 0"),
        "</robot>",
    ]
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("tree"), TREE)
    return path, jaxid.Robot.from_urdf(path)


def test_tree_structure_and_sub_chains(tree):
    path, robot = tree
    assert robot.names == ("waist", "left1", "left2", "right1", "right2")
    assert robot.parents == (-1, 0, 1, 0, 3) and robot.joint_types == ("R", "R", "R", "R", "P")
    np.testing.assert_allclose(robot.inertial[0, 0], 3.5)  # the fixed mount merged into the torso
    left = jaxid.Robot.from_urdf(path, tip_link="l2")
    assert left.names == ("waist", "left1", "left2") and left.parents == (-1, 0, 1)
    np.testing.assert_allclose(left.inertial[0, 0], 5.5)  # the right branch locked onto the torso
    both = jaxid.Robot.from_urdf(path, tip_link=["l2", "r2"])
    assert both.parents == robot.parents
    np.testing.assert_allclose(both.inertial, robot.inertial)


def test_tree_dynamics_regressor_and_pinocchio(tree):
    path, robot = tree
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.normal(size=(3, 4, robot.n))
    tau = np.asarray(jaxid.rnea(robot, q, qd, qdd))
    Y = np.asarray(jaxid.regressor(robot, q, qd, qdd))
    np.testing.assert_allclose(Y @ np.asarray(robot.parameter_vector()), tau, atol=1e-12)
    M = np.asarray(jaxid.mass_matrix(robot, q))
    np.testing.assert_allclose(M, np.swapaxes(M, 1, 2), atol=1e-14)
    assert np.linalg.eigvalsh(M).min() > 0
    try:
        import pinocchio as pin
    except ImportError:
        return
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    assert [model.names[i] for i in range(1, model.njoints)] == list(robot.names)
    # Pinocchio's configuration of a continuous joint is (cos q, sin q).
    config = lambda q: np.concatenate(
        [[np.cos(x), np.sin(x)] if j.nq == 2 else [x] for x, j in zip(q, model.joints[1:])]
    )
    for k in range(len(q)):
        np.testing.assert_allclose(tau[k], pin.rnea(model, data, config(q[k]), qd[k], qdd[k]), atol=1e-12)
        Mp = pin.crba(model, data, config(q[k]))
        np.testing.assert_allclose(M[k], np.triu(Mp) + np.triu(Mp, 1).T, atol=1e-12)
        np.testing.assert_allclose(
            Y[k], pin.computeJointTorqueRegressor(model, data, config(q[k]), qd[k], qdd[k]), atol=1e-12
        )


def test_write_back_into_the_source_urdf(tmp_path):
    """Identified values go into a copy of the user's file: <inertial> of the joints' child links
    (merged fixed links keep theirs) and <dynamics damping friction>; the rest stays."""
    import xml.etree.ElementTree as ET

    from jaxid import results

    text = GOOD.replace(
        '<link name="l1">',
        '<link name="l1"><!-- CAD v2 --><visual><geometry><mesh filename="meshes/l1.stl"/></geometry></visual>',
    ).replace('izz="0.03"', 'izz="0.025"')
    source = write(tmp_path, text)
    robot = jaxid.Robot.from_urdf(source, joint_terms=("fv", "fc"))
    # A heavier copy of each body (consistent), plus friction.
    theta = np.concatenate([1.1 * np.asarray(robot.inertial).ravel(), [0.5, 2.0, 0.3, 1.5]])
    (tmp_path / "out").mkdir()
    out = results.write_model(robot, theta, tmp_path / "out" / "id.urdf", source=source)
    back = jaxid.Robot.from_urdf(out, joint_terms=("fv", "fc"))  # <dynamics> read back as fv, fc
    np.testing.assert_allclose(back.parameter_vector(), theta, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(back.placements, robot.placements, atol=0)

    parse = lambda p: ET.parse(p, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))).getroot()
    old, new = parse(source), parse(out)
    inertial = lambda r, name: ET.tostring(r.find(f"link[@name='{name}']/inertial"))
    assert inertial(new, "tool") == inertial(old, "tool")  # merged into l2, kept as it was
    assert new.find("link[@name='l1']/inertial/origin").get("rpy") == "0 0 0.3"  # inertial frame kept
    assert new.find("link[@name='l1']/visual/geometry/mesh").get("filename") == "../meshes/l1.stl"
    assert new.find("link[@name='l1']")[0].text == " CAD v2 "
    dyn = [
        (
            float(new.find(f"joint[@name='{j}']/dynamics").get("damping")),
            float(new.find(f"joint[@name='{j}']/dynamics").get("friction")),
        )
        for j in ("j1", "j2")
    ]
    assert dyn == [(0.5, 2.0), (0.3, 1.5)]

    def rest(root):  # every element outside the written ones, as (path, tag, attributes, text)
        out = []
        for el in root.iter():
            if el.tag in ("inertial", "mass", "inertia", "dynamics", "mesh") or el.tag is ET.Comment:
                continue
            if el.tag == "origin" and el in [e for i in root.iter("inertial") for e in i]:
                continue
            out.append((el.tag, dict(el.attrib), (el.text or "").strip()))
        return out

    assert rest(new) == rest(old)

    bad = theta.copy()
    bad[10] = -1.0  # link l2's mass
    with pytest.raises(ValueError, match=r"link 'l2' \(joint 'j2'\): the identified body less the bodies merged"):
        results.write_model(robot, bad, tmp_path / "bad.urdf", source=source)
    # A physical body lighter than the tool it carries (the data see only the sum): refused, the
    # tool's <inertial> is never touched.
    light = theta.copy()
    light[10:20] = 0.4 * np.asarray(robot.inertial[1])
    with pytest.raises(ValueError, match=r"link 'l2' \(joint 'j2'\): .* less \['tool'\] as in r.urdf"):
        results.write_model(robot, light, tmp_path / "out" / "light.urdf", source=source)
    assert not (tmp_path / "out" / "light.urdf").exists()
    # lump=True (--urdf-lump): written whole into l2, the tool without an <inertial>, and said so;
    # read back, the same body.
    with pytest.warns(UserWarning, match=r"the whole body is written into 'l2' and \['tool'\]"):
        out = results.write_model(robot, light, tmp_path / "out" / "light.urdf", source=source, lump=True)
    assert parse(out).find("link[@name='tool']/inertial") is None
    back = jaxid.Robot.from_urdf(out, joint_terms=("fv", "fc"))
    np.testing.assert_allclose(back.parameter_vector(), light, rtol=1e-12, atol=1e-15)


MASSES, COMS = [2.0, 1.0], [[0.0, 0.1, 0.0], [-0.2, 0.0, 0.01]]
INERTIAS = [[0.02, 0.001, 0.0, 0.03, 0.0, 0.025], [0.01, 0.0, 0.002, 0.012, 0.0, 0.015]]


def _dh_toml(inertials=True):
    """The two-row DH table above as a DH description file, angles in degrees."""
    f = lambda xs: "[" + ", ".join(repr(float(x)) for x in xs) + "]"
    rows = ['name = "two"', 'convention = "standard"', 'angle_unit = "deg"', 'joint_terms = ["fv"]']
    for i, row in enumerate(DH):
        rows += [
            "[[joint]]",
            f"dh = {f([np.degrees(row[0]), row[1], row[2], np.degrees(row[3])])}",
            "q_min = -90",
            "q_max = 180.0",
            f"tau_max = {[150.0, 28][i]}",
        ]
        if inertials:
            rows += [f"mass = {MASSES[i]!r}", f"com = {f(COMS[i])}", f"inertia = {f(INERTIAS[i])}"]
    rows += ["[tool]", "xyz = [0, 0, 0.1]", "rpy = [0, 0, 90]"]
    return "\n".join(rows)


def test_dh_description_file(tmp_path):
    from jaxid.model import dh

    path = tmp_path / "two.toml"
    path.write_text(_dh_toml())
    robot = dh.load(path)
    sym = lambda v: [[v[0], v[1], v[2]], [v[1], v[3], v[4]], [v[2], v[4], v[5]]]
    ref = jaxid.Robot.from_dh(DH, masses=MASSES, coms=COMS, inertias=[sym(v) for v in INERTIAS])
    assert robot.joint_terms == ("fv",) and robot.names == ("joint1", "joint2")
    np.testing.assert_allclose(robot.placements, ref.placements, atol=1e-12)
    np.testing.assert_allclose(robot.inertial, ref.inertial, atol=1e-12)
    np.testing.assert_allclose(
        np.stack([robot.q_min, robot.q_max, robot.tau_max]), [[-np.pi / 2] * 2, [np.pi] * 2, [150, 28]]
    )
    np.testing.assert_allclose(
        robot.tip, ref.tip @ np.array([[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0.1], [0, 0, 0, 1]]), atol=1e-12
    )
    path.write_text(_dh_toml(inertials=False))
    np.testing.assert_array_equal(dh.load(path, joint_terms=()).inertial, 0.0)  # least squares needs none
    bad = {
        "unknown key(s) ['masses']": _dh_toml().replace("mass =", "masses =", 1),
        "inertials are given for some joints but not all": _dh_toml().replace("mass =", "# mass =", 1),
        "joint 1: missing dh": _dh_toml().replace("dh = [", "# dh = [", 1),
        "not valid TOML": _dh_toml() + "\n[[joint",
    }
    for message, text in bad.items():
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(message)):
            dh.load(path)

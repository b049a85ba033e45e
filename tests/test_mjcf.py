"""MJCF reading and write-back: dynamics agree with Pinocchio's MJCF parser and, where mujoco is
installed, with MuJoCo's mj_inverse (its own export of a UR5, two Menagerie-style files); bad input named."""

from pathlib import Path

import numpy as np
import pytest

import jaxid

ARM = """
<mujoco model="arm">
  <compiler angle="degree"/>
  <option gravity="0 0 -9.81"/>
  <default>
    <joint damping="0.5" axis="0 1 0"/>
    <default class="wrist"><joint damping="0.1" frictionloss="0.2" range="-90 90"/></default>
  </default>
  <worldbody>
    <body name="base" pos="0 0 0.1">
      <body name="l1" pos="0 0 0.2" euler="0 0 30">
        <joint name="j1" axis="0 0 1" range="-170 170"/>
        <inertial pos="0.01 0.02 0.1" quat="0.9 0.1 0.2 0.3" mass="3" diaginertia="0.05 0.04 0.03"/>
        <body name="l2" pos="0.1 0 0.3" axisangle="1 0 0 20">
          <joint name="j2" pos="0 0 0.05" ref="10"/>
          <inertial pos="0.2 0 0" mass="2" fullinertia="0.02 0.03 0.025 0.001 -0.002 0.0015"/>
          <body name="l3" pos="0.4 0 0" xyaxes="0 1 0 -1 0 0" childclass="wrist">
            <joint name="j3" type="slide" axis="1 0 0" range="0 0.2"/>
            <inertial pos="0 0.05 0" euler="10 20 30" mass="1" diaginertia="0.01 0.012 0.008"/>
            <body name="fixed" pos="0 0 0.1" zaxis="0 1 1">
              <inertial pos="0 0 0.02" mass="0.3" diaginertia="0.001 0.001 0.001"/>
              <site name="tool0" pos="0 0 0.05"/>
            </body>
            <body name="l4" pos="0 0.1 0">
              <joint name="j4" class="wrist"/>
              <inertial pos="0 0 0.03" mass="0.5" diaginertia="0.002 0.003 0.002"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def write(tmp_path, text):
    path = tmp_path / "arm.xml"
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("mjcf"), ARM)
    return path, jaxid.Robot.from_mjcf(path, joint_terms=("fv", "fc"))


def test_reads_tree_defaults_units_and_tool_site(arm):
    path, robot = arm
    assert robot.names == ("j1", "j2", "j3", "j4") and robot.joint_types == ("R", "R", "P", "R")
    assert robot.parents == (-1, 0, 1, 2)
    np.testing.assert_allclose(robot.q_max, [np.radians(170), np.inf, 0.2, np.pi / 2])  # degrees; slide in m
    np.testing.assert_allclose(robot.joint_params, [[0.5, 0], [0.5, 0], [0.1, 0.2], [0.1, 0.2]])  # class defaults
    np.testing.assert_allclose(robot.inertial[2, 0], 1.3)  # the jointless body welded onto l3
    assert robot.tip_joint == 2  # site tool0 sits on the welded body, carried by j3
    np.testing.assert_allclose(robot.tip[:3, 3], [0, 0.05 / np.sqrt(2), 0.1 + 0.05 / np.sqrt(2)], atol=1e-12)


def test_dynamics_match_pinocchio_mjcf(arm):
    pin = pytest.importorskip("pinocchio")
    path, robot = arm
    robot = robot.with_joint_terms(())
    model = pin.buildModelFromMJCF(path)
    data = model.createData()
    assert [model.names[i] for i in range(1, model.njoints)] == list(robot.names)
    q, qd, qdd = np.random.default_rng(0).normal(size=(3, 3, 4))
    tau, M = jaxid.rnea(robot, q, qd, qdd), jaxid.mass_matrix(robot, q)
    for k in range(3):
        np.testing.assert_allclose(tau[k], pin.rnea(model, data, q[k], qd[k], qdd[k]), atol=1e-12)
        Mp = pin.crba(model, data, q[k])
        np.testing.assert_allclose(M[k], np.triu(Mp) + np.triu(Mp, 1).T, atol=1e-12)


def test_equality_joint_is_a_coupled_joint(tmp_path):
    text = ARM.replace(
        "</worldbody>", '</worldbody><equality><joint joint1="j4" joint2="j2" polycoef="0.1 -0.5 0 0 0"/></equality>'
    )
    robot = jaxid.Robot.from_mjcf(write(tmp_path, text))
    assert (robot.n, robot.n_joints, robot.coordinate_names) == (3, 4, ("j1", "j2", "j3"))
    np.testing.assert_allclose([robot.mimic_ratio[3], robot.mimic_offset[3]], [-0.5, 0.1])


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda s: s.replace('<joint name="j3" type="slide"', '<joint name="j3" type="ball"'),
            r"joint 'j3' has type 'ball'.*floating bases and ball joints are not supported",
        ),
        (
            lambda s: s.replace('<body name="base" pos="0 0 0.1">', '<body name="base" pos="0 0 0.1"><freejoint/>'),
            r"body 'base' has a <freejoint>: floating bases are not supported yet",
        ),
        (
            lambda s: s.replace(
                "</worldbody>", '</worldbody><tendon><fixed name="t"><joint joint="j1" coef="1"/></fixed></tendon>'
            ),
            r"<tendon><fixed name='t'>: tendons couple joints",
        ),
        (
            lambda s: s.replace(
                "</worldbody>",
                '</worldbody><equality><connect name="loop" body1="l1" body2="l4" anchor="0 0 0"/></equality>',
            ),
            r"<equality><connect name='loop'>: .* closes a kinematic loop",
        ),
        (
            lambda s: s.replace("</worldbody>", '</worldbody><equality><joint joint1="j4" joint2="jx"/></equality>'),
            r"no hinge or slide joint named 'jx'",
        ),
        (
            lambda s: s.replace('<option gravity="0 0 -9.81"/>', '<include file="more.xml"/>'),
            r"<include file='more.xml'>: not found: .*more.xml; MuJoCo resolves it from the main file's folder",
        ),
        (lambda s: s.replace('mass="2"', 'mass="-2"'), r"body 'l2' <inertial>: negative mass"),
        (
            lambda s: s.replace('axisangle="1 0 0 20"', 'axisangle="1 0 0 20" quat="1 0 0 0"'),
            r"orientation given twice",
        ),
        (lambda s: s.replace("<mujoco", "<robot").replace("</mujoco>", "</robot>"), r"expected <mujoco>"),
    ],
)
def test_bad_mjcf_is_named(tmp_path, edit, message):
    with pytest.raises(ValueError, match=message):
        jaxid.Robot.from_mjcf(write(tmp_path, edit(ARM)))


# ARM with a comment, a second joint in body l4 (j4 then massless in MJCF), armature on j5, a
# mesh folder and a texture file relative to the model file.
TWO_JOINTS = ARM.replace(
    '<joint name="j4" class="wrist"/>',
    '<!-- wrist pitch --><joint name="j4" class="wrist"/><joint name="j5" armature="0.01"/>',
).replace(
    '<compiler angle="degree"/>',
    '<compiler angle="degree" meshdir="meshes"/><asset><mesh file="l1.stl"/>'
    '<texture name="t" type="2d" file="tex/wood.png"/></asset>',
)
TERMS = ("fv", "fc", "ia")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(source, out, robot, theta): identified-like values (each body 10 % heavier, new joint
    terms) written back into a copy of TWO_JOINTS in another folder."""
    from jaxid import results

    d = tmp_path_factory.mktemp("mjcf_out")
    source = write(d, TWO_JOINTS)
    robot = jaxid.Robot.from_mjcf(source, joint_terms=TERMS)
    joint = np.arange(1.0, 1 + 3 * robot.n_joints).reshape(robot.n_joints, 3) / 10
    theta = np.concatenate([1.1 * np.asarray(robot.inertial).ravel(), joint.ravel()])
    (d / "out").mkdir()
    out = results.write_model(robot, theta, d / "out" / "id.xml", source=source)
    return source, out, robot, theta


def test_write_back_round_trip(written):
    source, out, robot, theta = written
    back = jaxid.Robot.from_mjcf(out, joint_terms=TERMS)
    assert back.names == robot.names
    np.testing.assert_allclose(back.parameter_vector(), theta, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(back.placements, robot.placements)
    np.testing.assert_array_equal(back.inertial[3], 0.0)  # j4: between two joints of one body


def test_write_back_changes_only_inertials_and_joint_terms(written):
    import xml.etree.ElementTree as ET

    source, out, robot, theta = written
    parse = lambda p: ET.parse(p, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))).getroot()
    old, new = list(parse(source).iter()), list(parse(out).iter())
    patched = {
        # an inertia no longer diagonal in its orientation gets its principal axes' quat instead
        "inertial": {"pos", "mass", "diaginertia", "fullinertia", "quat", "euler"},
        "joint": {"damping", "frictionloss", "armature"},
        "compiler": {"meshdir"},
        "texture": {"file"},
    }
    assert [e.tag for e in new] == [e.tag for e in old]  # comments included
    for a, b in zip(old, new):
        keep = lambda e: {k: v for k, v in e.attrib.items() if k not in patched.get(e.tag, ())}
        assert keep(b) == keep(a) and (b.text or "").strip() == (a.text or "").strip()
    # Written one folder down: the same asset files, from there (the mesh through meshdir).
    tag = lambda root, name: next(e for e in root if e.tag == name)
    assert (tag(new, "compiler").get("meshdir"), tag(new, "texture").get("file")) == ("../meshes", "../tex/wood.png")
    assert tag(new, "mesh").get("file") == "l1.stl"
    body = lambda root, name: next(e for e in root if e.tag == "body" and e.get("name") == name)
    welded_old, welded_new = (body(r, "fixed").find("inertial").attrib for r in (old, new))
    assert welded_new == welded_old  # merged into j3's body, kept as it was
    l2 = body(new, "l2").find("inertial")  # off-diagonal inertia: fullinertia, in the kept frame
    assert "fullinertia" in l2.attrib and "diaginertia" not in l2.attrib
    l1 = body(new, "l1").find("inertial")  # a diagonal inertia scaled stays diagonal in its quat frame
    assert l1.get("quat") == "0.9 0.1 0.2 0.3" and "diaginertia" in l1.attrib
    np.testing.assert_allclose([float(x) for x in l1.get("diaginertia").split()], [0.055, 0.044, 0.033], rtol=1e-12)
    j4 = next(e for e in new if e.get("name") == "j4")  # set on the element over its class default
    values = dict(zip(robot.joint_terms, robot.split(theta)[1][3]))
    assert j4.get("class") == "wrist" and float(j4.get("damping")) == values["fv"] != 0.1  # 0.1: the class's
    assert float(j4.get("frictionloss")) == values["fc"] and float(j4.get("armature")) == values["ia"]


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda t, i: t.__setitem__(20, -1.0),
            r"body 'l3' \(joint 'j3'\): the identified body less the bodies merged "
            r"into it .* is not physically consistent",
        ),
        (lambda t, i: t.__setitem__(10, -1.0), r"body 'l2' \(joint 'j2'\): the identified body is not physically"),
        (lambda t, i: t.__setitem__(30, 0.1), r"joint 'j4': is followed by another joint of the same body"),
        (lambda t, i: t.__setitem__(i, -0.1), r"joint 'j1': identified damping -0.1 is negative"),
    ],
)
def test_write_back_refuses_what_is_not_a_body(written, tmp_path, edit, message):
    from jaxid import results

    source, _, robot, theta = written
    bad = theta.copy()
    edit(bad, 10 * robot.n_joints + robot.joint_terms.index("fv"))  # joint j1's fv
    with pytest.raises(ValueError, match=message):
        results.write_model(robot, bad, tmp_path / "bad.xml", source=source)
    assert not (tmp_path / "bad.xml").exists()


PLANAR = """<mujoco model="planar">
  <option gravity="0 -9.81 0"/>
  <default><joint axis="0 0 1" damping="0.2"/></default>
  <worldbody>
    <body name="a"><joint name="j1"/><inertial pos="0.5 0 0" mass="1" diaginertia="0.01 0.09 0.09"/>
      <body name="b" pos="1 0 0"><joint name="j2"/><inertial pos="0.4 0 0" mass="0.8" diaginertia="0.01 0.06 0.06"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_identify_writes_back_into_the_mjcf_file(tmp_path, capsys):
    """jaxid identify --mjcf FILE --mjcf-out: exact torques of the file's own model (with its
    damping) are identified and written back; the written file predicts them."""
    import jaxid.data
    from jaxid import results
    from jaxid.cli import main

    source = tmp_path / "planar.xml"
    source.write_text(PLANAR)
    robot = jaxid.Robot.from_mjcf(source, joint_terms=("fv",))
    t = np.arange(0.0, 4.0, 0.01)
    w = 2 * np.pi * np.array([0.25, 0.5, 0.75])
    a = np.array([[0.6, -0.4], [0.3, 0.5], [-0.2, 0.3]])
    q, qd, qdd = np.sin(np.outer(t, w)) @ a, (np.cos(np.outer(t, w)) * w) @ a, (-np.sin(np.outer(t, w)) * w**2) @ a
    tau = np.asarray(jaxid.rnea(robot, q, qd, qdd))  # with the file's damping 0.2 (fv)
    jaxid.data.write(jaxid.data.Dataset(t=t, q=q, qd=qd, qdd=qdd, tau=tau), tmp_path / "run.csv")
    assert (
        main(
            [
                "identify",
                "--robot",
                "planar2",
                "--mjcf-out",
                str(tmp_path / "x.xml"),
                str(tmp_path / "run.csv"),
                "-o",
                str(tmp_path / "x.json"),
            ]
        )
        == 2
    )
    assert "--mjcf-out" in capsys.readouterr().err and not (tmp_path / "x.json").exists()
    # The base estimate with the unidentifiable parameters at their nominal values is consistent.
    assert (
        main(
            [
                "identify",
                "--mjcf",
                str(source),
                "--joint-terms",
                "fv",
                str(tmp_path / "run.csv"),
                "--mjcf-out",
                str(tmp_path / "id.xml"),
                "-o",
                str(tmp_path / "p.json"),
                "--quiet",
            ]
        )
        == 0
    )
    assert "id.xml" in capsys.readouterr().out
    back = jaxid.Robot.from_mjcf(tmp_path / "id.xml", joint_terms=("fv",))
    np.testing.assert_allclose(back.joint_params[:, 0], 0.2, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(jaxid.rnea(back, q, qd, qdd)), tau, atol=1e-9)
    params = results.load_params(tmp_path / "p.json")
    assert params.model["mjcf"] == str(source.resolve()) and "mjcf_sha256" in params.model
    assert results.model_from_description(params.model).names == robot.names  # validate can rebuild it


# ---- MuJoCo as the oracle: its own export of a UR5 and two Menagerie-style files ----------------
DATA = Path(__file__).parent / "data" / "mjcf"
MODELS = ["ur5_mujoco_export.xml", "arm7.xml", "scara.xml"]


def states(robot, seed, samples=6):
    """q, qd, qdd (samples, n): |qd| in [0.5, 1.5] rad/s, where MuJoCo's frictionloss saturates."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.5, 1.5, (samples, robot.n))
    qd = rng.uniform(0.5, 1.5, q.shape) * rng.choice([-1.0, 1.0], q.shape)
    return q, qd, rng.normal(size=q.shape)


def relative_error(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_reads_mujocos_export_with_empty_frames():
    """mj_saveLastXML of the UR5 URDF (empty <frame/> elements, radians): read without mujoco."""
    robot = jaxid.Robot.from_mjcf(DATA / "ur5_mujoco_export.xml")
    assert robot.names[0] == "shoulder_pan_joint" and robot.parents == (-1, 0, 1, 2, 3, 4)
    np.testing.assert_allclose(np.sum(robot.inertial[:, 0]), 3.7 + 8.393 + 2.275 + 2 * 1.219 + 0.1879)


def test_without_mujoco_a_geom_inertia_is_named(monkeypatch, tmp_path):
    import shutil
    import sys

    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco raises ImportError
    with pytest.raises(ValueError, match=r"body 'link3' has geoms and no <inertial>.*install mujoco"):
        jaxid.Robot.from_mjcf(DATA / "arm7.xml")
    # Geoms ignored by the compiler option: read (include, classes, frames) without mujoco.
    shutil.copy(DATA / "arm7_defaults.xml", tmp_path)
    text = (DATA / "arm7.xml").read_text().replace('autolimits="true"', 'autolimits="true" inertiafromgeom="false"')
    robot = jaxid.Robot.from_mjcf(write(tmp_path, text), joint_terms=("fv", "ia"))
    assert robot.joint_terms == ("ia", "fv")
    np.testing.assert_array_equal(robot.joint_params[4:], [[0.02, 0.1]] * 2)  # class wrist, via childclass
    np.testing.assert_allclose(robot.inertial[5, 0], 1.47 + 0.73)  # the hand, in a frame, welded to link6


@pytest.mark.parametrize("name", MODELS)
def test_reads_what_mujoco_simulates(name):
    """mj_inverse (constraints off) = jaxid's rnea with the files' armature and damping."""
    from jaxid.model import mjcf

    pytest.importorskip("mujoco")
    robot = jaxid.Robot.from_mjcf(DATA / name, joint_terms=("fv", "ia"))
    q, qd, qdd = states(robot, 0)
    tau = np.asarray(jaxid.rnea(robot, q, qd, qdd))
    assert relative_error(tau, mjcf.mujoco_inverse(DATA / name, robot, q, qd, qdd)) <= 1e-8


@pytest.fixture(scope="module", params=MODELS)
def identified(request, tmp_path_factory):
    """(source, out, robot, theta): each moving body 0-30 % heavier plus a point mass off its
    centre (so its inertia is no longer diagonal where it was), new fv, fc, ia, written back
    into a copy one folder down."""
    import shutil

    from jaxid import results
    from jaxid.model.urdf import _from_mass_com_inertia

    pytest.importorskip("mujoco")
    d = tmp_path_factory.mktemp("mjcf_rt")
    for f in DATA.iterdir():
        shutil.copy(f, d)
    source = d / request.param
    robot = jaxid.Robot.from_mjcf(source, joint_terms=TERMS)
    rng = np.random.default_rng(1)
    bodies = np.array(robot.inertial)
    for i in np.flatnonzero(bodies[:, 0] > 0):  # a body between two joints of one MJCF body stays empty
        point = _from_mass_com_inertia(rng.uniform(0.1, 0.5), rng.normal(scale=0.05, size=3), np.zeros((3, 3)))
        bodies[i] = rng.uniform(1, 1.3) * bodies[i] + np.asarray(point)
    joint = rng.uniform(0.01, 0.5, (robot.n_joints, len(robot.joint_terms)))
    theta = np.concatenate([bodies.ravel(), joint.ravel()])
    (d / "out").mkdir()
    return source, results.write_model(robot, theta, d / "out" / "id.xml", source=source), robot, theta


def test_mujoco_loads_the_written_file_and_agrees(identified):
    """Rigid bodies, armature and damping: mj_inverse of the written file = robot.torque(theta)
    (1e-8); frictionloss: MuJoCo's constraint torque, saturated at |qd| >= 0.5 rad/s, is
    fc sgn(qd), which jaxid's fc tanh(qd / eps) equals there."""
    from jaxid.model import mjcf

    source, out, robot, theta = identified
    q, qd, qdd = states(robot, 2)
    fc = robot.joint_terms.index("fc")
    no_fc = theta.copy()
    no_fc[10 * robot.n_joints + fc :: len(robot.joint_terms)] = 0.0
    torque = lambda th: np.stack([np.asarray(robot.torque(th, *x)) for x in zip(q, qd, qdd)])
    rigid = mjcf.mujoco_inverse(out, robot, q, qd, qdd)
    assert relative_error(torque(no_fc), rigid) <= 1e-8
    dry = mjcf.mujoco_inverse(out, robot, q, qd, qdd, friction=True) - rigid
    values = robot.split(theta)[1][:, fc]
    np.testing.assert_allclose(dry, values * np.sign(qd), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(torque(theta) - torque(no_fc), values * np.sign(qd), rtol=1e-8, atol=1e-10)


def test_written_inertials_are_mjcf_and_only_they_change(identified):
    """One <inertial> per moving body, never quat (or another orientation) with fullinertia;
    line by line, only inertials, the joints' damping/frictionloss/armature and the include's
    path (one folder up) differ; inserted inertials are whole new lines."""
    import difflib
    import re
    import xml.etree.ElementTree as ET

    source, out, robot, theta = identified
    for el in ET.parse(out).getroot().iter("inertial"):
        assert not ("fullinertia" in el.attrib and set(el.attrib) & {"quat", "axisangle", "euler", "xyaxes", "zaxis"})

    def patched_out(line):  # the line less what write-back may change
        if "<inertial" in line:
            return re.sub(r'\s\w+="[^"]*"', "", line)
        if "<joint" in line:
            return re.sub(r'\s(?:damping|frictionloss|armature)="[^"]*"', "", line)
        return line.replace('<include file="../', '<include file="')

    old, new = source.read_text().splitlines(), out.read_text().splitlines()
    a, b = [patched_out(x) for x in old], [patched_out(x) for x in new]
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    assert {op for op, *_ in ops} <= {"equal", "insert"}, [x for x in ops if x[0] != "equal"]
    inserted = [x for op, _, _, j1, j2 in ops if op == "insert" for x in new[j1:j2]]
    assert all(re.fullmatch(r"\s*<inertial [^<>]*/>", x) for x in inserted)
    assert len(inserted) == {"ur5_mujoco_export.xml": 0, "arm7.xml": 1, "scara.xml": 1}[source.name]  # geom-only


def test_write_back_refuses_elements_of_included_files(tmp_path):
    (tmp_path / "arm.xml").write_text('<mujoco><include file="bodies.xml"/></mujoco>')
    (tmp_path / "bodies.xml").write_text(
        '<mujoco><worldbody><body name="b"><joint name="j"/>'
        '<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body></worldbody></mujoco>'
    )
    robot = jaxid.Robot.from_mjcf(tmp_path / "arm.xml")
    with pytest.raises(ValueError, match=r"<inertial name=None> is in the included file .*bodies.xml"):
        jaxid.model.mjcf.write_back(robot, robot.parameter_vector(), tmp_path / "arm.xml", tmp_path / "x.xml")


ODD = """<mujoco model="odd">
  <!-- a comment with > and <joint damping="1"/> in it -->
  <worldbody>
    <body name="b>1" pos='0 0 1'>
      <joint
          name="j pos='9'"   axis='0 1 0'
          damping = '0.5' />
      <body name="c" pos="0.3 0 0"><joint name="k"/><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/></body>
    </body>
  </worldbody>
</mujoco>
"""


def test_write_back_patches_odd_formatting_in_place(tmp_path):
    """Multi-line tags, single quotes, '>' and attribute-like text in values and comments: only
    the values change; an inertial is inserted on its own line under a body that had none."""
    from jaxid.model import mjcf
    from jaxid.model.urdf import _from_mass_com_inertia, numbers

    source = write(tmp_path, ODD)
    robot = jaxid.Robot.from_mjcf(source, joint_terms=("fv",))
    b = np.asarray(_from_mass_com_inertia(2.0, np.array([0, 0, 0.1]), np.diag([0.1, 0.2, 0.25])))
    theta = np.concatenate([b, 1.5 * np.asarray(robot.inertial[1]), [0.25, 0.125]])
    out = mjcf.write_back(robot, theta, source, tmp_path / "out.xml")
    expected = (
        ODD.replace("damping = '0.5'", 'damping = "0.25"')
        .replace('<joint name="k"/>', '<joint name="k" damping="0.125"/>')
        .replace('mass="1" diaginertia="0.1 0.1 0.1"', f'mass="1.5" diaginertia="{numbers([0.1 * 1.5] * 3)}"')
    )
    inserted = f'<inertial pos="{numbers([0, 0, 0.1])}" mass="2" diaginertia="{numbers([0.1, 0.2, 0.25])}"/>'
    body = "<body name=\"b>1\" pos='0 0 1'>"
    assert out.read_text() == expected.replace(body, f"{body}\n      {inserted}")
    back = jaxid.Robot.from_mjcf(out, joint_terms=("fv",))
    np.testing.assert_allclose(back.parameter_vector(), theta, rtol=1e-14, atol=1e-15)

"""Meshes of a URDF (jaxid.model.meshes, geometry.from_urdf): package:// resolution by each
route, STL / OBJ / DAE reading, the minimum-volume capsule and its error, the skeleton fallback."""

import re
import sys
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import jaxid
from jaxid.model import geometry, meshes
from jaxid.workflow import WorkflowError
from jaxid.workflow.requests import ModelSpec

R, L = 0.05, 0.4  # the test cylinder, m


def _cylinder(n=48, R=R, L=L):
    """Vertices (2n, 3) of a cylinder's rims, axis z, centred at 0."""
    a = 2 * np.pi * np.arange(n) / n
    ring = np.stack([R * np.cos(a), R * np.sin(a), np.zeros(n)], axis=1)
    return np.concatenate([ring - [0, 0, L / 2], ring + [0, 0, L / 2]])


def _box(size):
    return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * np.asarray(size) / 2


def _triangles(v):
    """A triangle soup (T, 3, 3) using every vertex of v (M, 3) (readers keep triangle corners)."""
    v = np.concatenate([v, v[: (-len(v)) % 3]])
    return v.reshape(-1, 3, 3)


def _write_stl(path, v):
    tri = _triangles(v)
    rec = np.zeros(len(tri), np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("x", "<u2")]))
    rec["v"] = tri
    with open(path, "wb") as fh:
        fh.write(b"\0" * 80 + np.uint32(len(tri)).tobytes() + rec.tobytes())


def _write_obj(path, v):
    tri = _triangles(v).reshape(-1, 3)
    faces = np.arange(len(tri)).reshape(-1, 3) + 1
    path.write_text(
        "".join(f"v {x:.17g} {y:.17g} {z:.17g}\n" for x, y, z in tri) + "".join(f"f {a} {b} {c}\n" for a, b, c in faces)
    )


def _rotation(seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


def _inside(points, a, b, r, tol=1e-9):
    return np.max(meshes._segment_distance(np.asarray(points), np.asarray(a), np.asarray(b))) <= r + tol


# ---- the capsule ----------------------------------------------------------------------------
def test_capsule_of_a_cylinder_is_the_minimum_volume_one():
    # For a cylinder the best capsule is on its axis (symmetry); over the radius r >= R its
    # volume is pi r^2 (L - 2 sqrt(r^2 - R^2)) + 4/3 pi r^3 (caps reaching the rims): the 1-D optimum.
    vol = lambda r: np.pi * r**2 * max(L - 2 * np.sqrt(max(r * r - R * R, 0.0)), 0.0) + 4 / 3 * np.pi * r**3
    best = minimize_scalar(vol, bounds=(R, np.hypot(R, L / 2)), method="bounded", options={"xatol": 1e-10})
    Rm, p = _rotation(3), np.array([0.3, -0.1, 0.7])
    pts = _cylinder() @ Rm.T + p  # posed anywhere
    a, b, r = meshes.fit_capsule(pts)
    assert _inside(pts, a, b, r)
    # The 48-gon's circumscribed circle is R: the optimum is the cylinder's.
    found = np.pi * r * r * np.linalg.norm(b - a) + 4 / 3 * np.pi * r**3
    assert found <= best.fun * (1 + 1e-3)
    assert R <= r <= 1.05 * R
    axis = (b - a) / np.linalg.norm(b - a)
    assert abs(axis @ Rm[:, 2]) > 1 - 1e-6
    assert np.allclose(0.5 * (a + b), p, atol=1e-6)


def test_capsule_holds_every_vertex_and_beats_the_principal_axis():
    # A box and an L-shaped cloud: every point inside, and no larger than the principal-axis
    # capsule (the starting point, Eberly's bounding capsule).
    rng = np.random.default_rng(0)
    clouds = [
        _box([0.1, 0.08, 0.5]) @ _rotation(1).T,
        np.concatenate([rng.normal(size=(200, 3)) * [0.2, 0.03, 0.03], rng.normal(size=(60, 3)) * [0.03, 0.1, 0.03]]),
    ]
    for pts in clouds:
        a, b, r = meshes.fit_capsule(pts)
        assert _inside(pts, a, b, r)
        V = pts - pts.mean(axis=0)
        pca = meshes._capsule_along(V, np.linalg.svd(V)[2][0])[0]
        assert np.pi * r * r * np.linalg.norm(b - a) + 4 / 3 * np.pi * r**3 <= pca * (1 + 1e-9)
    # The box: r is at least the cross-section's half diagonal (its long edges lie on that circle).
    a, b, r = meshes.fit_capsule(clouds[0])
    assert np.hypot(0.05, 0.04) - 1e-9 <= r <= 1.1 * np.hypot(0.05, 0.04)


def test_capsule_error_is_the_volume_ratio_and_hausdorff_distance():
    n = 64
    pts = _cylinder(n)
    a, b, r = np.array([0, 0, -L / 2]), np.array([0, 0, L / 2]), R
    ratio, excess = meshes.capsule_error(pts, a, b, r)
    prism = 0.5 * n * R * R * np.sin(2 * np.pi / n) * L  # the hull: a 64-gon prism
    assert ratio == pytest.approx((np.pi * R * R * L + 4 / 3 * np.pi * R**3) / prism, rel=1e-9)
    # The caps' poles stick out R beyond the flat ends (the farthest capsule points from the hull).
    assert excess == pytest.approx(R, rel=1e-6)
    # A flat mesh has no volume: the ratio is infinite, the excess finite.
    ratio, excess = meshes.capsule_error(_cylinder(n, L=0.0)[:n], np.zeros(3), np.zeros(3), R)
    assert ratio == np.inf and excess == pytest.approx(R, rel=1e-6)


# ---- reading -------------------------------------------------------------------------------
def test_reads_stl_obj_and_dae(tmp_path):
    v = _cylinder(12)
    _write_stl(tmp_path / "c.stl", v)
    got = meshes.read_mesh(tmp_path / "c.stl")
    assert np.allclose(np.unique(got.round(6), axis=0), np.unique(v.round(6), axis=0), atol=1e-7)  # float32
    trimesh = pytest.importorskip("trimesh")
    _write_obj(tmp_path / "c.obj", v)
    assert np.allclose(np.unique(meshes.read_mesh(tmp_path / "c.obj").round(9), axis=0), np.unique(v.round(9), axis=0))
    pytest.importorskip("collada")
    box = trimesh.creation.box([0.1, 0.2, 0.3])
    box.export(tmp_path / "b.dae")
    assert np.allclose(np.ptp(meshes.read_mesh(tmp_path / "b.dae"), axis=0), [0.1, 0.2, 0.3])
    # A COLLADA file in millimetres (<unit meter="0.001"/>) is read in metres.
    text = (tmp_path / "b.dae").read_text()
    (tmp_path / "mm.dae").write_text(text.replace("<asset>", '<asset><unit name="millimeter" meter="0.001"/>', 1))
    assert np.allclose(np.ptp(meshes.read_mesh(tmp_path / "mm.dae"), axis=0), [1e-4, 2e-4, 3e-4])


def test_unreadable_meshes_say_why(tmp_path, monkeypatch):
    (tmp_path / "x.ply").write_text("ply\n")
    with pytest.raises(meshes.MeshError, match="format '.ply' not read") as e:
        meshes.read_mesh(tmp_path / "x.ply")
    assert e.value.kind == "format"
    _write_obj(tmp_path / "c.obj", _cylinder(8))
    _write_stl(tmp_path / "c.stl", _cylinder(8))
    monkeypatch.setitem(sys.modules, "trimesh", None)  # trimesh not installed
    with pytest.raises(meshes.MeshError, match=r"pip install 'jaxid\[mesh\]'") as e:
        meshes.read_mesh(tmp_path / "c.obj")
    assert e.value.kind == "reader"
    assert len(np.unique(meshes.read_mesh(tmp_path / "c.stl"), axis=0)) == 16  # STL without trimesh


# ---- resolution ----------------------------------------------------------------------------
@pytest.fixture
def no_ros_env(monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    meshes._FOUND.clear()


def _package(root, name="my_arm"):
    """A ROS package root/.../name with package.xml and meshes/link.stl; returns its folder."""
    pkg = root / name
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "package.xml").write_text(f"<package format='3'><name>{name}</name></package>")
    _write_stl(pkg / "meshes" / "link.stl", _cylinder(12))
    return pkg


def test_package_urls_resolve_by_each_route(tmp_path, monkeypatch, no_ros_env):
    urdf = tmp_path / "elsewhere" / "arm.urdf"
    urdf.parent.mkdir()
    url = "package://my_arm/meshes/link.stl"
    with pytest.raises(meshes.MeshError, match="package 'my_arm' not found") as e:
        meshes.resolve_mesh(url, urdf)
    assert e.value.kind == "package"
    # --package-dir: a folder of packages, found by crawling (a colcon workspace's src/group/pkg) ...
    ws = _package(tmp_path / "ws" / "src" / "group")
    assert meshes.resolve_mesh(url, urdf, [tmp_path / "ws"]) == str(ws / "meshes" / "link.stl")
    # ... or the package itself, found by its package.xml whatever the folder's name
    renamed = tmp_path / "checkout"
    ws.rename(renamed)
    assert meshes.find_package("my_arm", urdf, [renamed]) == (str(renamed), f"--package-dir {renamed}")
    # ROS_PACKAGE_PATH (ROS 1), after --package-dir
    ros1 = _package(tmp_path / "ros1")
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path / 'nothing'}:{tmp_path / 'ros1'}")
    assert meshes.find_package("my_arm", urdf) == (str(ros1), f"ROS_PACKAGE_PATH {tmp_path / 'ros1'}")
    assert meshes.find_package("my_arm", urdf, [renamed])[0] == str(renamed)
    # a folder named as the package whose package.xml names another (example-robot-data's)
    odd = _package(tmp_path / "share", "my_arm")
    (odd / "package.xml").write_text("<package format='3'><name>my_arm_descriptions</name></package>")
    assert meshes.find_package("my_arm", urdf, [tmp_path / "share"])[0] == str(odd)
    # the ament index (ROS 2): <prefix>/share/<pkg>, after ROS_PACKAGE_PATH
    monkeypatch.delenv("ROS_PACKAGE_PATH")
    share = _package(tmp_path / "install" / "share")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "install"))
    assert meshes.resolve_mesh(url, urdf) == str(share / "meshes" / "link.stl")
    monkeypatch.delenv("AMENT_PREFIX_PATH")
    # the URDF's own folders: my_arm/urdf/arm.urdf inside the package
    inner = _package(tmp_path / "src")
    (inner / "urdf").mkdir()
    assert meshes.resolve_mesh(url, inner / "urdf" / "arm.urdf") == str(inner / "meshes" / "link.stl")
    # a package without the file, file:// and relative names
    with pytest.raises(meshes.MeshError, match="has no meshes/nope.stl") as e:
        meshes.resolve_mesh("package://my_arm/meshes/nope.stl", inner / "urdf" / "arm.urdf")
    assert e.value.kind == "file"
    stl = inner / "meshes" / "link.stl"
    assert meshes.resolve_mesh(f"file://{stl}", urdf) == str(stl)
    assert meshes.resolve_mesh("../meshes/link.stl", inner / "urdf" / "arm.urdf").endswith("meshes/link.stl")


# ---- the URDF --------------------------------------------------------------------------------
INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'


def _urdf(path, l1, l2):
    """A two-joint arm whose links carry the geometry elements l1 and l2."""
    path.write_text(f"""<robot name="arm">
      <link name="base"/>
      <link name="l1">{INERTIAL}{l1}</link>
      <link name="l2">{INERTIAL}{l2}</link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
        <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
      <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.5"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
    </robot>""")
    return path


def test_urdf_mesh_capsules_with_scale_origin_and_visual(tmp_path, no_ros_env):
    pytest.importorskip("trimesh")  # the OBJ
    pkg = _package(tmp_path / "pkgs")
    _write_obj(pkg / "meshes" / "link.obj", _cylinder(24))
    mesh = lambda f, extra="": f'<geometry><mesh filename="package://my_arm/meshes/{f}"{extra}/></geometry>'
    scaled = mesh("link.stl", ' scale="2 2 0.5"')
    urdf = _urdf(
        tmp_path / "arm.urdf",
        f'<collision><origin xyz="0 0 0.25" rpy="0 0 0"/>{scaled}</collision>',
        # no collision element: the visual mesh (an OBJ) is used
        f'<visual><origin xyz="0.3 0 0" rpy="0 1.5707963267948966 0"/>{mesh("link.obj")}</visual>',
    )
    robot = jaxid.Robot.from_urdf(urdf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every mesh read: no fallback warning
        caps = geometry.from_urdf(urdf, robot, package_dirs=[tmp_path / "pkgs"], srdf=_srdf(tmp_path))
    assert caps.names == ("l1", "l2") and list(caps.link) == [0, 1]
    # l1: the 12-gon cylinder scaled to radius 0.1, length 0.2, raised 0.25 m.
    pts1 = _cylinder(12) * [2, 2, 0.5] + [0, 0, 0.25]
    assert _inside(pts1, caps.a[0], caps.b[0], caps.radius[0])
    assert 0.1 <= caps.radius[0] <= 0.105
    # l2: the 24-gon cylinder turned onto x and moved 0.3 m along it.
    pts2 = _cylinder(24)[:, [2, 1, 0]] * [1, 1, -1] + [0.3, 0, 0]
    assert _inside(pts2, caps.a[1], caps.b[1], caps.radius[1])
    assert abs(caps.a[1][0] - caps.b[1][0]) > 0.3 and R <= caps.radius[1] <= 1.05 * R
    fits = {f.link: f for f in caps.fits}
    assert set(fits) == {"l1", "l2"} and fits["l2"].mesh == "package://my_arm/meshes/link.obj"
    for k, f in enumerate(caps.fits):
        assert f.radius == caps.radius[k] and f.length == pytest.approx(np.linalg.norm(caps.b[k] - caps.a[k]))
        assert 1 < f.volume_ratio < 2 and 0 < f.excess < 2 * f.radius


def _srdf(tmp_path):
    (tmp_path / "arm.srdf").write_text("<robot name='arm'/>")
    return tmp_path / "arm.srdf"


def test_skeleton_fallback_names_links_reasons_and_fixes(tmp_path, no_ros_env):
    (tmp_path / "x.ply").write_text("ply\n")
    urdf = _urdf(
        tmp_path / "arm.urdf",
        '<collision><geometry><mesh filename="package://gone/l1.stl"/></geometry></collision>',
        '<collision><geometry><mesh filename="x.ply"/></geometry></collision>',
    )
    robot = jaxid.Robot.from_urdf(urdf)
    with pytest.warns(UserWarning) as rec:
        caps = geometry.from_urdf(urdf, robot, mesh_radius=0.03, srdf=_srdf(tmp_path))
    msg = str(rec[0].message)
    assert re.search(r"package 'gone' not found \(searched [^)]*\): l1\b", msg)
    assert re.search(r"mesh 'x.ply': format '.ply' not read \([^)]*\): l2\b", msg)
    assert "--capsule-radius" in msg and "--package-dir" in msg
    assert caps.names == ("l1", "l2") and np.all(caps.radius == 0.03) and caps.fits == ()
    # l1's skeleton capsule runs from its joint to the next one.
    assert np.allclose(caps.b[0], [0, 0, 0.5])


def test_package_dir_flag_is_checked():
    assert ModelSpec(urdf="a.urdf", package_dirs=(".",)).package_dirs == (".",)
    with pytest.raises(WorkflowError, match="needs --urdf"):
        ModelSpec(robot="ur5", package_dirs=(".",))
    with pytest.raises(WorkflowError, match="no such folder"):
        ModelSpec(urdf="a.urdf", package_dirs=("/no/such/dir",))
    from jaxid.cli import build_parser  # the flag reaches the request
    from jaxid.cli.common import model_spec

    args = build_parser().parse_args(
        ["excite", "--urdf", "a.urdf", "--package-dir", ".", "--package-dir", "/tmp", "--output", "o.csv"]
    )
    assert model_spec(args).package_dirs == (".", "/tmp")


def test_excite_constraints_resolve_through_package_dir(tmp_path, no_ros_env):
    from jaxid.workflow.commands.excite import excite_constraints
    from jaxid.workflow.requests import ExciteRequest

    _package(tmp_path / "pkgs")
    mesh = '<collision><geometry><mesh filename="package://my_arm/meshes/link.stl"/></geometry></collision>'
    urdf = _urdf(tmp_path / "arm.urdf", mesh, mesh)
    robot = jaxid.Robot.from_urdf(urdf)
    model = ModelSpec(urdf=str(urdf), package_dirs=(str(tmp_path / "pkgs"),))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cons, _ = excite_constraints(ExciteRequest(output="o.csv", model=model, srdf=str(_srdf(tmp_path))), robot)
    assert [f.link for f in cons.capsules.fits] == ["l1", "l2"]


def _example_robot_data():
    """share/ of example-robot-data's cmeel install (next to Pinocchio), or skip."""
    import os

    pin = pytest.importorskip("pinocchio")
    p = os.path.dirname(pin.__file__)
    while os.path.basename(p) != "cmeel.prefix" and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    share = os.path.join(p, "share")
    if not os.path.isfile(
        os.path.join(share, "example-robot-data", "robots", "ur_description", "urdf", "ur5_robot.urdf")
    ):
        pytest.skip("example-robot-data not installed")
    return pin, share


def test_ur5_mesh_vertices_lie_in_their_capsules_as_pinocchio_poses_them():
    # An independent oracle for the frames, origins and package lookup: Pinocchio resolves the
    # URDF's package:// names itself and coal reads the meshes; every vertex it places must be
    # inside the capsules jaxid puts on the same links.
    import os

    from jaxid.dynamics.rnea import forward_kinematics_rp

    pin, share = _example_robot_data()
    urdf = os.path.join(share, "example-robot-data", "robots", "ur_description", "urdf", "ur5_robot.urdf")
    robot = jaxid.Robot.from_urdf(urdf)
    srdf = os.path.join(os.path.dirname(urdf), "..", "srdf", "ur5.srdf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        caps = geometry.from_urdf(urdf, robot, srdf=srdf)  # found through the URDF's folders
    assert len(caps.fits) == 7
    model, geom = pin.buildModelsFromUrdf(urdf, [share], geometry_types=pin.GeometryType.COLLISION)
    data, gdata = model.createData(), pin.GeometryData(geom)
    assert list(model.names[1:]) == list(robot.names)
    checked = 0
    for q in np.random.default_rng(0).uniform(-np.pi, np.pi, (3, robot.n)):
        pin.forwardKinematics(model, data, q)
        pin.updateGeometryPlacements(model, data, geom, gdata)
        A, B = (np.asarray(x) for x in caps.world(*forward_kinematics_rp(robot, q)))
        for g, go in enumerate(geom.geometryObjects):
            if not hasattr(go.geometry, "vertices"):  # a primitive (the ee_link box): not a mesh
                continue
            k = caps.names.index(model.frames[go.parentFrame].name)
            M = gdata.oMg[g]
            X = np.asarray(go.geometry.vertices()) @ M.rotation.T + M.translation
            assert _inside(X, A[k], B[k], caps.radius[k], tol=1e-9)
            checked += 1
    assert checked == 3 * 7  # every mesh in every pose

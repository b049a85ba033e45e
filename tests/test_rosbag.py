"""ROS 2 bags (jaxid.rosbag, jaxid.data.read): bags written with rosbags' own Writer (sqlite3 and
MCAP) read back exactly (t to the ns, q, qd, tau), joints reordered by name, topics chosen or
refused with the bag's list, and every bad bag a one-line error."""

import sys

import numpy as np
import pytest

from jaxid import data, rosbag

rosbags = pytest.importorskip("rosbags")
from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

STORE = get_typestore(Stores.ROS2_HUMBLE)
JointState = STORE.types["sensor_msgs/msg/JointState"]
Header = STORE.types["std_msgs/msg/Header"]
Time = STORE.types["builtin_interfaces/msg/Time"]
Float64 = STORE.types["std_msgs/msg/Float64"]

NAMES = ["joint1", "joint2", "joint3"]  # the built-in planar3's joints, which the CLI tests fit
N = 300
EPOCH_NS = 1_712_345_678_901_234_567  # a Unix time in ns: a float64 holds it only to 256 ns
PLUGINS = [StoragePlugin.SQLITE3, StoragePlugin.MCAP]


def _motion(n=N, rate=500.0, seed=0):
    """Stamps (int ns, with sub-microsecond jitter as a real clock has), q, qd, tau (n, 3)."""
    rng = np.random.default_rng(seed)
    k = np.arange(n)
    ns = EPOCH_NS + np.round(k * 1e9 / rate).astype(np.int64) + rng.integers(-400, 400, n)
    t = k / rate
    phase = np.arange(3)
    q = np.sin(2 * np.pi * 0.5 * t[:, None] + phase)
    qd = np.pi * np.cos(2 * np.pi * 0.5 * t[:, None] + phase)
    tau = 3.0 * np.cos(2 * np.pi * 0.5 * t[:, None] + 2 * phase) + rng.normal(0, 0.1, (n, 3))
    return ns, q, qd, tau


def write_bag(
    path, plugin, ns, q, qd, tau, *, names=None, topic="/joint_states", receive=None, others=(), no_velocity=()
):
    """A rosbag2 bag at ``path`` (a directory) with one JointState per row; ``names`` per message
    (default NAMES; a permutation of them reorders that message's arrays), qd or tau None: empty
    fields (also qd in the messages ``no_velocity``), ``receive``: the bag's receive times
    (default the stamps + 1 ms), ``others``: extra topics (name, msgtype) with one message each."""
    with Writer(path, version=9, storage_plugin=plugin) as w:
        c = w.add_connection(topic, JointState.__msgtype__, typestore=STORE)
        extra = [(w.add_connection(name, kind, typestore=STORE), kind) for name, kind in others]
        for k in range(len(ns)):
            these = NAMES if names is None else names[k]
            perm = [NAMES.index(j) if j in NAMES else 0 for j in these]
            stamp = int(ns[k])
            msg = JointState(
                header=Header(stamp=Time(sec=stamp // 10**9, nanosec=stamp % 10**9), frame_id=""),
                name=list(these),
                position=np.asarray(q[k][perm], dtype=np.float64),
                velocity=np.asarray([] if qd is None or k in no_velocity else qd[k][perm], dtype=np.float64),
                effort=np.asarray([] if tau is None else tau[k][perm], dtype=np.float64),
            )
            at = int(ns[k]) + 1_000_000 if receive is None else int(receive[k])
            w.write(c, at, STORE.serialize_cdr(msg, JointState.__msgtype__))
        for conn, kind in extra:
            if kind == JointState.__msgtype__:
                msg = JointState(
                    header=Header(stamp=Time(sec=1, nanosec=0), frame_id=""),
                    name=["a"],
                    position=np.zeros(1),
                    velocity=np.zeros(0),
                    effort=np.zeros(1),
                )
            else:
                msg = Float64(data=1.0)
            w.write(conn, EPOCH_NS, STORE.serialize_cdr(msg, kind))
    return path


@pytest.fixture(scope="module")
def motion():
    return _motion()


@pytest.fixture(scope="module", params=PLUGINS, ids=lambda p: p.name.lower())
def bag(request, tmp_path_factory, motion):
    path = tmp_path_factory.mktemp(request.param.name.lower()) / "run_bag"
    return write_bag(path, request.param, *motion)


def _one_line(err):
    message = str(err.value)
    assert "\n" not in message, message
    return message


def test_round_trip_exact_in_t_to_the_ns_and_in_q_qd_tau(bag, motion):
    ns, q, qd, tau = motion
    ds = data.read(bag, derivatives=None)
    t = np.asarray(ds.t)
    assert t[0] == 0.0
    np.testing.assert_array_equal(np.round(t * 1e9).astype(np.int64), ns - ns[0])
    np.testing.assert_array_equal(np.asarray(ds.q), q)
    np.testing.assert_array_equal(np.asarray(ds.qd), qd)
    np.testing.assert_array_equal(np.asarray(ds.tau), tau)
    assert f"joints: names {', '.join(NAMES)}" in ds.notes
    assert any("header.stamp in integer ns, 0 at 1712345678.901234" in x for x in ds.notes), ds.notes


def test_the_storage_file_alone_is_a_bag(bag, motion):
    (storage,) = [p for p in bag.iterdir() if p.suffix in (".db3", ".mcap")]
    ds = data.read(storage, derivatives=None)
    np.testing.assert_array_equal(np.asarray(ds.tau), motion[3])


def test_reader_gives_names_and_int_stamps(bag, motion):
    js = rosbag.read_joint_states(bag)
    assert js.topic == "/joint_states" and js.names == tuple(NAMES) and js.stamps == "header"
    assert js.stamps_ns.dtype == np.int64
    np.testing.assert_array_equal(js.stamps_ns, motion[0])


def test_messages_listing_joints_in_another_order_are_reordered(tmp_path, motion):
    ns, q, qd, tau = motion
    rng = np.random.default_rng(3)
    names = [list(NAMES) if k == 0 else list(rng.permutation(NAMES)) for k in range(N)]
    path = write_bag(tmp_path / "shuffled", StoragePlugin.MCAP, ns, q, qd, tau, names=names)
    ds = data.read(path, derivatives=None)
    np.testing.assert_array_equal(np.asarray(ds.q), q)
    np.testing.assert_array_equal(np.asarray(ds.qd), qd)
    np.testing.assert_array_equal(np.asarray(ds.tau), tau)


def test_joints_are_put_in_the_models_order_by_their_names(tmp_path, motion):
    ns, q, qd, tau = motion
    first = ["joint3", "joint1", "joint2"]  # the driver's order, not the model's
    path = write_bag(tmp_path / "driver_order", StoragePlugin.SQLITE3, ns, q, qd, tau, names=[first] * N)
    raw = data.read(path, derivatives=None)  # no model: the messages' own order
    np.testing.assert_array_equal(np.asarray(raw.q), q[:, [2, 0, 1]])
    ds = data.read(path, derivatives=None, joint_names=("joint1", "joint2", "joint3"))
    np.testing.assert_array_equal(np.asarray(ds.q), q)
    np.testing.assert_array_equal(np.asarray(ds.qd), qd)
    np.testing.assert_array_equal(np.asarray(ds.tau), tau)
    with pytest.raises(data.DatasetError) as err:
        data.read(path, derivatives=None, joint_names=("shoulder", "elbow", "wrist"))
    message = _one_line(err)
    assert "joint3, joint1, joint2" in message and "shoulder, elbow, wrist" in message, message


def test_zero_header_stamps_fall_back_to_receive_time(tmp_path, motion):
    _, q, qd, tau = motion
    receive = EPOCH_NS + np.arange(N, dtype=np.int64) * 2_000_000  # 500 Hz, exact
    path = write_bag(tmp_path / "nostamp", StoragePlugin.SQLITE3, np.zeros(N, np.int64), q, qd, tau, receive=receive)
    ds = data.read(path)  # regular receive times: the positions are differentiated without --resample
    np.testing.assert_allclose(np.asarray(ds.t), np.arange(N) * 2e-3, rtol=0, atol=1e-15)
    assert any("receive times" in x and f"{N} of {N} header stamps are zero" in x for x in ds.notes), ds.notes
    assert ds.derivatives == "butterworth"


def test_window_and_velocity_missing_in_some_messages(tmp_path, motion):
    ns, q, qd, tau = motion
    path = write_bag(tmp_path / "partial_qd", StoragePlugin.SQLITE3, ns, q, qd, tau, no_velocity={5, 9})
    ds = data.read(path, derivatives=None, window="0.1:0.3")
    assert ds.qd is None
    assert f"qd: left out, 2 of {N} messages carry no velocity" in ds.notes
    t = np.asarray(ds.t)
    assert 0.1 - 2e-6 <= t[0] < 0.1 + 2e-3 and 0.3 - 2e-3 < t[-1] <= 0.3 + 2e-6
    k0 = int(np.argmin(np.abs((ns - ns[0]) / 1e9 - t[0])))
    np.testing.assert_array_equal(np.asarray(ds.q), q[k0 : k0 + len(ds)])


def test_topic_choice(tmp_path, motion):
    ns, q, qd, tau = motion
    kind = JointState.__msgtype__
    several = write_bag(
        tmp_path / "several", StoragePlugin.MCAP, ns, q, qd, tau, others=[("/gripper/joint_states", kind)]
    )
    assert data.read(several, derivatives=None).n == 3  # /joint_states among several
    other = write_bag(
        tmp_path / "named",
        StoragePlugin.SQLITE3,
        ns,
        q,
        qd,
        tau,
        topic="/arm/joint_states",
        others=[("/hand/joint_states", kind), ("/temperature", "std_msgs/msg/Float64")],
    )
    with pytest.raises(data.DatasetError) as err:
        data.read(other)
    message = _one_line(err)
    assert "/arm/joint_states, /hand/joint_states" in message and "--topic" in message
    assert data.read(other, topic="/arm/joint_states", derivatives=None).n == 3
    with pytest.raises(data.DatasetError) as err:
        data.read(other, topic="/joint_state")
    message = _one_line(err)
    assert "no topic '/joint_state'" in message and "/temperature (std_msgs/msg/Float64)" in message
    with pytest.raises(data.DatasetError) as err:
        data.read(other, topic="/temperature")
    assert "holds std_msgs/msg/Float64" in _one_line(err)


def test_bad_bags_are_one_line_errors(tmp_path, motion):
    ns, q, qd, tau = motion
    no_effort = write_bag(tmp_path / "no_effort", StoragePlugin.MCAP, ns, q, qd, None)
    with pytest.raises(data.DatasetError) as err:
        data.read(no_effort)
    assert "message 0: the JointState has no effort" in _one_line(err)

    names = [NAMES[:2] + ["wrist_1_joint"] if k == 6 else NAMES for k in range(N)]
    with pytest.raises(data.DatasetError) as err:
        data.read(write_bag(tmp_path / "other_joints", StoragePlugin.SQLITE3, ns, q, qd, tau, names=names))
    message = _one_line(err)
    assert "message 6: joints" in message and "wrist_1_joint" in message and "joint1" in message

    with pytest.raises(data.DatasetError) as err:
        data.read(write_bag(tmp_path / "w", StoragePlugin.MCAP, ns, q, qd, tau), window="0.2:5")
    message = _one_line(err)
    assert "window 0.2:5 s reaches outside the log" in message and "0 to 0.598" in message

    empty = tmp_path / "empty_dir"
    empty.mkdir()
    with pytest.raises(data.DatasetError, match="no metadata.yaml"):
        data.read(empty)
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not a bag at all")
    with pytest.raises(data.DatasetError) as err:
        data.read(junk)
    assert "not a readable ROS 2 bag" in _one_line(err)
    with pytest.raises(data.DatasetError, match="columns are for CSV"):
        data.read(no_effort, columns="q=position")


def test_missing_rosbags_names_the_extra(bag, monkeypatch):
    monkeypatch.setitem(sys.modules, "rosbags.highlevel", None)
    with pytest.raises(data.DatasetError) as err:
        data.read(bag)
    assert "pip install 'jaxid[ros]'" in _one_line(err)


def test_the_cli_data_flags_reach_the_reader(bag, motion):
    from jaxid.models import planar
    from jaxid.workflow.commands.common import read_runs
    from jaxid.workflow.requests import DataSpec

    (ds,) = read_runs([bag], planar(3), DataSpec(topic="/joint_states", window=":0.4"), prepare=False)
    assert np.asarray(ds.t)[-1] <= 0.4 + 1e-9 and len(ds) < N


def test_cli_errors_on_bags_are_one_line(bag, tmp_path, capsys):
    from jaxid.cli import main

    def fails(flags, message):
        argv = ["identify", "--robot", "planar3", "-o", str(tmp_path / "p.json"), "--quiet", str(bag), *flags]
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert "Traceback" not in err and "\n" not in err and err.startswith("jaxid identify: "), err
        assert message in err, (message, err)

    fails(["--topic", "/nope"], "no topic '/nope'; the bag has: /joint_states (sensor_msgs/msg/JointState)")
    fails(["--window", "1:2"], "window 1:2 s reaches outside the log, which spans 0 to 0.598")
    fails(["--rate", "100"], "rate 100 Hz disagrees with the mean rate 500 Hz")
    fails(["--window", "2"], "--window '2' is not T0:T1")

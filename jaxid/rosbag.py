"""ROS 2 bags: the ``sensor_msgs/msg/JointState`` messages of one topic as arrays.

A rosbag2 recording is a directory with ``metadata.yaml`` and its storage files (``.db3``,
sqlite3, the default of ROS 2 Humble; ``.mcap``, the default from Iron on), or a single
``.mcap`` / ``.db3`` file. It is read with the maintained pure-Python ``rosbags`` library
(Ternaris; optional: ``pip install 'jaxid[ros]'``), which needs no ROS installation: message
definitions come from the bag (MCAP embeds them) or else from its ROS 2 Humble type store
(``sensor_msgs/JointState`` has not changed since ROS 2 began).

[`read_joint_states`][jaxid.rosbag.read_joint_states] returns a [`JointStates`][jaxid.rosbag.JointStates]: time stamps as int64 nanoseconds (the
messages' ``header.stamp``, ``sec * 10**9 + nanosec`` in integer arithmetic; when the publisher
left them zero, the bag's receive time, said so in ``notes``), ``position`` -> q (rad),
``velocity`` -> qd (rad/s; only when every message carries it for every joint), ``effort`` ->
tau (N m, required). Joints are named by the messages' ``name`` lists; a message that lists the
same joints in another order is reordered to the first message's order, one that lists other
joints is an error. [`jaxid.data.read`][jaxid.data.read] turns the result into a ``Dataset``.

Which topic ([`choose_topic`][jaxid.rosbag.choose_topic]): the one given; else the only JointState topic of the bag;
else ``/joint_states`` when it is one of several; else an error listing them.

Every problem raises [`BagError`][jaxid.rosbag.BagError] (a ``ValueError``) with one line naming the bag, the
topic, the message (0-based, in the bag's order) and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

JOINT_STATE = "sensor_msgs/msg/JointState"
"""The ROS 2 message type read."""

DEFAULT_TOPIC = "/joint_states"
"""The topic chosen among several JointState topics (ros2_control's joint_state_broadcaster,
robot_state_publisher's input)."""

_SUFFIXES = (".mcap", ".db3")


class BagError(ValueError):
    """A bag cannot be read as joint states; the message names the bag, topic and message."""


@dataclass(frozen=True)
class JointStates:
    """The joint states of one topic of a bag.

    topic: the topic read. names: the joints' names (n,), in the first message's order, the
    order of the columns of q, qd, tau. stamps_ns: time stamps (N,) int64, ns (the clock of
    the publisher: Unix time on a real robot, the simulation's clock in a simulator).
    stamps: "header" or "receive" (the bag's receive time, when the header stamps are zero).
    q: positions (N, n), rad. qd: velocities (N, n), rad/s, or None when not every message
    carries them. tau: efforts (N, n), N m. notes: what was done, one sentence each.
    """

    topic: str
    names: tuple[str, ...]
    stamps_ns: np.ndarray
    stamps: str
    q: np.ndarray
    qd: np.ndarray | None
    tau: np.ndarray
    notes: tuple[str, ...] = ()


def is_bag(path) -> bool:
    """Whether ``path`` is a rosbag2 recording: a directory with ``metadata.yaml``, or a
    ``.mcap`` / ``.db3`` file (by name; its content is checked on reading)."""
    path = Path(path)
    if path.is_dir():
        return (path / "metadata.yaml").is_file()
    return path.suffix.lower() in _SUFFIXES


def _listing(topics: dict[str, str]) -> str:
    return ", ".join(f"{name} ({kind})" for name, kind in sorted(topics.items())) or "none"


def choose_topic(topics: dict[str, str], topic: str | None, where: str = "bag") -> str:
    """The JointState topic to read among ``topics`` (name -> message type): ``topic`` when
    given, else the only JointState topic, else [`DEFAULT_TOPIC`][jaxid.rosbag.DEFAULT_TOPIC] among several. Raises
    BagError listing the topics (and ``--topic``) when none fits."""
    states = sorted(name for name, kind in topics.items() if kind == JOINT_STATE)
    if topic is not None:
        if topic not in topics:
            raise BagError(f"{where}: no topic {topic!r}; the bag has: {_listing(topics)}")
        if topics[topic] != JOINT_STATE:
            raise BagError(
                f"{where}: topic {topic} holds {topics[topic]}, not {JOINT_STATE}; "
                f"its JointState topics: {', '.join(states) or 'none'}"
            )
        return topic
    if len(states) == 1:
        return states[0]
    if DEFAULT_TOPIC in states:
        return DEFAULT_TOPIC
    if not states:
        raise BagError(
            f"{where}: no {JOINT_STATE} topic; the bag has: {_listing(topics)}; record the joint states "
            f"(ros2 bag record {DEFAULT_TOPIC})"
        )
    raise BagError(
        f"{where}: several {JOINT_STATE} topics ({', '.join(states)}) and none is {DEFAULT_TOPIC}; "
        "choose one with topic=NAME (CLI --topic NAME)"
    )


def _open(path: Path):
    """An opened ``rosbags`` AnyReader of the bag (close it), or BagError."""
    try:
        from rosbags.highlevel import AnyReader
        from rosbags.typesys import Stores, get_typestore
    except ImportError:
        raise BagError(
            f"{path}: reading ROS 2 bags needs the rosbags package: pip install 'jaxid[ros]' "
            "(or pip install rosbags); or export the joint states to CSV"
        ) from None
    if path.is_dir() and not (path / "metadata.yaml").is_file():
        raise BagError(f"{path}: a directory without metadata.yaml is no rosbag2 bag; give the bag's directory")
    try:
        reader = AnyReader([path], default_typestore=get_typestore(Stores.ROS2_HUMBLE))
        reader.open()
    except Exception as e:  # rosbags raises its own errors, sqlite3's, yaml's, OSError: all "unreadable"
        raise BagError(f"{path}: not a readable ROS 2 bag ({type(e).__name__}: {e})") from None
    return reader


def read_joint_states(path, topic: str | None = None) -> JointStates:
    """The JointState messages of one topic of a rosbag2 bag (module docstring).

    path: bag directory (with metadata.yaml) or ``.mcap`` / ``.db3`` file. topic: the topic,
    or None to choose it ([`choose_topic`][jaxid.rosbag.choose_topic]).

    Returns [`JointStates`][jaxid.rosbag.JointStates] with N messages of n joints. Raises BagError (one line) for a
    missing ``rosbags``, an unreadable bag, an unknown topic (listing the bag's), no messages,
    a message without effort, a message whose arrays differ in length from its names, or one
    that lists other joints than the first message.
    """
    path = Path(path)
    if not path.exists():
        raise BagError(f"{path}: no such bag")
    reader = _open(path)
    try:
        topics = {c.topic: c.msgtype for c in reader.connections}
        name = choose_topic(topics, topic, str(path))
        where = f"{path}: topic {name}"
        connections = [c for c in reader.connections if c.topic == name]
        header_ns, receive_ns, q, qd, tau = [], [], [], [], []
        names: tuple[str, ...] | None = None
        order: dict[tuple[str, ...], np.ndarray] = {}  # a message's name list -> the columns in the first's order
        no_velocity = 0
        try:
            for k, (connection, received, raw) in enumerate(reader.messages(connections=connections)):
                msg = reader.deserialize(raw, connection.msgtype)
                these = tuple(msg.name)
                if names is None:
                    names = these
                    if len(set(names)) != len(names):
                        raise BagError(f"{where}, message 0: a joint is named twice in {list(names)}")
                    order[names] = np.arange(len(names))
                if these not in order:
                    if sorted(these) != sorted(names):
                        raise BagError(
                            f"{where}, message {k}: joints {list(these)} differ from message 0's {list(names)} "
                            "(several publishers on one topic?); record one robot's joint states per topic"
                        )
                    order[these] = np.array([these.index(j) for j in names])
                index = order[these]
                n = len(these)
                position, velocity, effort = (
                    np.asarray(a, dtype=np.float64) for a in (msg.position, msg.velocity, msg.effort)
                )
                if effort.size == 0:
                    raise BagError(
                        f"{where}, message {k}: the JointState has no effort (joint torques), which identification "
                        "needs; record a publisher that fills it (ros2_control's joint_state_broadcaster "
                        "does, from the hardware's effort interface)"
                    )
                for field, a in (("position", position), ("effort", effort)):
                    if a.size != n:
                        raise BagError(f"{where}, message {k}: {a.size} {field} values for {n} joint names")
                if velocity.size not in (0, n):
                    raise BagError(f"{where}, message {k}: {velocity.size} velocity values for {n} joint names")
                no_velocity += velocity.size == 0
                stamp = msg.header.stamp
                header_ns.append(int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec))
                receive_ns.append(int(received))
                q.append(position[index])
                tau.append(effort[index])
                qd.append(velocity[index] if velocity.size else None)
        except BagError:
            raise
        except Exception as e:  # a corrupt message or chunk
            raise BagError(f"{where}: a message cannot be read ({type(e).__name__}: {e})") from None
    finally:
        reader.close()
    if names is None:
        raise BagError(f"{where}: the topic has no messages")
    N = len(q)
    notes = [f"ROS 2 bag: {N} {JOINT_STATE} messages of topic {name}"]
    zero = sum(1 for s in header_ns if s == 0)
    if zero:
        # A publisher that never sets header.stamp (some drivers, hand-written nodes): the bag's
        # receive time is the only clock left; it carries the transport's delay and jitter.
        stamps, chosen = "receive", receive_ns
        notes.append(f"t: the bag's receive times, since {zero} of {N} header stamps are zero")
    else:
        stamps, chosen = "header", header_ns
    velocities = None
    if no_velocity == 0:
        velocities = np.stack([v for v in qd if v is not None])
    elif no_velocity < N:
        notes.append(f"qd: left out, {no_velocity} of {N} messages carry no velocity")
    return JointStates(
        topic=name,
        names=names,
        stamps_ns=np.asarray(chosen, dtype=np.int64),
        stamps=stamps,
        q=np.stack(q),
        qd=velocities,
        tau=np.stack(tau),
        notes=tuple(notes),
    )

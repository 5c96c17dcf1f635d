"""The pose library SMPL-IK's alternatives start from: a pose is found by its pins, turned and
placed where they put it; the poses kept differ; without position pins the network's pose gives
heading and place; `sample` alternates the head's poses and the library's; the natural pose starts halfway to
the poses nearest its pins; bad files are refused."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import measured_effector_errors

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX, PARENTS
from models.ik.effectors import Effector
from models.ik.library import MIN_APART, PoseLibrary
from models.ik.nn import save_weights
from models.ik.options import SampleOptions, SolveOptions
from models.ik.smplik import SmplIk

ROOT = Path(__file__).resolve().parents[2]


def random_poses(rng, n=60):
    """Poses with every joint turned up to about 0.4 rad, the root up to 0.3 (a person upright)."""
    poses = rng.normal(scale=0.25, size=(n, 24, 3))
    poses[:, 0] *= 0.5
    return poses


def turned(yaw_deg):
    a = np.radians(yaw_deg)
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])


def pins_of(local, trans, rest):
    """Position pins on the pelvis, a wrist, an ankle and the head, a rotation pin on the other
    wrist and a look-at of the head's +Z axis, all met by the pose."""
    fk = forward_kinematics(local, rest, PARENTS, trans)
    p, w = fk.positions, fk.rotations
    head = JOINT_INDEX["head"]
    return [Effector("pelvis", "position", tuple(p[0])),
            Effector("left_wrist", "position", tuple(p[JOINT_INDEX["left_wrist"]])),
            Effector("right_ankle", "position", tuple(p[JOINT_INDEX["right_ankle"]])),
            Effector("head", "position", tuple(p[head])),
            Effector("right_wrist", "rotation", w[JOINT_INDEX["right_wrist"]]),
            Effector("head", "look_at", tuple(p[head] + 0.8 * w[head][:, 2]), axis=(0, 0, 1))]


def test_a_library_pose_is_found_turned_and_placed_by_its_pins(open_body, rng):
    """Pins taken from library pose 17 turned 70 degrees about the vertical and moved: the
    first start is that pose so turned, and it meets every pin."""
    rest = open_body.rest_joints(np.zeros(10))
    poses = random_poses(rng)
    library = PoseLibrary(poses)
    local = axis_angle_to_matrix(poses[17])
    local[0] = turned(70) @ local[0]
    trans = np.array([0.3, 0.1, -1.2])
    effectors = pins_of(local, trans, rest)
    ref = (np.eye(3), np.zeros(3))
    starts, places = library.starts(effectors, rest, 4, ref)
    assert len(starts) == 4 and places.shape == (4, 3)
    # (the library's joints are placed in float32: micrometres)
    assert np.abs(starts[0] - local).max() < 1e-6
    assert np.abs(places[0] - trans).max() < 1e-6
    assert measured_effector_errors(effectors, starts[0], places[0], rest).max() < 1e-6
    # the next ones meet them worse
    later = [measured_effector_errors(effectors, s, t, rest)[:4].mean() for s, t in zip(starts[1:], places[1:])]
    assert min(later) > 0.01


def test_the_poses_kept_differ(open_body, rng):
    """A library holding one pose four times (and once moved by millimetres) gives it once; every
    two poses it gives are MIN_APART apart; asking for more than it holds gives what it holds."""
    rest = open_body.rest_joints(np.zeros(10))
    poses = random_poses(rng, 5)
    near = poses[2] + rng.normal(scale=0.002, size=(24, 3))
    library = PoseLibrary(np.concatenate([poses, poses[[2, 2, 2]], near[None]]))
    effectors = pins_of(axis_angle_to_matrix(poses[2]), np.zeros(3), rest)[:3]
    starts, places = library.starts(effectors, rest, 10, (np.eye(3), np.zeros(3)))
    assert len(starts) == 5
    pos = forward_kinematics(starts, np.broadcast_to(rest, (5, 24, 3)), PARENTS).positions
    pos -= pos[:, :1]
    apart = [np.linalg.norm(pos[i] - pos[j], axis=-1).mean() for i in range(5) for j in range(i)]
    assert min(apart) >= MIN_APART


def test_without_position_pins_the_network_pose_gives_heading_and_place(open_body, rng):
    """Only rotation pins: each start faces the reference root's heading and stands on its pelvis."""
    rest = open_body.rest_joints(np.zeros(10))
    poses = random_poses(rng)
    library = PoseLibrary(poses)
    pose = axis_angle_to_matrix(poses[5])
    world = forward_kinematics(pose, rest, PARENTS).rotations
    effectors = [Effector("left_wrist", "rotation", world[JOINT_INDEX["left_wrist"]]),
                 Effector("right_elbow", "rotation", world[JOINT_INDEX["right_elbow"]])]
    reference = (turned(-120), np.array([1.0, 0.95, 2.0]))
    starts, places = library.starts(effectors, rest, 3, reference)
    assert len(starts) == 3
    for s, t in zip(starts, places):
        facing = s[0][:, 2]
        assert np.degrees(np.arctan2(facing[0], facing[2])) == pytest.approx(-120, abs=1e-6)
        assert np.abs(t + rest[0] - reference[1]).max() < 1e-6


def test_sample_alternates_the_heads_poses_and_the_librarys(open_body, rng, tmp_path):
    """spread "mixed" (the default with a head and a library): unrefined, the head's poses at
    0, 2, 4, the library's best at 1, 3, 5, each where its pins place it; at temperature 0 all
    the natural pose; refined, every pin met."""
    rest = open_body.rest_joints(np.zeros(10))
    poses = random_poses(rng)
    path = tmp_path / "library.npz"
    save_weights(path, {"poses": poses.astype(np.float32)}, {"arch": "pose-library-v1", "count": len(poses)})
    net = SmplIk.load(library_path=path)
    local = axis_angle_to_matrix(poses.astype(np.float32).astype(np.float64)[30])
    effectors = pins_of(local, np.array([0.0, 0.05, 0.4]), rest)[:4]
    mixed = net.sample(effectors, rest, SampleOptions(count=6, refine=None))
    head = net.sample(effectors, rest, SampleOptions(count=3, refine=None, spread="hypotheses"))
    library = net.sample(effectors, rest, SampleOptions(count=3, refine=None, spread="library"))
    starts, places = net.library.starts(effectors, rest, 3, (np.eye(3), np.zeros(3)))
    for k in range(3):
        assert np.abs(mixed[2 * k].local_rot - head[k].local_rot).max() < 1e-9
        assert np.abs(mixed[2 * k + 1].local_rot - library[k].local_rot).max() < 1e-9
        assert np.abs(library[k].local_rot - starts[k]).max() < 1e-4      # through the flow and back
        assert np.abs(library[k].trans - places[k]).max() < 1e-9
    natural = net.solve(effectors, rest, SolveOptions(mode="natural", refine=None))
    # the natural pose, as it stands
    for zero in net.sample(effectors, rest, SampleOptions(count=4, refine=None, temperature=0)):
        assert (np.abs(zero.local_rot - natural.local_rot).max() < 1e-9
                and np.abs(zero.trans - natural.trans).max() < 1e-9)
    for sample in net.sample(effectors, rest, SampleOptions(count=4)):
        assert measured_effector_errors(effectors, sample.local_rot, sample.trans, rest).max() < 1e-3


def test_the_natural_pose_starts_halfway_to_the_library_poses_nearest_its_pins(open_body, rng, tmp_path):
    """A library holding pose 30 eight times among random ones: the natural solve's start is
    the geodesic midpoint, joint by joint, of the flow's origin and that pose turned and placed
    by the pins (the mean of the eight), its translation halfway; without a library it is the
    origin. Refined from there every pin is met, and the pose lands nearer the pins' own pose
    than the library-less natural pose does."""
    from models.core.rotations import geodesic_angle
    from models.ik.effectors import encode_effectors

    rest = open_body.rest_joints(np.zeros(10))
    poses = random_poses(rng).astype(np.float32).astype(np.float64)
    poses[52:60] = poses[30]
    path = tmp_path / "library.npz"
    save_weights(path, {"poses": poses.astype(np.float32)}, {"arch": "pose-library-v1", "count": len(poses)})
    with_library, without = SmplIk.load(library_path=path), SmplIk.load(library_path=None)
    local = axis_angle_to_matrix(poses[30])
    local[0] = turned(-40) @ local[0]
    trans = np.array([0.2, 0.05, 0.6])
    effectors = pins_of(local, trans, rest)[:4]
    condition = with_library.condition(encode_effectors(effectors), rest[None])
    origin = with_library.decoded_pose(condition, np.zeros(72))
    start = with_library.natural_start(condition, effectors, rest)
    there = with_library.library.starts(effectors, rest, 1, (np.eye(3), np.zeros(3)))
    assert np.abs(there[0][0] - local).max() < 1e-6 and np.abs(there[1][0] - trans).max() < 1e-6
    halfway = geodesic_angle(origin[0], local) / 2
    assert halfway.max() > 0.1   # the origin is not the pose itself
    assert np.abs(geodesic_angle(start[0], origin[0]) - halfway).max() < 1e-6
    assert np.abs(geodesic_angle(start[0], local) - halfway).max() < 1e-6
    assert np.abs(start[1] - (origin[1] + trans) / 2).max() < 1e-6
    plain = without.natural_start(condition, effectors, rest)
    assert np.abs(plain[0] - origin[0]).max() < 1e-12 and np.abs(plain[1] - origin[1]).max() < 1e-12
    truth = forward_kinematics(local, rest, PARENTS, trans).positions
    solved = {}
    for name, net in (("library", with_library), ("origin", without)):
        solution = net.solve(effectors, rest, SolveOptions(mode="natural"))
        assert measured_effector_errors(effectors, solution.local_rot, solution.trans, rest).max() < 1e-3
        solved[name] = np.linalg.norm(solution.positions - truth, axis=-1).mean()
    assert solved["library"] < solved["origin"]


def test_bad_library_files_are_refused_and_a_missing_one_named(tmp_path, open_body):
    wrong = tmp_path / "wrong.npz"
    save_weights(wrong, {"poses": np.zeros((5, 23, 3), np.float32)}, {"arch": "pose-library-v1", "count": 5})
    with pytest.raises(SmplIkError, match="wrong.npz.*wrong shape"):
        PoseLibrary.load(wrong)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, __config__=np.array(json.dumps({"arch": "pose-library-v1", "count": 1})),
             poses=np.array([{"a": 1}], dtype=object))
    with pytest.raises(SmplIkError, match="pickled.npz"):
        PoseLibrary.load(pickled)
    net = SmplIk.load(library_path=tmp_path / "missing.npz")
    with pytest.raises(SmplIkError, match="no pose library"):
        net.sample([Effector("pelvis", "position", (0, 0.9, 0))], open_body.rest_joints(np.zeros(10)),
                   SampleOptions(spread="library"))


def test_the_build_script_leaves_the_held_out_clips_out(tmp_path, rng):
    """scripts/build_pose_library.py on a small pose file: every second pose of the clips not
    held out, a JSON record naming them and their licence."""
    pytest.importorskip("torch")   # the script reads the training file as the trainers do
    from models.training.clips import VALIDATION_CLIPS

    held = sorted(VALIDATION_CLIPS)[0]
    names = ["a.bvh", held, "b.bvh"]
    poses = rng.normal(scale=0.2, size=(30, 72)).astype(np.float32)
    data = tmp_path / "poses.npz"
    np.savez(data, poses=poses, clip=np.repeat(np.arange(3), 10).astype(np.int32), clips=np.array(names))
    out = tmp_path / "lib.npz"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_pose_library.py"), "--data", str(data),
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    library = PoseLibrary.load(out)
    want = np.concatenate([poses[:10], poses[20:]])[::2].reshape(-1, 24, 3)
    assert np.abs(library.local - axis_angle_to_matrix(want.astype(np.float16).astype(np.float64))).max() < 1e-6
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["train_clips"] == ["a.bvh", "b.bvh"] and "mocap.cs.cmu.edu" in record["licence"]

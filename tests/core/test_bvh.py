"""BVH reading and writing: channel orders, layouts, malformed files."""
import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from models.motion.bvh import END_SITE_SUFFIX, Skeleton, read_bvh, write_bvh
from models.core.errors import SmplIkError
from models.core.rotations import geodesic_angle

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "mocap"

HANDMADE = """HIERARCHY
ROOT Hips
{
\tOFFSET 0 0 0
\tCHANNELS 3 Yrotation Xrotation Zrotation
\tJOINT Left Up Leg
\t{
\t\tOFFSET 1 0 0
\t\tCHANNELS 6 Xposition Yposition Zposition Xrotation Yrotation Zrotation
\t\tEnd Site
\t\t{
\t\t\tOFFSET 0 -2 0
\t\t}
\t}
\tJOINT Spine {
\t\tOFFSET 0 1.5 0
\t\tCHANNELS 1 Zrotation
\t}
}
MOTION
Frames: 2
Frame Time: 0.04
0 0 0   1 0 0 0 0 0   0
90 0 0   2 0 0 0 0 90   45
"""


def write(tmp_path, text, name="clip.bvh", newline="\n"):
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode())
    return path


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_handmade_layout(tmp_path, newline):
    m = read_bvh(write(tmp_path, HANDMADE, newline=newline))
    sk = m.skeleton
    assert sk.names == ("Hips", "Left Up Leg", "Left Up Leg" + END_SITE_SUFFIX, "Spine")
    assert sk.parents == (-1, 0, 1, 0) and sk.end_site == (False, False, True, False)
    assert sk.channels[0] == ("Yrotation", "Xrotation", "Zrotation") and sk.channels[3] == ("Zrotation",)
    assert m.values.shape == (2, 10) and np.isclose(m.fps, 25.0)
    fk = m.forward()
    # frame 0: root without position channels stays at its offset; the leg's position
    # channels replace its OFFSET
    assert np.allclose(fk.positions[0], [[0, 0, 0], [1, 0, 0], [1, -2, 0], [0, 1.5, 0]])
    # frame 1: root yaw 90 deg about Y turns +X into -Z; the leg's own 90 deg about Z
    # turns its End Site (0, -2, 0) into (2, 0, 0) before the yaw
    assert np.allclose(fk.positions[1, 1], [0, 0, -2])
    assert np.allclose(fk.positions[1, 2], [0, 0, -4])
    assert np.allclose(fk.positions[1, 3], [0, 1.5, 0])


@pytest.mark.parametrize("order", ["".join(p) for p in itertools.permutations("XYZ")])
def test_channel_order_is_intrinsic_euler(tmp_path, order):
    """Three turns at once, so the order matters: scipy's upper-case (intrinsic) convention is
    the outside reference; the extrinsic reading of the same angles must differ."""
    angles = [37.0, -52.0, 71.0]
    text = HANDMADE.replace("CHANNELS 3 Yrotation Xrotation Zrotation",
                            "CHANNELS 3 " + " ".join(a + "rotation" for a in order))
    text = text.replace("90 0 0   2 0 0", " ".join(map(str, angles)) + "   2 0 0")
    m = read_bvh(write(tmp_path, text))
    intrinsic = Rotation.from_euler(order, angles, degrees=True).as_matrix()
    extrinsic = Rotation.from_euler(order.lower(), angles, degrees=True).as_matrix()
    assert np.allclose(m.local_rotations()[1, 0], intrinsic, atol=1e-12)
    # the extrinsic reading composes the same turns in the opposite order; turns of 0.65, 0.91
    # and 1.24 rad about three axes fail to commute by about their products (0.6-1.1 rad), so a
    # reader that took them extrinsically would be off by far more than 30 degrees
    assert np.degrees(geodesic_angle(m.local_rotations()[1, 0], extrinsic)) > 30.0


def test_write_read_round_trip(tmp_path, rng):
    parents = (-1, 0, 1, 1, 0, 4)
    end = (False, False, False, True, False, True)
    sk = Skeleton(names=("root", "a", "b", "b_end", "c", "c_end"), parents=parents,
                  offsets=rng.normal(size=(6, 3)), channels=((),) * 6, end_site=end)
    rot = Rotation.random(5 * 6, random_state=3).as_matrix().reshape(5, 6, 3, 3)
    root = rng.normal(size=(5, 3))
    for order in ("ZXY", "XYZ", "YZX"):
        path = tmp_path / f"rt_{order}.bvh"
        write_bvh(path, sk, rot, root, 1 / 30, rotation_order=order)
        back = read_bvh(path)
        joints = [j for j in range(6) if not end[j]]
        assert np.allclose(back.local_rotations()[:, joints], rot[:, joints], atol=1e-6)
        # positions through FK agree too, End Sites included: each joint sits at its parent's
        # position plus the parent's world rotation applied to its OFFSET
        fk = back.forward()
        assert np.allclose(fk.positions[:, 0], root, atol=1e-6)
        world, pos = [rot[:, 0]], [root]
        for j in range(1, 6):
            p = parents[j]
            pos.append(pos[p] + np.einsum("tab,b->ta", world[p], sk.offsets[j]))
            world.append(world[p] @ rot[:, j] if not end[j] else world[p])
        assert np.allclose(fk.positions, np.stack(pos, 1), atol=1e-6)
        assert np.allclose(fk.positions[:, [3, 5]], np.stack(pos, 1)[:, [3, 5]], atol=1e-6)   # the End Sites
    assert not list(tmp_path.glob("*.partial"))


BAD = [
    (lambda t: t.rsplit("\n", 2)[0] + "\n", r"clip.bvh:\d+: truncated: the header says 2 frames but the file has 1"),
    (lambda t: t.replace("90 0 0   2 0 0", "90 0 0   2 0"), r"clip.bvh:24: expected 10 channel values, found 9"),
    (lambda t: t.replace("0 0 0 0 90   45", "0 0 0 0 nan   45"),
     r"clip.bvh:24: Left Up Leg Zrotation is nan in frame 1"),
    (lambda t: t.replace("90 0 0   2", "90 0 zero   2"), r"clip.bvh:24: 'zero' is not a number"),
    (lambda t: t.replace("CHANNELS 1 Zrotation", "CHANNELS 2 Zrotation"),
     r"clip.bvh:17: CHANNELS says 2 channels but lists 1"),
    (lambda t: t.replace("MOTION\n", ""), r"clip.bvh:\d+: unexpected 'Frames:' in the hierarchy"),
    (lambda t: t.replace("\t}\n}\nMOTION", "\t}\nMOTION"), r"clip.bvh:\d+: MOTION before the hierarchy is closed"),
    (lambda t: t.replace("OFFSET 1 0 0", "OFFSET 1 0"), r"clip.bvh:8: OFFSET needs 3 numbers, found 2"),
    (lambda t: t.replace("Frames: 2", "Frames: two"), r"clip.bvh:\d+: 'frames' is not a number"),
    (lambda t: "hello\n" + t, r"clip.bvh:1: not a BVH file"),
]


@pytest.mark.parametrize("corrupt,message", BAD)
def test_malformed_files_name_file_and_line(tmp_path, corrupt, message):
    with pytest.raises(SmplIkError, match=message):
        read_bvh(write(tmp_path, corrupt(HANDMADE)))


def test_unreadable_file(tmp_path):
    with pytest.raises(SmplIkError, match="nothere.bvh: cannot read"):
        read_bvh(tmp_path / "nothere.bvh")


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/mocap is not here (shared data)")
def test_shared_clips_read():
    for path in sorted(SHARED.glob("*/*.bvh")):
        m = read_bvh(path)
        header = int(path.read_text().split("Frames:")[1].split()[0])
        assert m.num_frames == header, path
        # the headers' rates (../shared/data/README.md): aclstm's salsa clips say 120 but are 60
        assert np.isclose(m.fps, 120 if path.parent.name in ("cmu_train", "aclstm") else 60, rtol=1e-3), path


# --- finding BVH files ------------------------------------------------------------------------

def test_bvh_inputs_are_files_folders_searched_recursively_or_globs(tmp_path):
    """One discovery for every script: a folder is searched into its sub-folders (any case
    of .bvh, nothing else), keeping each file's path below it; a file is taken as named; a
    glob's ** reaches sub-folders; inputs that name nothing say why."""
    from models.motion.bvh import find_bvh_files

    for rel in ("b.bvh", "a.BVH", "sub/c.bvh", "sub/deeper/d.bvh", "notes.txt", "sub/e.bvh.bak"):
        (tmp_path / "mocap" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "mocap" / rel).write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "mocap" / "folder.bvh").mkdir()      # a folder named like a clip is no clip
    search = find_bvh_files([tmp_path / "mocap", str(tmp_path / "mocap" / "notes.txt"),
                             str(tmp_path / "mocap" / "**" / "*.bvh"), tmp_path / "empty",
                             tmp_path / "missing.bvh", str(tmp_path / "*.none")])
    got = [(f.path.relative_to(tmp_path).as_posix(), f.relative.as_posix()) for f in search.found]
    assert got == [("mocap/a.BVH", "a.BVH"), ("mocap/b.bvh", "b.bvh"), ("mocap/sub/c.bvh", "sub/c.bvh"),
                   ("mocap/sub/deeper/d.bvh", "sub/deeper/d.bvh"),
                   ("mocap/notes.txt", "notes.txt"),                                   # named alone: taken
                   ("mocap/b.bvh", "b.bvh"), ("mocap/sub/c.bvh", "c.bvh"), ("mocap/sub/deeper/d.bvh", "d.bvh")]
    assert [reason for _, reason in search.missing] == ["folder has no .bvh files", "no such file or folder",
                                                        "pattern matches no files"]

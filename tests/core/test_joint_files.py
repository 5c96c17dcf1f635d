"""Joint files to SMPL motion (models.motion.joints, models.ik.from_joints,
scripts/joints_to_smpl.py): generate a motion on the open body, write its joints in a layout
and a file format, convert, re-pose the body with the fitted betas and compare."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.body.measure import measure
from models.core.errors import SmplIkError
from models.core.files import find_files
from models.core.rotations import axis_angle_to_matrix, matrix_to_quat_wxyz
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES
from models.ik.from_joints import JointOptions, convert_joint_file, fill_gaps, held_by_neighbours, joints_to_smpl
from models.motion.amass import read_motion_npz
from models.motion.bvh import find_bvh_files, read_bvh
from models.motion.joints import LAYOUTS, UP_AXES, JointFile, detect_layout, fit_layout_shape, read_joint_file
from models.motion.resample import continuous_quats

ROOT = Path(__file__).resolve().parents[2]
FRAMES = 8
# The body's landmark vertices that stand for a layout's face, hand and foot points.
VERTEX = {"nose": "nose", "left_eye": "leye", "right_eye": "reye", "left_ear": "lear", "right_ear": "rear",
          "left_eye_inner": "leye", "left_eye_outer": "leye", "right_eye_inner": "reye", "right_eye_outer": "reye",
          "mouth_left": "nose", "mouth_right": "nose", "neck_nose": "nose",
          "left_pinky": "lpinky", "right_pinky": "rpinky", "left_index": "lindex", "right_index": "rindex",
          "left_thumb": "lthumb", "right_thumb": "rthumb", "left_heel": "LHeel", "right_heel": "RHeel",
          "left_foot_index": "LBigToe", "right_foot_index": "RBigToe", "left_big_toe": "LBigToe",
          "right_big_toe": "RBigToe", "left_small_toe": "LSmallToe", "right_small_toe": "RSmallToe"}


def motion(open_body, seed=0, frames=FRAMES, betas_scale=1.0):
    """A smooth random motion: (betas (10,), local rotations (T, 24, 3, 3), trans (T, 3))."""
    rng = np.random.default_rng(seed)
    betas = rng.normal(0.0, betas_scale, 10)
    base = rng.normal(0.0, 0.25, (24, 3))
    drift = rng.normal(0.0, 0.04, (24, 3))
    aa = base + np.arange(frames)[:, None, None] * drift
    aa[:, 0] = [0.0, 0.3, 0.0] + np.arange(frames)[:, None] * [0.0, 0.05, 0.0]   # upright, turning
    trans = np.zeros((frames, 3))
    trans[:, 2] = np.linspace(0.0, 0.6, frames)
    return betas, axis_angle_to_matrix(aa), trans


def layout_joints(open_body, layout, betas, local, trans):
    """(T, J, 3) the layout's joints on the posed body, SMPL's frame: SMPL joints where the
    layout's joint is one, the body's landmark vertices for face, finger and toe points, and
    for the rest what the layout means by them: Human3.6M's pelvis and BODY_25's mid hip the
    midpoint of the hips, its spine halfway from there to its thorax (SMPL's neck), its head
    top the head's highest vertex at rest, BODY_25's neck the midpoint of the shoulders."""
    out = open_body.forward(betas, rel_rotmats=local, trans=trans)
    joints, verts = out.posed_joints, out.vertices
    at = lambda name: joints[:, JOINT_INDEX[name]]   # noqa: E731
    top = int(np.argmax(open_body.shaped_vertices(betas)[:, 1]))
    mid_hips = 0.5 * (at("left_hip") + at("right_hip"))
    special = {"pelvis": mid_hips if layout.name == "h36m17" else at("pelvis"), "mid_hip": mid_hips,
               "thorax": at("neck"), "spine": 0.5 * (mid_hips + at("neck")), "head_top": verts[:, top],
               "neck": 0.5 * (at("left_shoulder") + at("right_shoulder")) if layout.name == "body25" else at("neck")}
    cols = []
    for name in layout.joints:
        if name in special:
            cols.append(special[name])
        elif name in VERTEX:
            cols.append(verts[:, open_body.landmarks[VERTEX[name]]])
        else:
            cols.append(at(name))
    return np.stack(cols, axis=1)


def reposed(open_body, result):
    return open_body.forward(result.betas, pose_rotvecs=result.poses, trans=result.trans).posed_joints


def write_formats(folder, joints):
    """The same (T, J, 3) joints in every documented format; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    t, j, _ = joints.shape
    paths = {"npy": folder / "a.npy", "npz": folder / "b.npz", "npz_only": folder / "c.npz",
             "csv": folder / "d.csv", "csv_bare": folder / "e.csv", "json": folder / "f.json",
             "json_object": folder / "g.json"}
    np.save(paths["npy"], joints)
    np.savez(paths["npz"], joints=joints, fps=np.float64(25.0))
    np.savez(paths["npz_only"], positions=joints.reshape(t, j * 3))
    header = ",".join(f"j{k}_{c}" for k in range(j) for c in "xyz")
    rows = "\n".join(",".join(repr(float(v)) for v in row) for row in joints.reshape(t, -1))
    paths["csv"].write_text(header + "\n" + rows + "\n")
    paths["csv_bare"].write_text(rows + "\n")
    paths["json"].write_text(json.dumps(joints.tolist()))
    paths["json_object"].write_text(json.dumps({"joints": joints.tolist(), "fps": 50}))
    return paths


# --- round trips -----------------------------------------------------------------------------

def test_smpl24_round_trips_through_every_format(open_body, tmp_path):
    """SMPL's 24 joints carry every bone: the fitted betas give every bone's length within
    a micrometre and IK-GAT lays every bone exactly, so the re-posed joints come back within
    a small fraction of a millimetre (IK-GAT runs in float32: ~1e-7 m per joint)."""
    betas, local, trans = motion(open_body, seed=1)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    worst = {}
    for kind, path in write_formats(tmp_path, truth).items():
        result = convert_joint_file(path, open_body)
        assert result.method == "ikgat" and result.layout.layout.name == "smpl24"
        worst[kind] = 1e3 * np.linalg.norm(reposed(open_body, result) - truth, axis=-1).max()
        assert result.error_mm < 1.0
    assert max(worst.values()) < 1.0, worst
    fps = {k: convert_joint_file(p, open_body).fps for k, p in write_formats(tmp_path / "again", truth).items()}
    assert fps["npz"] == 25.0 and fps["json_object"] == 50.0 and fps["npy"] == 30.0   # the default


def test_units_and_up_axes(open_body):
    """The same figure in centimetres in a Z-up world and in MediaPipe's y-down frame comes
    back where it is in SMPL's frame."""
    betas, local, trans = motion(open_body, seed=2, frames=3)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    for axis in ("Z", "-Y"):
        stored = 100.0 * truth @ UP_AXES[axis]   # the inverse of the rotation the reader applies
        result = joints_to_smpl(JointFile("cm.npy", stored), open_body,
                                JointOptions(layout="smpl24", units="cm", up_axis=axis))
        assert 1e3 * np.linalg.norm(reposed(open_body, result) - truth, axis=-1).max() < 1.0


# Bounds on the mean distance (mm) between the true and solved joints that each layout gives
# itself (hips, knees, ankles, shoulders, elbows, wrists; the SMPL-24 thresholds above): soft
# pins, on a body whose limbs are fitted to the file's, that the refinement can meet but for
# what the shape fit misses of the limb lengths (a few mm: it keeps a prior on the betas and
# also matches hip, shoulder and torso widths): 10 mm. Over all 24 joints the others are
# SMPL-IK's guess from the pins; its six-point benchmark misses by 35-46 mm and here 12 or
# more joints are pinned: 35 mm. The fitted body's height comes from limbs only, the trunk's
# and head's from the shape space's correlations: within 0.1 m (beta 0's standard deviation
# of height on the open body is 0.095 m).
GIVEN_BOUND_MM, ALL_BOUND_MM, HEIGHT_BOUND_M = 10.0, 35.0, 0.1


@pytest.mark.parametrize("name", ["h36m17", "coco17", "mediapipe33", "body25"])
def test_every_layout_imports(open_body, tmp_path, name):
    layout = LAYOUTS[name]
    betas, local, trans = motion(open_body, seed=3, frames=5)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    joints = layout_joints(open_body, layout, betas, local, trans)
    if layout.up_axis != "Y":   # stored in the layout's own axes (MediaPipe: y down)
        joints = joints @ UP_AXES[layout.up_axis]
    path = tmp_path / f"{name}.npy"
    np.save(path, joints)
    result = convert_joint_file(path, open_body)   # the layout found from the file
    assert result.layout.layout.name == name and result.method == "smplik"
    back = reposed(open_body, result)
    given = [JOINT_INDEX[n] for n in JOINT_NAMES if layout.direct(n)]
    assert len(given) >= 12
    given_mm = 1e3 * np.linalg.norm(back[:, given] - truth[:, given], axis=-1).mean()
    all_mm = 1e3 * np.linalg.norm(back - truth, axis=-1).mean()
    assert given_mm < GIVEN_BOUND_MM and all_mm < ALL_BOUND_MM, (given_mm, all_mm)
    assert abs(result.height_m - measure(open_body, betas).height) < HEIGHT_BOUND_M


def test_seventeen_joints_are_told_apart(open_body):
    betas, local, trans = motion(open_body, seed=4, frames=2)
    for name in ("h36m17", "coco17"):
        joints = layout_joints(open_body, LAYOUTS[name], betas, local, trans)
        assert detect_layout(joints).layout.name == name


def test_smoothing_calms_a_noisy_file(open_body):
    """Joints with 1 cm of white noise on a still pose: each frame's rotations follow the
    noise, so any acceleration is the noise's. A Gaussian of sigma 2 frames leaves white
    noise's second differences an RMS of sqrt(sum(d^2) / sum([1, -2, 1]^2)) of what they were
    (d: the kernel's own second difference), 0.032 for sigma 2; through the solve the noise
    is not quite white (each frame is solved on its own, nonlinearly), so the smoothed
    rotations' acceleration must fall to within 3 times that ratio (measured: about the ratio
    itself)."""
    from models.motion.temporal import gaussian_kernel

    betas, local, trans = motion(open_body, seed=5, frames=40)
    local[:] = local[:1]   # a still pose: any acceleration is the noise's
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans * 0).posed_joints
    noisy = truth + np.random.default_rng(6).normal(0.0, 0.01, truth.shape)

    def acceleration(result):
        q = continuous_quats(matrix_to_quat_wxyz(axis_angle_to_matrix(result.poses)))
        return np.sqrt(np.mean(np.diff(q[5:-5], n=2, axis=0) ** 2))

    raw = joints_to_smpl(JointFile("noisy.npy", noisy), open_body)
    smooth = joints_to_smpl(JointFile("noisy.npy", noisy), open_body, JointOptions(smooth=2.0))
    d = np.convolve(gaussian_kernel(2.0), [1.0, -2.0, 1.0])
    white = np.sqrt(np.sum(d ** 2) / 6.0)
    ratio = acceleration(smooth) / acceleration(raw)
    assert ratio < 3.0 * white, (white, ratio)


def test_ikgat_corrects_the_bones_of_a_noisy_file_only(open_body):
    """A file whose bone lengths change from frame to frame (a detector's noise) has its bone
    directions corrected (a note says so); one whose lengths hold (a rig, scaled 5% off the
    body: constant lengths) keeps every bone exactly where the file puts it."""
    from models.ik.from_joints import bone_length_spread

    betas, local, trans = motion(open_body, seed=8, frames=6)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    noisy = truth + np.random.default_rng(9).normal(0.0, 0.01, truth.shape)
    assert bone_length_spread(truth) < 1e-6 < 1e-3 < bone_length_spread(noisy)
    shaken = joints_to_smpl(JointFile("noisy.npy", noisy), open_body)
    assert any("corrects the bone directions" in n for n in shaken.notes)
    scaled = joints_to_smpl(JointFile("rig.npy", 1.05 * truth), open_body)
    assert not any("corrects" in n for n in scaled.notes)
    kept = joints_to_smpl(JointFile("noisy.npy", noisy), open_body, JointOptions(denoise=False))
    assert not any("corrects" in n for n in kept.notes)


# --- bad input -------------------------------------------------------------------------------

def test_bad_files_are_named(open_body, tmp_path):
    betas, local, trans = motion(open_body, seed=7, frames=4)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    inf = truth.copy()
    inf[2, 5, 1] = np.inf
    np.save(tmp_path / "inf.npy", inf)
    with pytest.raises(SmplIkError, match=r"inf\.npy: frame 2 .*joint 5 is infinite"):
        read_joint_file(tmp_path / "inf.npy")
    rows = "\n".join(",".join(str(v) for v in row) for row in inf.reshape(4, -1))
    (tmp_path / "inf.csv").write_text("header\n" + rows + "\n")
    with pytest.raises(SmplIkError, match=r"inf\.csv: line 4 \(frame 2\) has an infinite value"):
        read_joint_file(tmp_path / "inf.csv")
    np.save(tmp_path / "none.npy", np.full((3, 24, 3), np.nan))
    with pytest.raises(SmplIkError, match=r"none\.npy: every value is NaN .*no joint at all"):
        read_joint_file(tmp_path / "none.npy")
    np.save(tmp_path / "odd.npy", np.zeros((3, 19, 3)))
    with pytest.raises(SmplIkError, match=r"odd\.npy: 19 joints .*smpl24 .*h36m17 .*coco17 .*mediapipe33 .*body25"):
        convert_joint_file(tmp_path / "odd.npy", open_body)
    (tmp_path / "junk.npz").write_bytes(b"\x00\x01 not a zip")
    with pytest.raises(SmplIkError, match=r"junk\.npz: not a readable"):
        read_joint_file(tmp_path / "junk.npz")
    (tmp_path / "junk.json").write_text("[[1, 2, 3], [")
    with pytest.raises(SmplIkError, match=r"junk\.json: not valid JSON"):
        read_joint_file(tmp_path / "junk.json")
    for name in ("empty.csv", "empty.json"):
        (tmp_path / name).write_text("")
        with pytest.raises(SmplIkError, match=rf"{name}: the file is empty"):
            read_joint_file(tmp_path / name)
    np.save(tmp_path / "empty.npy", np.zeros((0, 24, 3)))
    with pytest.raises(SmplIkError, match=r"empty\.npy: .*empty"):
        read_joint_file(tmp_path / "empty.npy")
    with pytest.raises(SmplIkError, match=r"missing\.npy: no such file"):
        read_joint_file(tmp_path / "missing.npy")
    np.save(tmp_path / "mm.npy", 1000.0 * truth)   # millimetres read as metres
    with pytest.raises(SmplIkError, match=r"mm\.npy: the figure would be 1\.\d+e\+03 m tall"):
        convert_joint_file(tmp_path / "mm.npy", open_body)
    assert convert_joint_file(tmp_path / "mm.npy", open_body, JointOptions(units="mm")).error_mm < 1.0
    with pytest.raises(SmplIkError, match="24 joints per frame, but COCO-17 has 17"):
        convert_joint_file(tmp_path / "mm.npy", open_body, JointOptions(layout="coco17", units="mm"))


# --- joints missing from frames ---------------------------------------------------------------

def test_missing_joints_read_as_nan_from_every_format(open_body, tmp_path):
    """NaN in a .npy, `nan` in a .csv, null (for a coordinate or the whole joint) or NaN in a
    .json: the joint is missing from that frame; one missing coordinate makes the whole joint
    missing; every other value is kept."""
    betas, local, trans = motion(open_body, seed=3, frames=3)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    gaps = truth.copy()
    gaps[1, 4, 0] = np.nan          # one coordinate
    gaps[2, 7] = np.nan             # a whole joint
    expected = np.isnan(gaps).any(-1)
    np.save(tmp_path / "a.npy", gaps)
    rows = "\n".join(",".join("nan" if np.isnan(v) else repr(float(v)) for v in row) for row in gaps.reshape(3, -1))
    (tmp_path / "b.csv").write_text(rows + "\n")
    listed = [[[None if np.isnan(c) else float(c) for c in j] for j in f] for f in gaps]
    (tmp_path / "c.json").write_text(json.dumps(listed))
    (tmp_path / "d.json").write_text(json.dumps(gaps.tolist()))     # Python's json writes NaN
    whole = [[None if np.isnan(j).all() else [None if np.isnan(c) else float(c) for c in j] for j in f] for f in gaps]
    (tmp_path / "e.json").write_text(json.dumps({"joints": whole}))  # null for the whole joint
    for name in ("a.npy", "b.csv", "c.json", "d.json", "e.json"):
        read = read_joint_file(tmp_path / name).joints
        assert (np.isnan(read).all(-1) == expected).all() and not np.isnan(read[~expected]).any(), name
        assert np.allclose(read[~expected], truth[~expected], atol=1e-12), name


def test_fill_gaps_draws_a_joints_path_through_short_gaps_only():
    """A joint moving at a constant velocity comes back exactly in a gap the curve may fill
    (its tangents are the velocity); a longer gap, and a gap at either end, stay missing."""
    t = np.arange(20, dtype=float)
    joints = np.stack([np.stack([0.1 * t, 1.0 + 0.02 * t, -0.05 * t], -1)], 1)   # (20, 1, 3)
    gaps = joints.copy()
    gaps[3:7] = np.nan          # 4 frames
    gaps[10:16] = np.nan        # 6 frames
    gaps[18:] = np.nan          # at the end
    filled, mask = fill_gaps(gaps, longest=5)
    assert mask[3:7].all() and np.allclose(filled[3:7], joints[3:7], atol=1e-12)
    assert not mask[10:16].any() and np.isnan(filled[10:16]).all()
    assert not mask[18:].any() and np.isnan(filled[18:]).all()
    assert not mask[~np.isnan(gaps).any(-1)].any()
    filled, mask = fill_gaps(gaps, longest=6)
    assert mask[10:16].all() and np.allclose(filled[10:16], joints[10:16], atol=1e-12)


def test_the_shape_fit_reads_bone_lengths_around_gaps(open_body):
    """A rig's bones keep their lengths, so knocking joints out of a fifth of the frames leaves
    the fitted betas as they were."""
    betas, local, trans = motion(open_body, seed=5, frames=10, betas_scale=1.5)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    gaps = truth.copy()
    gaps[[1, 6], :12] = np.nan
    gaps[3, [4, 18, 21]] = np.nan
    whole, holed = (fit_layout_shape(open_body, truth, LAYOUTS["smpl24"]),
                    fit_layout_shape(open_body, gaps, LAYOUTS["smpl24"]))
    assert np.allclose(holed.betas, whole.betas, atol=1e-6)
    assert np.abs(whole.betas - betas).max() < 1e-3


def test_frames_with_missing_joints_are_solved_from_the_rest(open_body):
    """An SMPL-24 file with gaps: the whole frames by IK-GAT (exact), the frames with gaps by
    SMPL-IK from the joints they give (within the soft pins' 2 cm), a joint missing for 3
    frames pinned on a curve through the frames either side (near its truth), as is a frame
    lost between two whole ones. Frames lost for longer than a curve may span move from the
    pose before to the pose after (nearer the truth than holding the pose before); frames lost
    at the end, with nothing after them, keep the pose before them. The notes say which."""
    betas, local, trans = motion(open_body, seed=11, frames=40)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    gaps = truth.copy()
    hand = [JOINT_INDEX["left_wrist"], JOINT_INDEX["left_hand"]]
    gaps[4:7, hand] = np.nan
    gaps[9, JOINT_INDEX["right_ankle"]] = np.nan
    gaps[12] = np.nan
    gaps[17:31] = np.nan            # 14 frames: longer than the 12 a curve spans at 30 fps
    gaps[37:] = np.nan
    result = joints_to_smpl(JointFile("gaps.npy", gaps, fps=30.0), open_body)
    assert result.method == "ikgat+smplik"
    assert "22 of 40 frames miss joints" in result.describe()
    assert "17 frames give no joint to place the body (the first: frame 17)" in result.describe()
    back = reposed(open_body, result)
    error = 1e3 * np.linalg.norm(back - truth, axis=-1)
    whole = [t for t in list(range(17)) + list(range(31, 37)) if t not in (4, 5, 6, 9, 12)]
    assert error[whole].max() < 1.0
    given = ~np.isnan(gaps).any(-1)
    assert error[[4, 5, 6, 9]][given[[4, 5, 6, 9]]].max() < 25.0
    assert error[4:7][:, hand].max() < 30.0 and error[12].max() < 30.0
    held = 1e3 * np.linalg.norm(back[16] - truth[17:31], axis=-1)
    assert error[17:31].mean() < 0.5 * held.mean()
    for t in (37, 38, 39):
        assert np.array_equal(result.poses[t], result.poses[36]) and np.array_equal(result.trans[t], result.trans[36])
    assert result.error_mm < 5.0    # over the joints the file gives


def test_a_joint_its_neighbours_hold_is_left_to_smplik_and_a_lost_limb_end_turns_through_its_gap(open_body):
    """A wrist missing between a given elbow and hand takes no curve (the same poses as with
    fill_gaps 0); a wrist lost with its hand does. A hand and wrist lost for longer than a curve
    spans turn from the pose before towards the next whole frame: nearer their truth than the
    forearm frozen at its last pose, as a start from the frame before alone would leave it."""
    held = held_by_neighbours(np.ones((1, 24), bool))
    assert held[0, 1:].all() and not held[0, 0]
    given = np.ones((2, 24), bool)
    wrist, hand, elbow = JOINT_INDEX["left_wrist"], JOINT_INDEX["left_hand"], JOINT_INDEX["left_elbow"]
    given[0, wrist] = False
    given[1, [wrist, hand]] = False
    held = held_by_neighbours(given)
    assert held[0, wrist] and not held[1, wrist] and not held[1, hand]

    betas, local, trans = motion(open_body, seed=13, frames=40)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    gaps = truth.copy()
    gaps[5:9, wrist] = np.nan
    alone = joints_to_smpl(JointFile("w.npy", gaps, fps=30.0), open_body, JointOptions(fill_gaps=0.0))
    shipped = joints_to_smpl(JointFile("w.npy", gaps, fps=30.0), open_body)
    assert np.array_equal(shipped.poses, alone.poses) and "curve" not in shipped.describe()

    poses = np.zeros((40, 24, 3))                       # the left elbow bending steadily, nothing else
    poses[:, elbow, 1] = np.linspace(0.0, -1.5, 40)
    truth = open_body.forward(np.zeros(10), pose_rotvecs=poses).posed_joints
    gaps = truth.copy()
    gaps[10:30, [wrist, hand]] = np.nan                 # 20 frames: more than the 12 a curve spans
    back = reposed(open_body, joints_to_smpl(JointFile("limb.npy", gaps, fps=30.0), open_body))
    frozen = truth.copy()                               # the forearm left as it was on frame 9
    frozen[10:30, [wrist, hand]] = truth[9, [wrist, hand]]
    lost = [wrist, hand]
    error = np.linalg.norm(back[10:30, lost] - truth[10:30, lost], axis=-1).mean()
    assert error < 0.5 * np.linalg.norm(frozen[10:30, lost] - truth[10:30, lost], axis=-1).mean()


def test_a_layout_with_fewer_joints_skips_the_missing_ones(open_body):
    """COCO-17 with a wrist lost in two frames: SMPL-IK pins the rest; the wrist stays near
    its truth, and no NaN reaches the poses."""
    betas, local, trans = motion(open_body, seed=2, frames=6)
    joints = layout_joints(open_body, LAYOUTS["coco17"], betas, local, trans)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    joints[2:4, LAYOUTS["coco17"].joint("right_wrist")] = np.nan
    result = joints_to_smpl(JointFile("coco.npy", joints, fps=30.0), open_body, JointOptions(layout="coco17"))
    assert result.method == "smplik" and np.isfinite(result.poses).all()
    wrist = JOINT_INDEX["right_wrist"]
    assert 1e3 * np.linalg.norm(reposed(open_body, result)[2:4, wrist] - truth[2:4, wrist], axis=-1).max() < 60.0


IMAGES = ROOT.parent / "shared" / "data" / "images"


def test_a_detectors_real_landmarks_with_the_unseen_ones_left_out(open_body, tmp_path, detector):
    """bus.jpg's people, and the man on the left in the photo cut off at his thighs, as
    MediaPipe-33 files in MediaPipe's own axes, a landmark with visibility under 0.5 written as
    null (as an export that drops what it did not see): each converts; the man cut off by the
    frame loses his knees and ankles, and his shape is fitted to what the photo shows and
    reported so."""
    if not IMAGES.is_dir():
        pytest.skip(f"{IMAGES} is not here (photos of people from ../shared/data/images)")
    from models.photo import detect
    rgb = detect.read_image(IMAGES / "bus.jpg")
    people = detect.detect_people(rgb) + detect.detect_people(np.ascontiguousarray(rgb[:760, :400]), max_people=1)
    layout = LAYOUTS["mediapipe33"]
    read = [layout.joints.index(n) for n in {source for sources in layout.smpl.values() for source in sources}]
    lost = []
    for k, person in enumerate(people):
        own = person.world * [1.0, -1.0, -1.0]          # MediaPipe's axes: x right, y down, z away
        seen = person.visibility >= 0.5
        frame = [list(map(float, xyz)) if ok else None for xyz, ok in zip(own, seen)]
        (tmp_path / f"person{k}.json").write_text(json.dumps({"joints": [frame], "fps": 30}))
        result = convert_joint_file(tmp_path / f"person{k}.json", open_body)
        assert result.layout.layout.name == "mediapipe33" and np.isfinite(result.poses).all()
        assert 1.45 < result.height_m < 2.0 and result.error_mm < 30.0
        if not seen[read].all():            # a landmark the layout reads is missing
            lost.append(k)
            assert "1 of 1 frame misses joints" in result.describe()
        if (~seen[[13, 14, 15, 16, 25, 26, 27, 28]]).sum() >= 3:     # elbows, wrists, knees, ankles
            assert "the shape rests on only" in result.describe()
    assert lost, "no person in bus.jpg lost a landmark; the test no longer tests gaps"


def test_find_files_keeps_find_bvh_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.BVH").write_text("")
    (tmp_path / "a" / "y.npy").write_text("")
    assert [f.relative for f in find_bvh_files([tmp_path / "a"]).found] == [Path("x.BVH")]
    assert [f.relative for f in find_files([tmp_path / "a"], (".npy", ".csv")).found] == [Path("y.npy")]
    assert find_files([tmp_path / "a"], (".csv", ".json")).missing[0][1] == "folder has no .csv or .json files"


# --- the script ------------------------------------------------------------------------------

def run_script(*args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "joints_to_smpl.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def test_script_writes_npz_and_bvh_and_skips_and_fails_cleanly(open_body, tmp_path):
    betas, local, trans = motion(open_body, seed=8, frames=6)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    np.save(src / "sub" / "walk.npy", truth)
    broken = truth.copy()
    broken[1, 0, 0] = np.inf
    np.save(src / "broken.npy", broken)
    out = tmp_path / "out"
    r = run_script(src, "--out", out)
    assert r.returncode == 1, r.stdout + r.stderr            # one file failed ...
    assert "FAILED" in r.stdout and "broken.npy: frame 1" in r.stdout
    assert not (out / "broken.npz").exists()                  # ... and left nothing behind
    assert sorted(p.name for p in out.rglob("*")) == ["sub", "walk.npz"]
    holed = truth.copy()
    holed[2, 5] = np.nan                                       # a joint missing is no failure
    np.save(src / "holed.npy", holed)
    r = run_script(src / "holed.npy", "--out", out)
    assert r.returncode == 0 and "1 of 6 frames misses joints" in r.stdout, r.stdout + r.stderr
    with np.load(out / "holed.npz") as npz:
        assert str(npz["method"]) == "ikgat+smplik" and float(npz["joint_error_mm"]) < 5.0
    (out / "holed.npz").unlink()
    assert run_script(src / "holed.npy", "--out", out, "--fill-gaps", "-1").returncode == 2
    written = read_motion_npz(out / "sub" / "walk.npz")
    back = open_body.forward(written.betas, pose_rotvecs=written.poses, trans=written.trans).posed_joints
    assert 1e3 * np.linalg.norm(back - truth, axis=-1).max() < 1.0
    with np.load(out / "sub" / "walk.npz") as npz:
        assert str(npz["layout"]) == "smpl24" and str(npz["method"]) == "ikgat"
    again = run_script(src / "sub" / "walk.npy", "--out", out / "sub")
    assert again.returncode == 0 and "skipped" in again.stdout
    r = run_script(str(src / "**" / "*.npy"), "--out", tmp_path / "bvh", "--format", "bvh", "--layout", "smpl24")
    assert (tmp_path / "bvh" / "walk.bvh").exists()
    bvh = read_bvh(tmp_path / "bvh" / "walk.bvh")
    pos = bvh.forward().positions[:, [bvh.skeleton.index(n) for n in JOINT_NAMES]] / 100.0
    assert 1e3 * np.linalg.norm(pos - truth, axis=-1).max() < 1.0   # centimetres, 6 decimals


def test_script_help_is_true():
    r = run_script("--help")
    assert r.returncode == 0
    for option in ("--layout", "--out", "--format", "--smooth", "--units", "--up-axis", "--overwrite", "--fps"):
        assert option in r.stdout
    for name in LAYOUTS:
        assert name in r.stdout



@pytest.fixture(scope="module")
def valid_files(open_body, tmp_path_factory):
    """One valid file of each format, as bytes: {suffix: bytes}."""
    betas, local, trans = motion(open_body, seed=10, frames=3)
    truth = open_body.forward(betas, rel_rotmats=local, trans=trans).posed_joints
    paths = write_formats(tmp_path_factory.mktemp("valid"), truth)
    return {p.suffix: p.read_bytes() for p in (paths["npy"], paths["npz"], paths["csv"], paths["json"])}


@settings(max_examples=60, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_reader_never_crashes_on_damaged_files(valid_files, tmp_path, data):
    """Truncated, bit-flipped or random bytes in any format: a JointFile of finite numbers or
    SmplIkError naming the file, never another exception."""
    suffix = data.draw(st.sampled_from(sorted(valid_files)))
    raw = bytearray(valid_files[suffix])
    how = data.draw(st.sampled_from(["truncate", "flip", "random"]))
    if how == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    elif how == "flip":
        for at in data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=1, max_size=8)):
            raw[at] ^= 1 << data.draw(st.integers(0, 7))
    else:
        raw = bytearray(data.draw(st.binary(max_size=300)))
    path = tmp_path / f"damaged{suffix}"
    path.write_bytes(bytes(raw))
    try:
        read = read_joint_file(path)
    except SmplIkError as exc:
        assert str(exc).startswith(str(path)), exc
    else:
        assert np.isfinite(read.joints).all() and read.joints.ndim == 3 and read.joints.shape[2] == 3

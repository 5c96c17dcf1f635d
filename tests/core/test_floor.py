"""The floor under a motion (models.motion.floor): the lowest point of the posed body over a
clip, measured on a few hundred vertices against the whole mesh, robust to glitch frames,
and what the import does with it."""
import dataclasses

import numpy as np
import pytest

from models.core.errors import SmplIkError
from models.motion import amass, floor

# The lowest of the candidate vertices lies above the whole mesh's lowest vertex (it is a
# subset) by at most a few millimetres on real motion (the module's comment gives 3.2 mm on
# CMU clips); 5 mm here leaves room for the running median at a smooth minimum.
MEASURE_TOL = 0.005   # metres


def walk(frames=120, fps=60.0):
    """(poses (T, 24, 3), trans (T, 3)) of a walking-like clip in SMPL's frame: one stride a
    second (hips swinging +-0.45 rad, the swinging leg's knee bending to 0.9 rad, arms down
    and swinging), the pelvis bobbing 2 cm, turning slowly and walking 1.2 m/s along +Z."""
    t = np.arange(frames) / fps
    phase = 2 * np.pi * t
    poses = np.zeros((frames, 24, 3))
    poses[:, 0, 1] = 0.3 * t                                       # turning about the up axis
    for hip, knee, ankle, sign in ((1, 4, 7, 1.0), (2, 5, 8, -1.0)):
        swing = sign * np.sin(phase)
        poses[:, hip, 0] = -0.45 * swing
        poses[:, knee, 0] = 0.9 * np.clip(np.sin(phase + sign * np.pi / 2), 0, None)
        poses[:, ankle, 0] = 0.2 * swing
    poses[:, 16, 2], poses[:, 17, 2] = -1.2, 1.2                   # shoulders: arms down from the T
    poses[:, 16, 0], poses[:, 17, 0] = 0.3 * np.sin(phase), -0.3 * np.sin(phase)
    poses[:, 18, 1], poses[:, 19, 1] = -0.3, 0.3                   # elbows a little bent
    trans = np.column_stack([0.02 * np.sin(0.5 * phase), 0.02 * np.sin(2 * phase), 1.2 * t])
    return poses, trans


def whole_mesh_lowest(body, betas, poses, trans, up=1):
    """(T,) each frame's lowest vertex of the whole posed mesh (the body's own forward)."""
    return body.vertices(betas, pose_rotvecs=poses, trans=trans)[..., up].min(-1)


@pytest.fixture(scope="module")
def walking(open_body):
    betas = np.random.default_rng(3).normal(scale=0.8, size=10)
    poses, trans = walk()
    truth = whole_mesh_lowest(open_body, betas, poses, trans)
    return betas, poses, trans, truth


@pytest.mark.parametrize("offset", [-0.65, 0.0, 0.3])
def test_a_walk_shifted_by_a_known_height_is_measured_at_that_height(open_body, walking, offset):
    betas, poses, trans, truth = walking
    shifted = trans + [0.0, offset - truth.min(), 0.0]            # its lowest point at `offset`
    lowest = floor.lowest_point(open_body, betas, poses, shifted)
    assert abs(lowest.height - offset) < MEASURE_TOL
    assert lowest.is_foot and lowest.joint in ("left_foot", "right_foot", "left_ankle", "right_ankle")
    per_frame_truth = truth + offset - truth.min()
    assert np.all(lowest.per_frame >= per_frame_truth - 1e-9)      # a subset of the mesh: never lower
    assert np.abs(lowest.per_frame - per_frame_truth).max() < MEASURE_TOL


def test_a_walk_on_the_floor_is_measured_at_zero_and_left_there(open_body, walking):
    betas, poses, trans, truth = walking
    on_floor = trans - [0.0, truth.min(), 0.0]
    lowest = floor.lowest_point(open_body, betas, poses, on_floor)
    assert abs(lowest.height) < MEASURE_TOL
    placed = floor.place_on_floor(lowest)
    assert placed.shift == 0.0 and "feet on the floor (lowest" in placed.note and "left as they are" in placed.note


def test_z_up_and_y_up_measure_the_same_clip_alike(open_body, walking):
    """Two frames, one answer: the walk as AMASS stores it (Z up) measured along Z is the walk
    in SMPL's frame measured along Y."""
    betas, poses, trans, _ = walking
    pelvis = open_body.rest_joints(betas)[0]
    poses_z, trans_z = amass.z_up_from_smpl_frame(poses, trans, pelvis)
    y_up = floor.lowest_point(open_body, betas, poses, trans, floor.LowestPointOptions(up_axis="Y"))
    z_up = floor.lowest_point(open_body, betas, poses_z, trans_z, floor.LowestPointOptions(up_axis="Z"))
    assert abs(y_up.height - z_up.height) < 1e-9 and np.abs(y_up.per_frame - z_up.per_frame).max() < 1e-9
    # along the wrong axis
    wrong = floor.lowest_point(open_body, betas, poses_z, trans_z, floor.LowestPointOptions(up_axis="Y"))
    assert abs(wrong.height - y_up.height) > 0.1


@pytest.mark.parametrize("dip_frames,ignored", [(1, True), (2, True), (3, False)])
def test_a_dip_of_one_or_two_frames_is_a_glitch_three_are_a_contact(open_body, walking, dip_frames, ignored):
    betas, poses, trans, truth = walking
    on_floor = trans - [0.0, truth.min(), 0.0]
    glitched = on_floor.copy()
    glitched[50:50 + dip_frames, 1] -= 0.5                         # the whole body half a metre down
    lowest = floor.lowest_point(open_body, betas, poses, glitched)
    assert lowest.raw_height < -0.4 and lowest.raw_frame in range(50, 50 + dip_frames)
    if ignored:
        assert abs(lowest.height) < MEASURE_TOL
        assert list(lowest.glitch_frames) == list(range(50, 50 + dip_frames))
        assert "taken for a glitch" in floor.place_on_floor(lowest).note
    else:
        assert lowest.height < -0.4 and 50 <= lowest.frame < 53


def test_the_candidates_are_a_few_hundred_and_find_the_lowest_point_in_any_posture(open_body, rng):
    """Bodies turned every way (lying, upside down), moderately posed: the lowest candidate is
    within a centimetre of the whole mesh's lowest vertex, whichever part it is."""
    betas = rng.normal(size=10)
    candidates = floor.floor_candidates(open_body, betas)
    assert 200 < len(candidates) < 0.05 * open_body.num_vertices
    poses = rng.normal(scale=0.3, size=(150, 24, 3))
    poses[:, 0] = rng.normal(scale=2.0, size=(150, 3))
    trans = rng.normal(size=(150, 3))
    lowest = floor.lowest_point(open_body, betas, poses, trans)
    truth = whole_mesh_lowest(open_body, betas, poses, trans)
    assert np.all(lowest.per_frame >= truth - 1e-9) and np.abs(lowest.per_frame - truth).max() < 0.01
    owners = {open_body.weights[candidates].argmax(1)[k] for k in range(len(candidates))}
    assert len(owners) == 24                                       # every part can be the lowest


def test_bad_arrays_are_refused_with_a_message(open_body):
    poses, trans = np.zeros((3, 24, 3)), np.zeros((3, 3))
    with pytest.raises(SmplIkError, match=r"trans has shape \(2, 3\); expected \(3, 3\)"):
        floor.lowest_point(open_body, np.zeros(10), poses, trans[:2])
    trans[1, 1] = np.nan
    with pytest.raises(SmplIkError, match="trans to measure are not all finite"):
        floor.lowest_point(open_body, np.zeros(10), poses, trans)
    with pytest.raises(SmplIkError, match="up axis 'X'"):
        floor.lowest_point(open_body, np.zeros(10), poses, np.zeros((3, 3)), floor.LowestPointOptions(up_axis="X"))


# --- what the import does with the lowest point --------------------------------------------------

def lowest_at(height, joint="left_foot", frames=10):
    return floor.LowestPoint(height=height, frame=3, joint=joint, raw_height=height, raw_frame=3,
                             per_frame=np.full(frames, height))


@pytest.mark.parametrize("height,shift,words", [
    (-0.65, 0.65, "feet were 0.65 m below the floor: moved up 0.65 m"),
    (-0.02, 0.02, "feet were 2.0 cm below the floor: moved up 2.0 cm"),
    (-0.004, 0.0, "feet on the floor (lowest 0.4 cm below the floor): left as they are"),
    (0.004, 0.0, "feet on the floor (lowest 0.4 cm above the floor): left as they are"),
    (0.03, 0.0, "feet 3.0 cm above the floor at the lowest (within 5.0 cm): left as they are"),
    (0.3, -0.3, "feet stayed 0.30 m above the floor (never within 5.0 cm of it): moved down 0.30 m"),
])
def test_below_on_near_and_far_above_the_floor(height, shift, words):
    placed = floor.place_on_floor(lowest_at(height))
    assert placed.shift == pytest.approx(shift, abs=1e-12) and placed.note == words
    assert placed.before == pytest.approx(height) and abs(placed.after) <= floor.FAR_ABOVE


def test_the_floor_can_be_anywhere_and_the_lowest_part_is_named():
    placed = floor.place_on_floor(lowest_at(1.0, joint="right_wrist"), floor=1.4)
    assert placed.shift == pytest.approx(0.4)
    assert placed.note == "the lowest point (the right wrist) was 0.40 m below the floor: moved up 0.40 m"


def test_off_keeps_the_clip_and_says_where_it_is():
    placed = floor.place_on_floor(lowest_at(-0.65), mode="OFF")
    assert placed.shift == 0.0
    assert placed.note == "heights kept as in the file (floor option off): lowest point 0.65 m below the floor"


def test_a_file_that_states_its_floor_keeps_its_place_on_it():
    jumping = lowest_at(0.3)                                       # never lands: kept so on AUTO
    kept = floor.place_on_floor(jumping, mode="AUTO", stated_floor=0.0)
    assert kept.shift == 0.0 and "the file states its floor (floor_height 0 m): kept as in the file" in kept.note
    moved = floor.place_on_floor(lowest_at(-0.65), floor=0.0, mode="AUTO", stated_floor=-0.65)
    assert moved.shift == pytest.approx(0.65) and moved.after == pytest.approx(0.0)
    assert "moved up 0.65 m onto the floor, lowest point 0.0 cm above the floor" in moved.note
    assert floor.place_on_floor(jumping, mode="ON", stated_floor=0.0).shift == pytest.approx(-0.3)   # ON measures
    with pytest.raises(SmplIkError, match="floor option 'SOMETIMES'"):
        floor.place_on_floor(jumping, mode="SOMETIMES")


# --- the file's floor_height -----------------------------------------------------------------------

def test_floor_height_is_written_and_read_back(tmp_path, rng):
    path = tmp_path / "clip.npz"
    amass.write_motion_npz(path, amass.MotionFile(poses=rng.normal(size=(4, 72)), trans=rng.normal(size=(4, 3)),
                                                  betas=np.zeros(10), gender="neutral", fps=30.0, up_axis="Z",
                                                  floor_height=-0.25))
    assert amass.read_motion_npz(path).floor_height == -0.25
    rest = amass.MotionFile(poses=np.zeros((4, 72)), trans=np.zeros((4, 3)), betas=np.zeros(10), gender="neutral",
                            fps=30.0)
    amass.write_motion_npz(path, rest)
    assert amass.read_motion_npz(path).floor_height is None        # nothing said of the floor
    with pytest.raises(SmplIkError, match="floor height to write are not all finite"):
        amass.write_motion_npz(tmp_path / "nan.npz", dataclasses.replace(rest, floor_height=float("nan")))
    assert not (tmp_path / "nan.npz").exists()


@pytest.mark.parametrize("value,found", [(np.array(np.nan), r"\[nan\]"), (np.array([0.0, 1.0]), r"\[0.0, 1.0\]"),
                                         (np.array("ground"), "<U6 values, not numbers")])
def test_a_floor_height_that_is_not_one_finite_number_is_refused(tmp_path, value, found):
    path = tmp_path / "odd_floor.npz"
    np.savez(path, poses=np.zeros((2, 72)), floor_height=value)
    with pytest.raises(SmplIkError, match=rf"odd_floor.npz: array 'floor_height' .*{found}"):
        amass.read_motion_npz(path)


def test_the_docs_give_the_thresholds_the_code_uses():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "motion_io.md").read_text()
    bullet = " ".join(text.split("- **Floor.**")[1].split("\n- **")[0].split())
    for words in (f"more than {100 * floor.ON_FLOOR:g} cm below the floor",
                  f"more than {100 * floor.FAR_ABOVE:g} cm above it over the whole clip",
                  f"the lowest that lasts more than {floor.GLITCH_FRAMES} frames"):
        assert words in bullet, words

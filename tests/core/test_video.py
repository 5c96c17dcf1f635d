"""Pose from video: the filters and foot locking on synthetic motion; tracking, fitting and
locking on a video written from a shared photo (when the photo packages and ../shared/data are here);
scripts/video_to_smpl.py on a folder, locally and on a dask cluster; bad input."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import video_clips

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.metrics import acceleration_error, foot_skating
from models.core.skeleton import JOINT_INDEX, NUM_JOINTS, PARENTS
from models.photo import contacts, tracking, video

ROOT = Path(__file__).resolve().parents[2]

FEET_JOINTS = [JOINT_INDEX[n] for n in ("left_ankle", "left_foot", "right_ankle", "right_foot")]


def skate_mm_per_frame(joints, contact):
    """The mean distance, in millimetres, a foot's ankle and ball move from one frame to the
    next where the foot is in contact on both (joints (T, 24, 3), contact (T, 2))."""
    return foot_skating(joints[:, FEET_JOINTS], np.repeat(contact, 2, axis=1), up=None) * 1000


def acceleration_mm(joints):
    """The joints' mean acceleration, millimetres per frame squared (joints (T, 24, 3))."""
    return acceleration_error(joints, np.zeros_like(joints)) * 1000


def needs_video():
    from models.photo.runtime import unavailable

    reason = unavailable("this test")
    if reason is not None:
        pytest.skip(f"{reason} (requirements-photo.txt; make detector)")
    if not video_clips.PHOTO.exists():
        pytest.skip(f"../shared/data/images/{video_clips.PHOTO.name} is not here (the test video is made from it)")


# --- the filters, without a detector ---------------------------------------------------------

def test_one_euro_smooths_a_still_signal_and_follows_a_moving_one(rng):
    """Held still with the noise of a keypoint (1.4 px on a person 700 px across, in the units
    the filter sees: box diagonals) the noise comes out halved or better; moving at a steady
    1 unit/s the
    filter trails by little (its cutoff rises with the speed), far less than a fixed filter
    as smooth at rest would (time constant 1 / (2 pi 1.5 Hz) = 0.11 s: 0.11 units behind)."""
    times = np.arange(90) / 30.0
    still = 0.002 * rng.normal(size=(90, 4))
    f = tracking.keypoint_filter()
    out = np.array([f(v, t) for v, t in zip(still, times)])
    assert out[30:].std() < 0.5 * still[30:].std()
    f = tracking.keypoint_filter()
    ramp = np.array([f(np.array([t]), t)[0] for t in times])
    assert np.abs(ramp[30:] - times[30:]).max() < 0.03


def test_contacts_and_locking_hold_standing_feet(open_body, rng):
    """A body standing still whose root slides 4 mm a frame with 3 mm of noise (a fit that
    skates): both feet are found in contact (low and slow: 0.12 m/s is under CONTACT_SPEED),
    and after locking the ankles and balls move under 0.5 mm a frame (the refinement holds
    them to LOCK_TOLERANCE, 1 mm, and a contact run's lock does not move), where they slid 4."""
    count = 30
    rest = open_body.rest_joints(np.zeros(10))
    local = np.broadcast_to(np.eye(3), (count, NUM_JOINTS, 3, 3)).copy()
    trans = np.zeros((count, 3))
    trans[:, 0] = 0.004 * np.arange(count)
    trans += 0.003 * rng.normal(size=(count, 3))
    trans[:, 2] -= 4.0                      # 4 m in front of the camera
    joints = forward_kinematics(local, rest, PARENTS, trans).positions
    up = contacts.clip_up(local, trans, rest)
    assert up[1] > 0.99
    contact, floor = contacts.foot_contacts(joints, 30.0, up)
    assert contact.all()
    before = skate_mm_per_frame(joints, contact)
    locked_rot, locked_trans = contacts.lock_feet(local, trans, rest, contact)
    after = forward_kinematics(locked_rot, rest, PARENTS, locked_trans).positions
    assert before > 3.0
    assert skate_mm_per_frame(after, contact) < 0.5
    assert np.abs(after[:, FEET_JOINTS] - after[:1, FEET_JOINTS]).max() < 2e-3


def test_a_swinging_foot_is_not_in_contact(open_body):
    """A foot lifted 20 cm and moving 1.5 m/s is off the floor: not in contact; the other,
    still on it, is."""
    count = 20
    rest = open_body.rest_joints(np.zeros(10))
    joints = np.broadcast_to(rest, (count, NUM_JOINTS, 3)).copy()
    swing = [JOINT_INDEX["left_ankle"], JOINT_INDEX["left_foot"]]
    joints[:, swing, 1] += 0.2
    joints[:, swing, 2] += (1.5 / 30.0) * np.arange(count)[:, None]
    contact, _ = contacts.foot_contacts(joints, 30.0, np.array([0.0, 1.0, 0.0]))
    assert not contact[:, 0].any() and contact[:, 1].all()


def test_video_scene_levels_the_floor(open_body):
    """A motion seen by a camera tilted 20 degrees down: the scene turns it upright (the floor's
    up becomes +Y) and puts the feet at their rest height on its floor."""
    from models.core.rotations import axis_angle_to_matrix
    from models.photo.scene import standing_up

    rest = open_body.rest_joints(np.zeros(10))
    tilt = axis_angle_to_matrix(np.array([np.radians(20.0), 0.0, 0.0]))
    local = np.broadcast_to(np.eye(3), (5, NUM_JOINTS, 3, 3)).copy()
    local[:, 0] = tilt
    trans = np.array([0.3, -0.5, -4.0]) + np.zeros((5, 3))
    joints = forward_kinematics(local, rest, PARENTS, trans).positions
    up = contacts.clip_up(local, trans, rest)   # feet to the centre of mass: a few degrees off +Y at rest
    assert np.degrees(np.arccos(up @ tilt @ [0.0, 1.0, 0.0])) < 6.0
    _, floor = contacts.foot_contacts(joints, 30.0, up)
    motion = video.VideoMotion(local_rot=local, trans=trans, joints=joints, betas=np.zeros(10), fps=30.0,
                               frames=np.arange(5), contact=np.ones((5, 2), bool), camera=None, notes=(),
                               up=up, floor=floor)
    scene = video.video_scene(motion, rest)
    placed = forward_kinematics(scene.local_rot, rest, PARENTS, scene.trans).positions
    np.testing.assert_allclose(placed[:, 0, [0, 2]], 0.0, atol=1e-9)           # the pelvis above the origin
    assert placed[:, FEET_JOINTS, 1].min() == pytest.approx(rest[FEET_JOINTS, 1].min(), abs=1e-9)
    np.testing.assert_allclose(standing_up(scene.local_rot, scene.trans, rest).mean(axis=0),
                               [0.0, 1.0, 0.0], atol=1e-9)     # the body stands upright over its feet
    # the camera sees the scene as it saw the motion
    back = (placed - scene.camera_position) @ scene.camera_rotation
    np.testing.assert_allclose(back, joints, atol=1e-9)


# --- a video of a standing person ------------------------------------------------------------

@pytest.fixture(scope="module")
def standing(tmp_path_factory):
    """The standing clip (24 frames of 720p) fitted three ways: as it comes, without foot
    locking, and by the per-frame baseline."""
    needs_video()
    path = video_clips.standing_clip(tmp_path_factory.mktemp("video") / "standing.mp4")
    runs = {name: video.pose_from_video(path, options=options) for name, options in (
        ("temporal", video.VideoOptions()), ("unlocked", video.VideoOptions(lock_feet=False)),
        ("baseline", video.VideoOptions(temporal=False)))}
    return path, runs


def test_every_frame_is_fitted_in_front_of_the_camera(standing):
    _, runs = standing
    motion = runs["temporal"]
    assert motion.frames.tolist() == list(range(24)) and motion.found.all() and motion.notes == ()
    assert motion.local_rot.shape == (24, 24, 3, 3) and motion.trans.shape == (24, 3)
    assert motion.fps == pytest.approx(video_clips.FPS)
    pixels = motion.camera.project(motion.joints)
    assert (pixels[..., 0] > 0).all() and (pixels[..., 0] < 1280).all()
    assert (pixels[..., 1] > 0).all() and (pixels[..., 1] < 720).all()
    assert (motion.joints[..., 2] < -1.0).all()          # in front of the camera, over a metre away


def test_standing_feet_are_in_contact_and_locked(standing):
    """Both feet stand on the floor all clip long: found in contact on at least 90% of the
    frames. Locked, they move under 0.5 mm a frame while in contact (a lock is held to
    LOCK_TOLERANCE, 1 mm; it does not move within a contact run); unlocked, the fit's own
    frame-to-frame wobble (millimetres: the keypoints' jitter through the camera) shows."""
    _, runs = standing
    locked, unlocked = runs["temporal"], runs["unlocked"]
    assert locked.contact.mean(axis=0).min() >= 0.9
    assert skate_mm_per_frame(locked.joints, locked.contact) < 0.5
    assert skate_mm_per_frame(unlocked.joints, unlocked.contact) > 1.0


def test_smoothed_motion_jitters_less_than_the_per_frame_baseline(standing):
    """The baseline fits each frame alone, so detector noise reaches the joints unfiltered:
    its acceleration is many times that of the filtered, warm-started, smoothed motion."""
    _, runs = standing
    assert acceleration_mm(runs["temporal"].joints) < 0.2 * acceleration_mm(runs["baseline"].joints)
    assert not runs["baseline"].found.sum() < 24


def test_a_range_with_a_step(standing):
    path, _ = standing
    motion = video.pose_from_video(path, video.VideoClip(frame_start=3, frame_end=15, step=4))
    assert motion.frames.tolist() == [3, 7, 11] and motion.fps == pytest.approx(video_clips.FPS / 4)


def test_frames_without_the_person_carry_the_pose_before_and_are_named(tmp_path):
    """Frames 5-7 show nobody (the tracker loses the person and finds them again on frame 8):
    they carry frame 4's pose (exactly, before smoothing and locking), a note names them, and
    the frames after are fitted again."""
    needs_video()
    path = video_clips.standing_clip(tmp_path / "gap.mp4", frames=12, blank=(5, 6, 7))
    motion = video.pose_from_video(path, options=video.VideoOptions(smooth=False, lock_feet=False))
    assert motion.found.tolist() == [True] * 5 + [False] * 3 + [True] * 4
    assert len(motion.notes) == 1 and "not found on 3 of 12 frames (5-7)" in motion.notes[0]
    np.testing.assert_array_equal(motion.local_rot[5:8], np.broadcast_to(motion.local_rot[4], (3, 24, 3, 3)))
    # the same person found again where they stood: in the image within 2% of the 1280 pixels,
    # in depth (which the body's size in the image decides, unfiltered here) within 20 cm. The
    # arms below the shoulder are left out: the detector itself puts the left wrist 25 pixels
    # higher on a frame it searches afresh (frames 0 and 8) than on the frames it tracks.
    arms = [JOINT_INDEX[f"{side}_{j}"] for side in ("left", "right") for j in ("elbow", "wrist", "hand")]
    body = [j for j in range(NUM_JOINTS) if j not in arms]
    pixels = motion.camera.project(motion.joints[:, body])
    assert np.abs(pixels[8:] - pixels[4]).max() < 0.02 * 1280
    assert np.abs(motion.joints[8:, body] - motion.joints[4, body]).max() < 0.2


def test_each_person_of_a_group_is_followed_by_their_number(tmp_path):
    """bus.jpg whole, at its own portrait size: three people standing. Person 0 and person 1
    (largest first) are two of them, each followed on every frame (the others greyed out when
    tracking starts): their pelvises lie far apart in the image on every frame, and each stays
    within 6% of the frame's width of where it is on average (the largest person stands at the
    photo's right edge, partly out of it, so its keypoints wander more than a whole person's)."""
    needs_video()
    path = video_clips.standing_clip(tmp_path / "group.mp4", frames=8, box=None, size=(810, 1080))
    pelvis = []
    for person in (0, 1):
        motion = video.pose_from_video(path, video.VideoClip(person=person))
        assert motion.found.all()
        pelvis.append(motion.camera.project(motion.joints[:, 0]))
    assert np.abs(pelvis[0][:, 0] - pelvis[1][:, 0]).min() > 100
    for p in pelvis:
        assert np.abs(p - p.mean(axis=0)).max() < 0.06 * 810


def test_a_start_past_the_end_is_refused(standing):
    path, _ = standing
    with pytest.raises(SmplIkError, match="frame_start 100 is past the video's last frame"):
        video.pose_from_video(path, video.VideoClip(frame_start=100))


def test_cancelling_stops_at_once(standing):
    path, _ = standing
    calls = []
    with pytest.raises(video.VideoCancelled):
        video.pose_from_video(path, progress=lambda done, total: calls.append((done, total)) or done < 2)
    assert [d for d, _ in calls] == [1, 2] and calls[0][1] == 24


def test_person_out_of_range_names_how_many_were_found(standing):
    path, _ = standing
    # the clip shows its person and, at the edge, part of the man beside him
    with pytest.raises(SmplIkError, match=r"standing.mp4: the first frame with people \(frame 0\) shows only "
                                          r"(1 person|2 people), so there is no 6th largest person to follow"):
        video.pose_from_video(path, video.VideoClip(person=5))


def test_bad_files_are_named_errors(tmp_path):
    needs_video()
    text = tmp_path / "notes.mp4"
    text.write_text("not a video\n")
    with pytest.raises(SmplIkError, match="notes.mp4: not a video"):
        video.pose_from_video(text)
    with pytest.raises(SmplIkError, match="empty.avi: the video has no frames"):
        video.pose_from_video(video_clips.empty_clip(tmp_path / "empty.avi"))
    with pytest.raises(SmplIkError, match="empty.mp4: not a video"):
        video.pose_from_video(video_clips.empty_clip(tmp_path / "empty.mp4"))
    with pytest.raises(SmplIkError, match="no such file"):
        video.pose_from_video(tmp_path / "missing.mp4")
    if video_clips.PHOTO.exists():
        with pytest.raises(SmplIkError, match="still image"):
            video.pose_from_video(video_clips.PHOTO)
    with pytest.raises(SmplIkError, match="step 0"):
        video.pose_from_video(text, video.VideoClip(step=0))


def test_warm_start_lands_where_the_cold_fit_does():
    """fit_to_image warm-started from its own cold fit of the same photo stays on it: a few
    steps, its keypoints as close to the detector's (within half a pixel, median), the pose
    (joints about the pelvis) within 3 cm, along the camera's ray too (which one photo shows
    least: the warm steps read depth as the cold fit does, from MediaPipe and the lifter; from
    MediaPipe alone a hand moved about 6 cm along it here), and the body's place within 5 cm."""
    needs_video()
    from models.body.model import load_body_model
    from models.photo.camera import default_camera
    from models.photo.detect import detect_people, read_image
    from models.photo.fit import FitOptions, fit_to_image

    rgb = read_image(video_clips.PHOTO)
    person = detect_people(rgb)[0]
    body = load_body_model()
    rest = body.rest_joints(np.zeros(10))
    camera = default_camera(rgb.shape[1], rgb.shape[0])
    cold = fit_to_image(person, rest, camera, body=body)
    warm = fit_to_image(person, rest, camera, body=body,
                        options=FitOptions(start=(cold.local_rot, cold.trans), iterations=3))
    assert warm.iterations <= 3 and warm.start.method == "warm"
    assert np.nanmedian(warm.keypoint_error_px) < np.nanmedian(cold.keypoint_error_px) + 0.5
    pose = (warm.joints - warm.joints[0]) - (cold.joints - cold.joints[0])
    assert np.abs(pose).max() < 0.03
    assert np.linalg.norm(warm.joints[0] - cold.joints[0]) < 0.05


# --- scripts/video_to_smpl.py -----------------------------------------------------------------

def run_script(*args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "video_to_smpl.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def test_a_folder_on_a_dask_cluster_gives_one_file_per_clip(tmp_path):
    """Two clips (one in a sub-folder) and a broken file, on a local dask cluster of two
    workers: a motion file per clip, in SMPL's frame at the video's rate over the step, and
    none for the broken file (exit status 1, no partial file left)."""
    needs_video()
    pytest.importorskip("dask.distributed")
    clips = tmp_path / "clips"
    (clips / "sub").mkdir(parents=True)
    video_clips.standing_clip(clips / "a.mp4", frames=6)
    video_clips.standing_clip(clips / "sub" / "b.mp4", frames=6, seed=1)
    (clips / "broken.mp4").write_text("not a video\n")
    out = tmp_path / "out"
    r = run_script(clips, "--out", out, "--executor", "dask", "--jobs", "2", "--step", "2")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 of 3 videos fitted" in r.stdout and "broken.mp4: not a video" in r.stdout
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == ["a.npz", "sub/b.npz"]
    for name in written:
        with np.load(out / name, allow_pickle=False) as f:
            assert f["poses"].shape == (3, 72) and f["trans"].shape == (3, 3)
            assert float(f["mocap_framerate"]) == pytest.approx(video_clips.FPS / 2)
            assert str(f["up_axis"]) == "Y" and f["source_frames"].tolist() == [0, 2, 4]
            assert f["contact"].shape == (3, 2) and f["camera_rotation"].shape == (3, 3)
    again = run_script(clips / "a.mp4", "--out", out)
    assert again.returncode == 0 and "skipped" in again.stdout


def test_the_script_writes_the_shape_it_fitted(tmp_path):
    """--fit-shape: the motion file's betas are the person's, fitted over the clip (12
    frames), not the average body's zeros; without it they stay zero."""
    needs_video()
    clip = video_clips.standing_clip(tmp_path / "a.mp4", frames=12)
    for flags, fitted in (((), False), (("--fit-shape",), True)):
        out = tmp_path / ("shaped" if fitted else "plain")
        r = run_script(clip, "--out", out, *flags)
        assert r.returncode == 0, r.stdout + r.stderr
        with np.load(out / "a.npz", allow_pickle=False) as f:
            assert (np.abs(f["betas"]).max() > 0.05) == fitted


def test_the_floor_comes_from_where_the_feet_rest(rng):
    """Contact points spread over a floor tilted 15 degrees toward the camera give its normal
    (within 1 degree, with 1 cm of noise on each point) whatever the first guess (20 degrees
    off); points along one line turn the guess square to it; a few points, or points on uneven
    ground (not flat), leave it."""
    from models.core.rotations import axis_angle_to_matrix, unit

    tilt = axis_angle_to_matrix(np.array([np.radians(15.0), 0.0, 0.0]))
    truth = tilt @ [0.0, 1.0, 0.0]
    flat = np.stack([rng.uniform(-1, 1, 200), np.zeros(200), rng.uniform(-1, 1, 200)], axis=1)
    points = flat @ tilt.T + [0.0, -1.0, -4.0] + 0.01 * rng.normal(size=(200, 3))
    guess = axis_angle_to_matrix(np.array([0.0, 0.0, np.radians(20.0)])) @ truth
    angle = lambda a, b: np.degrees(np.arccos(np.clip(a @ b, -1, 1)))   # noqa: E731
    assert angle(contacts._floor_up(points, guess), truth) < 1.0
    line = points.copy()
    line[:, 2] = -4.0                    # a line across the picture (x only): the tilt stays open
    square = contacts._floor_up(line, unit(guess))
    assert abs(square @ [1.0, 0.0, 0.0]) < 0.05 and angle(square, guess) > 5.0
    assert np.allclose(contacts._floor_up(points[:5], guess), guess)
    # feet resting on uneven ground (heights 0.3 m apart at random): no one floor, the guess stays
    bumpy = points + np.outer(rng.choice([0.0, 0.3], size=200), truth)
    assert np.allclose(contacts._floor_up(bumpy, guess), guess)


def test_a_foot_wobbling_in_depth_only_is_slow():
    """A monocular fit's depth wobbles: a foot 4 m away, 1 m below the camera's axis, moving
    back and forth along the camera's Z counts only as fast as its image moves, a quarter of
    its 3D speed at that angle (1 m over 4 m); one moving sideways is as fast as it is."""
    t = np.arange(30)
    along = np.stack([np.full(30, 0.1), np.full(30, -1.0), -4.0 + 0.03 * np.sin(t)], axis=1)
    across = np.stack([0.1 + 0.03 * t, np.full(30, -1.0), np.full(30, -4.0)], axis=1)
    in_3d = np.linalg.norm(np.gradient(along, axis=0), axis=1) * 30.0
    assert np.median(contacts._lateral_speed(along, 30.0)) < 0.3 * np.median(in_3d)
    assert np.median(contacts._lateral_speed(across, 30.0)) == pytest.approx(0.9, rel=0.01)


def test_the_distance_from_the_camera_is_smoothed_along_the_ray(open_body):
    """A body walking toward the camera at 0.9 m/s whose fitted distance jumps 0.4 m further
    for five frames (the wander one camera leaves, 003_02 of the varied clips): after the clip's
    smoothing the pelvis is within 0.13 m of the steady walk (the 1.5-frame Gaussian on the
    poses alone leaves most of the dip) and the walk away from the dip is kept to 1 cm. The
    smoothing moves each pelvis along its own ray through the camera (its place in the
    picture stays) to the smoothed distance."""
    from models.motion.temporal import local_linear

    count, fps = 60, 30.0
    rest = open_body.rest_joints(np.zeros(10))
    local = np.broadcast_to(np.eye(3), (count, NUM_JOINTS, 3, 3)).copy()
    walk = np.stack([np.full(count, 0.3), np.full(count, -0.2), -6.0 + 0.03 * np.arange(count)], axis=1)
    fitted = walk.copy()
    fitted[28:33] *= (fitted[28:33, 2] - 0.4)[:, None] / fitted[28:33, 2:3]   # 0.4 m further, same ray
    trans = fitted - rest[0]
    options = video.VideoOptions(lock_feet=False)
    found = np.ones(count, dtype=bool)
    fits = video.ClipFits(frames=list(range(count)), local_rot=list(local), trans=list(trans), found=found)
    _, smoothed, *_ = video._finish(fits, rest, fps, options, "clip", [])
    pelvis = smoothed + rest[0]
    assert np.linalg.norm(pelvis - walk, axis=1).max() < 0.13
    away = np.r_[0:10, 50:count]
    assert np.linalg.norm(pelvis[away] - walk[away], axis=1).max() < 0.01
    moved = video.smooth_depth(trans, rest, 6.0) + rest[0]
    assert np.allclose(moved / np.linalg.norm(moved, axis=1, keepdims=True),
                       fitted / np.linalg.norm(fitted, axis=1, keepdims=True), atol=1e-12)
    assert np.allclose(-moved[:, 2], local_linear(-fitted[:, 2], 6.0), atol=1e-12)


def test_the_shape_fitted_over_the_clip(standing):
    """VideoOptions(fit_shape=True): the motion comes with the person's betas (not the
    average body's) at the average body's height, its joints are that body's, and the
    progress counts both passes up to done == total."""
    from models.body.measure import measure
    from models.body.model import load_body_model

    path, _ = standing
    steps = video.video_steps(path, options=video.VideoOptions(fit_shape=True))
    progress = []
    with pytest.raises(StopIteration) as stop:
        while True:
            progress.append(next(steps))
    motion = stop.value.value
    body = load_body_model()
    assert np.abs(motion.betas).max() > 0.05
    assert measure(body, motion.betas).height == pytest.approx(measure(body, np.zeros(10)).height, abs=1e-3)
    rest = body.rest_joints(motion.betas)
    np.testing.assert_allclose(forward_kinematics(motion.local_rot, rest, PARENTS, motion.trans).positions,
                               motion.joints, atol=1e-9)
    done = [d for d, _ in progress]
    assert done == sorted(done) and progress[-1][0] == progress[-1][1] == 2 * 24


def test_a_known_height_is_the_fitted_bodys(standing):
    """VideoOptions(height_m=...) fits the shape as fit_shape does and keeps the person's height
    (to 1 mm); a height no person has is refused, naming it."""
    from models.body.measure import measure
    from models.body.model import load_body_model

    path, _ = standing
    motion = video.pose_from_video(path, video.VideoClip(frame_end=12), options=video.VideoOptions(height_m=1.62))
    assert measure(load_body_model(), motion.betas).height == pytest.approx(1.62, abs=1e-3)
    with pytest.raises(SmplIkError, match="height 3 m"):
        video.pose_from_video(path, options=video.VideoOptions(height_m=3.0))

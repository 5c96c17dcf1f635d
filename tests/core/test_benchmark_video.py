"""scripts/benchmark_video.py (benchmarks/video.py) and the truth benchmarks/render.py renders: the
measures over time on tracks with known answers, the camera and contacts of a clip's truth
(no Blender), the clips chosen, and one tiny run end to end (rendered headless, then the
video pipeline) for the JSON's layout."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks import render as rmv
from benchmarks import video as bv
from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.metrics import acceleration_error, foot_skating, procrustes_error
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import PARENTS
from models.photo.camera import default_camera

ROOT = Path(__file__).resolve().parents[2]

SHARED = ROOT.parent / "shared" / "data" / "mocap"
VARIED = SHARED / "cmu_varied"
WALK = SHARED / "m21" / "m21_data_content_walk.bvh"
PYTHON = ROOT / ".venv" / "bin" / "python"
PYTHON = str(PYTHON) if PYTHON.exists() else sys.executable
needs_mocap = pytest.mark.skipif(not VARIED.is_dir() or not WALK.is_file(),
                                 reason=f"the shared motion capture ({SHARED}) is absent")


# --- measures -------------------------------------------------------------------------------
def test_a_constant_velocity_track_has_no_acceleration_error_against_any_other(rng):
    t = np.arange(20.0)[:, None, None]
    start, velocity = rng.normal(size=(2, 1, 5, 3))
    track = start + velocity * t
    assert acceleration_error(track, track) == 0.0
    other = rng.normal(size=(1, 5, 3)) + rng.normal(size=(1, 5, 3)) * t   # another start and speed
    assert acceleration_error(track, other) < 1e-12


def test_a_known_acceleration_gives_its_size():
    t = np.arange(30.0)[:, None, None]
    accel = np.array([0.003, -0.004, 0.0])            # |a| = 0.005 a frame squared, every joint
    moving = np.broadcast_to(0.5 * accel * t ** 2, (30, 4, 3))
    assert acceleration_error(moving, np.zeros((30, 4, 3))) == pytest.approx(0.005, rel=1e-9)
    # one joint of four jitters: frame 10 off by e moves three second differences by e, 2e, e
    jitter = np.zeros((30, 4, 3))
    jitter[10, 2, 1] = 0.01
    assert acceleration_error(jitter, np.zeros_like(jitter)) == pytest.approx(4 * 0.01 / (28 * 4))


def test_a_nan_frame_leaves_out_the_differences_it_enters():
    track = np.zeros((9, 2, 3))
    track[5:] += 1.0                                   # a jump at 5 ...
    track[4] = np.nan                                  # ... hidden by a gap before it
    assert acceleration_error(track, np.zeros_like(track)) == pytest.approx(0.0)
    track[4] = 0.0
    assert acceleration_error(track, np.zeros_like(track)) > 0.1
    assert np.isnan(acceleration_error(np.full((5, 2, 3), np.nan), np.zeros((5, 2, 3))))
    assert np.isnan(acceleration_error(np.zeros((2, 2, 3)), np.zeros((2, 2, 3))))


def test_foot_skating_is_the_slide_across_the_floor_while_in_contact():
    t = np.arange(10.0)
    feet = np.zeros((10, 2, 3))
    feet[:, 0, 0] = 0.002 * t                          # the left foot slides 2 mm a frame along x ...
    feet[:, 0, 1] = 0.005 * t                          # ... and rises 5 mm a frame (not a slide)
    feet[:, 1, 2] = 0.1 * t                            # the right foot swings 10 cm a frame
    contact = np.zeros((10, 2), dtype=bool)
    contact[:, 0] = True
    contact[3:5, 1] = True                             # one right step in contact on both frames
    feet[4, 1, 2] = feet[3, 1, 2] + 0.001              # that step slides 1 mm
    expected = (9 * 0.002 + 0.001) / 10
    assert foot_skating(feet, contact) == pytest.approx(expected)
    # the same along a tilted floor: the up axis turned with the feet
    turn = axis_angle_to_matrix(np.array([0.3, 0.0, 0.2]))
    assert foot_skating(feet @ turn.T, contact, turn @ [0.0, 1.0, 0.0]) == pytest.approx(expected)
    contact[:] = False
    contact[::2] = True                                # never in contact twice running
    assert np.isnan(foot_skating(feet, contact))


def test_procrustes_error_scores_each_pose_of_a_batch_on_its_own(rng):
    p, g = rng.normal(size=(2, 6, 24, 3))
    batch = procrustes_error(p, g)
    assert batch.shape == (6,)
    assert np.allclose(batch, [procrustes_error(a, b) for a, b in zip(p, g)])
    turn = axis_angle_to_matrix(rng.normal(size=(6, 3)))
    assert procrustes_error(2.0 * g @ np.swapaxes(turn, -1, -2) + 1.0, g).max() < 1e-12


def test_clips_are_joined_so_no_difference_spans_two():
    a, b = np.zeros((4, 24, 3)), np.ones((5, 24, 3))   # a jump of 1 m between the clips
    assert acceleration_error(bv.joined([a, b]), np.zeros((10, 24, 3))) == 0.0
    contact = bv.joined([np.ones((4, 2)), np.ones((5, 2))]) == 1
    assert foot_skating(bv.joined([a, b])[:, :2], contact) == 0.0


def test_the_frame_cap_takes_clips_in_order_and_a_short_clip_leaves_its_rest_to_the_next(tmp_path):
    lengths = {"a": 400, "b": 91, "c": 400, "d": 400}      # video frames each clip has

    def fake_render(path, video, options):
        return SimpleNamespace(frames=np.arange(min(options.frames, lengths[path.stem])), render_s_per_frame=0.0)

    def budget(per_clip, max_frames):
        clips = [Path(f"{n}.bvh") for n in lengths]
        truths = bv.render_clips(clips, per_clip, max_frames, rmv.RenderOptions(), tmp_path, fake_render)
        return [len(t.frames) for t in truths]

    assert budget(150, 300) == [150, 91, 59]
    assert budget(150, 243) == [150, 91]                  # 2 frames are too few for an acceleration
    assert budget(150, None) == [150, 91, 150, 150]
    assert budget(100, 50) == [50]


@needs_mocap
def test_the_default_clips_are_the_held_out_ones():
    names = [p.name for p in bv.choose_clips(VARIED)]
    assert names == ["002_05.bvh", "003_02.bvh", "005_07.bvh", "005_16.bvh"]
    m21 = [p.name for p in bv.choose_clips(SHARED / "m21")]
    assert "m21_data_t.bvh" not in m21 and len(m21) == 13
    assert [p.name for p in bv.choose_clips(VARIED, ["005_16", "002_05.bvh"])] == ["002_05.bvh", "005_16.bvh"]
    with pytest.raises(SmplIkError, match="no clip named nope"):
        bv.choose_clips(VARIED, ["nope"])


# --- the truth of a rendered clip -----------------------------------------------------------
def test_the_camera_frames_every_point_tightly(rng):
    camera = default_camera(1280, 720)
    points = rng.normal(size=(500, 3)) * [1.5, 0.5, 1.0] + [3.0, 0.9, -2.0]
    rot, position = rmv.frame_camera(points, np.array([0.0, 0.0, 1.0]), camera)
    assert np.allclose(rot.T @ rot, np.eye(3)) and np.linalg.det(rot) > 0
    assert abs(rot[1, 0]) < 1e-12                       # level: the camera's x axis is horizontal
    assert np.degrees(np.arcsin(rot[1, 2])) == pytest.approx(rmv.TILT_DEG)   # its back tilted up
    pixels = camera.project((points - position) @ rot)
    pad = rmv.MARGIN * camera.height
    lo, hi = pixels.min(0), pixels.max(0)
    assert (lo >= pad - 1e-6).all() and hi[0] <= camera.width - pad + 1e-6 and hi[1] <= camera.height - pad + 1e-6
    slack = np.concatenate([lo - pad, [camera.width - pad - hi[0], camera.height - pad - hi[1]]])
    assert slack.min() < 0.5                            # some side touches the margin: no nearer camera fits


@pytest.mark.parametrize("azimuth", [rmv.AZIMUTH_DEG, -90.0, 150.0])
def test_the_camera_stands_azimuth_degrees_to_the_bodys_left(rng, azimuth):
    camera = default_camera(1280, 720)
    points = rng.normal(size=(200, 3)) * [0.3, 0.8, 0.3] + [0.0, 0.9, 0.0]
    facing = np.array([1.0, 0.0, 0.0])                   # the body faces +X; its left is -Z
    rot, position = rmv.frame_camera(points, facing, camera, azimuth)
    flat = (position - 0.5 * (points.min(0) + points.max(0)))[[0, 2]]
    angle = np.degrees(np.arctan2(-flat[1], flat[0]))    # from the facing toward the left
    assert angle == pytest.approx(azimuth, abs=1e-6)
    options = rmv.RenderOptions(azimuth=azimuth)
    assert ("azimuth" in options.key()) == (azimuth != rmv.AZIMUTH_DEG)   # older caches still count


def test_a_foot_is_in_contact_where_it_is_low_and_slow():
    fps = 30.0
    feet = np.zeros((12, 2, 3))
    feet[:, :, 1] = 0.04                                # planted 4 cm up
    feet[6:, 0, 2] = 0.03 * np.arange(6)                # the left foot slides 3 cm a frame (0.9 m/s) after 7
    feet[:, 1, 1] = 0.04 + 0.015 * np.arange(12)        # the right foot rises 1.5 cm a frame (0.45 m/s)
    contact = rmv.foot_contacts(feet, fps)
    assert contact[:6, 0].all() and not contact[6:, 0].any()
    assert not contact[:, 1].any()                      # low at first, but never slow enough
    feet[:, 1, 1] = 0.04 + 0.0045 * np.arange(12)       # rising slowly (0.135 m/s): low for 3 cm
    contact = rmv.foot_contacts(feet, fps)
    assert contact[:, 1].tolist() == [True] * 7 + [False] * 5


@pytest.fixture(scope="module")
def walk_scene():
    if not WALK.is_file():
        pytest.skip(f"the shared motion capture ({WALK}) is absent")
    return rmv.clip_scene(WALK, rmv.RenderOptions(frames=60, resolution=(640, 360)))


def test_the_truth_is_the_rendered_body_in_the_camera_frame(walk_scene, open_body):
    truth, scene = walk_scene.truth, walk_scene
    camera = default_camera(640, 360)
    assert truth["focal_px"] == pytest.approx(camera.focal_px)
    # the joints are the rendered body's joints seen from the camera: the world's joints by the
    # camera's pose, and forward kinematics of the truth's own rotations and root
    world = truth["joints"] @ scene.rotation.T + scene.position
    rest = open_body.rest_joints(truth["betas"])
    again = forward_kinematics(truth["local_rot"], rest, PARENTS, truth["trans"]).positions
    assert np.abs(again - truth["joints"]).max() < 1e-9
    vertices = scene.vertices[:, ::50].astype(np.float64)
    inside = camera.project((vertices - scene.position) @ scene.rotation)
    assert np.isfinite(inside).all() and (inside >= 0).all() and (inside <= [640, 360]).all()
    assert np.allclose(truth["up"], scene.rotation.T @ [0.0, 1.0, 0.0])
    assert world[..., 1].min() > scene.floor            # the joints are above the floor
    # 60 fps walking, every second frame: 30 fps, and each foot on the floor some of the time,
    # never both off for long
    assert truth["fps"] == pytest.approx(30.0, rel=1e-3)
    assert np.array_equal(truth["frames"], np.arange(0, 120, 2))
    share = truth["contact"].mean(0)
    assert (share > 0.2).all() and (share < 0.9).all(), share
    assert truth["contact"].any(1).mean() > 0.6


def test_the_truth_of_a_walk_hardly_skates(walk_scene):
    truth = walk_scene.truth
    feet = truth["joints"][:, [rmv.CONTACT_INDICES]][:, 0]
    assert 1000 * foot_skating(feet, truth["contact"], truth["up"]) < 5.0   # below CONTACT_SPEED's 10 mm a frame


# --- one tiny run end to end ----------------------------------------------------------------
@needs_mocap
@pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="bpy is not installed (requirements.txt)")
def test_a_tiny_run_writes_both_methods_figures(tmp_path, detector):
    out = tmp_path / "bench.json"
    done = subprocess.run([PYTHON, str(ROOT / "scripts" / "benchmark_video.py"), "--data", str(VARIED),
                           "--clips", "002_05", "--frames-per-clip", "12", "--resolution", "480", "270",
                           "--json", str(out), "--cache", str(tmp_path / "clips")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["frames"] == 12 and report["clips"] == ["002_05.bvh"] and report["data"] == str(VARIED)
    for method in ("video", "per_frame"):
        figures = report["methods"][method]
        assert set(figures) >= {"mpjpe_mm", "pa_mpjpe_mm", "accel_mm", "skate_mm", "up_deg", "fps"}
        assert 0 < figures["pa_mpjpe_mm"] <= figures["mpjpe_mm"] < 400
        assert 0 <= figures["up_deg"] < 30     # the camera is tilted TILT_DEG: found within reason
        assert figures["fps"] > 0
    # the video pipeline's smoothing shows where the per-frame baseline jitters
    assert report["methods"]["video"]["accel_mm"] < report["methods"]["per_frame"]["accel_mm"]
    assert report["per_clip"][0]["frames"] == 12
    clips = list((tmp_path / "clips").glob("*.mp4"))
    assert len(clips) == 1 and rmv.truth_path(clips[0]).exists()
    # a rerun reads the cached clip instead of rendering it
    stamp = clips[0].stat().st_mtime_ns
    truth = rmv.render_clip(VARIED / "002_05.bvh", clips[0],
                            rmv.RenderOptions(frames=12, resolution=(480, 270)))
    assert clips[0].stat().st_mtime_ns == stamp and len(truth.frames) == 12

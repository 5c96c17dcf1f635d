"""scripts/render_photo_set.py: motion capture rendered as labelled pictures that
scripts/benchmark_photo.py reads, the labels on the body in the pictures."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.photo_labels import read_labels
from benchmarks.render import TILT_DEG
from models.photo.camera import default_camera

ROOT = Path(__file__).resolve().parents[2]

WALK = ROOT.parent / "shared" / "data" / "mocap" / "m21" / "m21_data_content_walk.bvh"
PYTHON = ROOT / ".venv" / "bin" / "python"
PYTHON = str(PYTHON) if PYTHON.exists() else sys.executable


@pytest.mark.skipif(not WALK.is_file(), reason=f"the shared motion capture ({WALK.parent}) is absent")
@pytest.mark.skipif(importlib.util.find_spec("bpy") is None or importlib.util.find_spec("cv2") is None,
                    reason="bpy or OpenCV is not installed (requirements.txt, requirements-photo.txt)")
def test_pictures_and_labels_of_a_walk_that_the_benchmark_reads(tmp_path):
    """Three pictures of a walk and a clip that is not there: the walk's pictures and labels are
    written, the missing clip is named and the exit status is 1. The labels read as the
    benchmark reads them; their 2D joints are the 3D ones through the default camera for the
    picture's size; each labelled joint lies on the body (not the background's or the
    floor's colour) and the box holds them all."""
    out = tmp_path / "set"
    done = subprocess.run([PYTHON, str(ROOT / "scripts" / "render_photo_set.py"), str(WALK),
                           str(tmp_path / "nowhere.bvh"), "--out", str(out), "--frames", "3",
                           "--resolution", "320", "240"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "nowhere.bvh" in done.stdout and "3 pictures of 1 of 2 clips" in done.stdout
    labels = json.loads((out / "labels.json").read_text())
    assert [f["image"] for f in labels["frames"]] == [f"m21_data_content_walk_{n:03d}.png" for n in range(3)]
    frames = read_labels(out)
    camera = default_camera(320, 240)
    import cv2

    for entry, frame in zip(labels["frames"], frames):
        points = np.array(entry["joints_3d_camera_m"]) * [1.0, -1.0, -1.0]
        pixels = np.array(entry["joints_2d_px"])
        np.testing.assert_allclose(camera.project(points), pixels, atol=1e-6)
        assert set(frame.joints_3d) >= {"left_shoulder", "right_knee", "neck", "nose", "head_top"}
        # the floor's up, seen by a camera looking TILT_DEG down: leaning that far toward it
        assert np.degrees(np.arccos(frame.up[1])) == pytest.approx(TILT_DEG)
        assert frame.up[2] > 0
        image = cv2.imread(str(frame.image))
        assert image.shape == (240, 320, 3)
        x0, y0, x1, y1 = frame.box
        assert (pixels >= (x0, y0)).all() and (pixels <= (x1, y1)).all()
        # the body is skin-coloured: redder than it is blue, where the floor and background are grey-blue
        names = labels["joint_names"]
        for name in ("pelvis", "left_knee", "right_knee", "spine3"):
            u, v = np.round(pixels[names.index(name)]).astype(int)
            b, g, r = image[v, u].astype(int)
            assert r > b + 8, (frame.image.name, name, (r, g, b))


@pytest.mark.skipif(not WALK.is_file(), reason=f"the shared motion capture ({WALK.parent}) is absent")
@pytest.mark.skipif(importlib.util.find_spec("bpy") is None or importlib.util.find_spec("cv2") is None,
                    reason="bpy or OpenCV is not installed (requirements.txt, requirements-photo.txt)")
def test_several_azimuths_picture_the_same_poses_from_each_side(tmp_path):
    """--azimuth 30 -90: each of 3 frames pictured from both sides, named by view; the same pose in
    both (its joints' distances from each other agree), seen from 120 degrees apart about the
    vertical (the hips' left-to-right direction turned by that much)."""
    out = tmp_path / "set"
    done = subprocess.run([PYTHON, str(ROOT / "scripts" / "render_photo_set.py"), str(WALK), "--out", str(out),
                           "--frames", "3", "--resolution", "160", "120", "--azimuth", "30", "-90"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    labels = json.loads((out / "labels.json").read_text())
    stem = "m21_data_content_walk"
    assert [f["image"] for f in labels["frames"]] == [f"{stem}_az{a}_{n:03d}.png" for a in (30, -90) for n in range(3)]
    assert all((out / f["image"]).is_file() for f in labels["frames"])
    names = labels["joint_names"]
    for n in range(3):
        a, b = (np.array(labels["frames"][k]["joints_3d_camera_m"])[:24] for k in (n, n + 3))
        np.testing.assert_allclose(np.linalg.norm(a[:, None] - a[None], axis=-1),
                                   np.linalg.norm(b[:, None] - b[None], axis=-1), atol=1e-6)
        across = [x[names.index("left_hip")] - x[names.index("right_hip")] for x in (a, b)]
        # OpenCV axes: y down; the camera is tilted alike in both views, so compare in the floor's
        # plane as the camera sees it (x and z), where a turn of the view turns the hips' direction
        angles = [np.degrees(np.arctan2(v[2], v[0])) for v in across]
        turn = (angles[1] - angles[0] + 180.0) % 360.0 - 180.0
        assert abs(abs(turn) - 120.0) < 12.0, turn

"""The motion I/O benchmark in Blender: a synthetic AMASS clip imported and exported by the
add-on's operators, timed."""
import tempfile
from pathlib import Path

import numpy as np

from models.core.rotations import axis_angle_to_matrix, matrix_to_axis_angle

from .timing import timed

GOAL_FRAMES_PER_S = 5000


def synthetic_clip(path, frames, fps, rng):
    """Write a synthetic AMASS-style clip of `frames` random poses at `fps` to the .npz `path`
    (Z-up: the root carries +90 degrees about X); returns its poses (T, 72) and trans (T, 3)."""
    poses = rng.normal(scale=0.3, size=(frames, 72))
    poses[:, :3] = [np.pi / 2, 0.0, 0.0]
    poses[:, :3] += rng.normal(scale=0.05, size=(frames, 3))
    trans = np.cumsum(rng.normal(scale=0.01, size=(frames, 3)), axis=0) + [0.0, 0.0, 0.9]
    np.savez(path, poses=poses, trans=trans, betas=np.zeros(16), gender=np.array("neutral"),
             mocap_framerate=np.array(float(fps)))
    return poses, trans


def fresh_scene(bpy, fps):
    """An empty scene at `fps` frames a second."""
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = fps, 1.0


def import_clip(bpy, path, **options):
    """smpl_ik.import_motion of `path` (the floor option off unless given: still measured, not
    moved); returns the new body. AssertionError when the operator does not finish."""
    options.setdefault("floor", "OFF")
    assert bpy.ops.smpl_ik.import_motion(filepath=str(path), **options) == {"FINISHED"}
    return bpy.context.active_object


def rotation_error(a, b):
    """Largest angle (radians) between (T, 72) axis-angle poses."""
    ma, mb = (axis_angle_to_matrix(np.asarray(p, np.float64).reshape(-1, 24, 3)) for p in (a, b))
    return float(np.linalg.norm(matrix_to_axis_angle(np.swapaxes(ma, -1, -2) @ mb), axis=-1).max())


def measure(bpy, frames, runs, evaluated_frames, on_run=None):
    """({"import", "import_resampled", "export", "export_evaluated": [seconds per run]},
    {"rotation_rad_max", "trans_m_max"} of the first run's round trip): a `frames`-frame clip
    at 30 fps imported and its keys exported, then exported frame by frame (`evaluated_frames`)
    with a constraint on a bone, and a 120 fps clip imported resampled to 30; on_run(run, seconds)
    is called after each of `runs` runs."""
    rng = np.random.default_rng(0)
    tmp = Path(tempfile.mkdtemp(prefix="smpl_ik_motion_bench_"))
    same, fast = tmp / "clip_30fps.npz", tmp / "clip_120fps.npz"
    poses, trans = synthetic_clip(same, frames, 30, rng)
    synthetic_clip(fast, frames, 120, rng)
    seconds = {"import": [], "import_resampled": [], "export": [], "export_evaluated": []}
    errors = {}
    for run in range(runs):
        fresh_scene(bpy, 30)
        arm, took = timed(lambda: import_clip(bpy, same))
        seconds["import"].append(took)
        out = tmp / "export.npz"
        seconds["export"].append(timed(lambda: bpy.ops.smpl_ik.export_motion(
            filepath=str(out), frame_start=1, frame_end=frames, up_axis="Z"))[1])
        if run == 0:
            with np.load(out) as d:
                errors = {"rotation_rad_max": rotation_error(d["poses"], poses),
                          "trans_m_max": float(np.abs(d["trans"] - trans).max())}
        limit = arm.pose.bones["left_elbow"].constraints.new("LIMIT_ROTATION")
        limit.use_limit_x = True
        seconds["export_evaluated"].append(timed(lambda: bpy.ops.smpl_ik.export_motion(
            filepath=str(out), frame_start=1, frame_end=evaluated_frames))[1])
        fresh_scene(bpy, 30)
        seconds["import_resampled"].append(timed(lambda: import_clip(bpy, fast))[1])
        if on_run is not None:
            on_run(run, seconds)
    return seconds, errors

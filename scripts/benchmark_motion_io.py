"""Benchmark AMASS motion in Blender: smpl_ik.import_motion and smpl_ik.export_motion.

    python scripts/benchmark_motion_io.py [--frames 20000] [--runs 5] [--evaluated-frames 500]
        [--json docs/figures/benchmark_motion_io.json]

Headless Blender (the bpy module) with the extension enabled, one BLAS thread. A synthetic
SMPL clip (72 pose values a frame, Z-up as AMASS stores it) is imported from an empty scene
onto a new open body (the operator end to end: reading, body, the floor's measurement, keys;
the floor option off, so that the round trip compares the file's own heights), at the scene's
rate and resampled from 120 to 30 fps; the body's keys are then exported; and, with a constraint on a
bone, exported frame by frame as Blender evaluates it. Each figure is the median of the runs.
The import-export round trip's largest differences come with the times. Goal: 5,000 frames/s.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import blender_session  # noqa: E402

GOAL_FRAMES_PER_S = 5000


def clip(path, frames, fps, rng):
    """Write a synthetic AMASS-style clip (Z-up: the root carries +90 degrees about X)."""
    import numpy as np

    poses = rng.normal(scale=0.3, size=(frames, 72))
    poses[:, :3] = [np.pi / 2, 0.0, 0.0]
    poses[:, :3] += rng.normal(scale=0.05, size=(frames, 3))
    trans = np.cumsum(rng.normal(scale=0.01, size=(frames, 3)), axis=0) + [0.0, 0.0, 0.9]
    np.savez(path, poses=poses, trans=trans, betas=np.zeros(16), gender=np.array("neutral"),
             mocap_framerate=np.array(float(fps)))
    return poses, trans


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def fresh_scene(bpy, fps):
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = fps, 1.0


def import_clip(bpy, path, **options):
    options.setdefault("floor", "OFF")   # still measured (the report says where the floor is), not moved
    assert bpy.ops.smpl_ik.import_motion(filepath=str(path), **options) == {"FINISHED"}
    return bpy.context.active_object


def rotation_error(a, b):
    """Largest angle (radians) between (T, 72) axis-angle poses."""
    import numpy as np

    from models.core.rotations import axis_angle_to_matrix, matrix_to_axis_angle

    ma, mb = (axis_angle_to_matrix(np.asarray(p, np.float64).reshape(-1, 24, 3)) for p in (a, b))
    return float(np.linalg.norm(matrix_to_axis_angle(np.swapaxes(ma, -1, -2) @ mb), axis=-1).max())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=20000, help="frames of the clip imported and exported")
    parser.add_argument("--runs", type=int, default=5, help="runs of each measurement (the median is reported)")
    parser.add_argument("--evaluated-frames", type=int, default=500,
                        help="frames of the frame-by-frame (constrained) export")
    parser.add_argument("--json", type=Path, default=ROOT / "docs" / "figures" / "benchmark_motion_io.json",
                        help="JSON output (default docs/figures/benchmark_motion_io.json, which the docs quote)")
    args = parser.parse_args(argv)
    bpy = blender_session.start()

    import numpy as np

    from models.core.files import write_json

    rng = np.random.default_rng(0)
    tmp = Path(tempfile.mkdtemp(prefix="smpl_ik_motion_bench_"))
    same, fast = tmp / "clip_30fps.npz", tmp / "clip_120fps.npz"
    poses, trans = clip(same, args.frames, 30, rng)
    clip(fast, args.frames, 120, rng)
    runs = {"import": [], "import_resampled": [], "export": [], "export_evaluated": []}
    errors = {}
    for run in range(args.runs):
        fresh_scene(bpy, 30)
        seconds, arm = timed(lambda: import_clip(bpy, same))
        runs["import"].append(seconds)
        out = tmp / "export.npz"
        seconds, _ = timed(lambda: bpy.ops.smpl_ik.export_motion(filepath=str(out), frame_start=1,
                                                                   frame_end=args.frames, up_axis="Z"))
        runs["export"].append(seconds)
        if run == 0:
            with np.load(out) as d:
                errors = {"rotation_rad_max": rotation_error(d["poses"], poses),
                          "trans_m_max": float(np.abs(d["trans"] - trans).max())}
        limit = arm.pose.bones["left_elbow"].constraints.new("LIMIT_ROTATION")
        limit.use_limit_x = True
        seconds, _ = timed(lambda: bpy.ops.smpl_ik.export_motion(filepath=str(out), frame_start=1,
                                                                   frame_end=args.evaluated_frames))
        runs["export_evaluated"].append(seconds)
        fresh_scene(bpy, 30)
        seconds, _ = timed(lambda: import_clip(bpy, fast))
        runs["import_resampled"].append(seconds)
        print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in runs.items()))
    frames = {"import": args.frames, "import_resampled": args.frames, "export": args.frames,
              "export_evaluated": args.evaluated_frames}
    result = {"frames": args.frames, "evaluated_frames": args.evaluated_frames, "runs": args.runs,
              "joints": 24, "blas_threads": os.environ["OPENBLAS_NUM_THREADS"],
              "goal_frames_per_s": GOAL_FRAMES_PER_S}
    for name, seconds in runs.items():
        median = float(np.median(seconds))
        result[name] = {"seconds_median": round(median, 3), "frames_per_s": round(frames[name] / median)}
    result["import_resampled"]["keys"] = args.frames // 4
    result["round_trip"] = {"rotation_urad_max": round(errors["rotation_rad_max"] * 1e6, 3),
                            "trans_um_max": round(errors["trans_m_max"] * 1e6, 3)}
    labels = {"import": "import, keys at the file's 30 fps", "import_resampled": "import, 120 fps resampled to 30",
              "export": "export from keys", "export_evaluated": "export evaluated frame by frame"}
    for name, label in labels.items():
        r = result[name]
        print(f"{label:34s} {frames[name]:6d} frames in {r['seconds_median']:.3f} s: {r['frames_per_s']:,} frames/s")
    print(f"round trip: rotations within {errors['rotation_rad_max']:.2e} rad, trans within {errors['trans_m_max']:.2e} m")
    write_json(args.json, result)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

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
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from benchmarks import blender_session
from benchmarks.motion_io import GOAL_FRAMES_PER_S, measure
from models.core.files import write_json

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"
LABELS = {"import": "import, keys at the file's 30 fps", "import_resampled": "import, 120 fps resampled to 30",
          "export": "export from keys", "export_evaluated": "export evaluated frame by frame"}


def print_run(run, seconds):
    print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in seconds.items()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=20000, help="frames of the clip imported and exported")
    parser.add_argument("--runs", type=int, default=5, help="runs of each measurement (the median is reported)")
    parser.add_argument("--evaluated-frames", type=int, default=500,
                        help="frames of the frame-by-frame (constrained) export")
    parser.add_argument("--json", type=Path, default=FIGURES / "benchmark_motion_io.json",
                        help="JSON output (default docs/figures/benchmark_motion_io.json, which the docs quote)")
    args = parser.parse_args(argv)
    bpy = blender_session.start()
    runs, errors = measure(bpy, args.frames, args.runs, args.evaluated_frames, print_run)
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
    for name, label in LABELS.items():
        r = result[name]
        print(f"{label:34s} {frames[name]:6d} frames in {r['seconds_median']:.3f} s: {r['frames_per_s']:,} frames/s")
    print(f"round trip: rotations within {errors['rotation_rad_max']:.2e} rad, "
          f"trans within {errors['trans_m_max']:.2e} m")
    write_json(args.json, result)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

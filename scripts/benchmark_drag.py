"""Benchmark a viewport drag: move an effector, solve, write the pose, evaluate the mesh.

    python scripts/benchmark_drag.py [--steps 200] [--json docs/figures/benchmark_drag.json]

Headless Blender (the bpy module) with the extension enabled: an open body with the six
default effectors; the left-wrist effector moves along a 20 cm circle in small steps, as a
mouse drag does. Each step is one depsgraph update, which runs the live-solving handler
(SMPL-IK, refinement on) and evaluates the armature and the skinned mesh (13,718 vertices).
Prints median / 90th percentile milliseconds per step (goal: under 16 ms, a 60 fps drag), the
share of it spent solving, the same with the raw network (refinement off), and the largest
wrist-to-effector distance seen. One BLAS thread, as on a busy machine.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import blender_session  # noqa: E402


def drag(bpy, solving, arm, wrist, steps, refine):
    """Per step: (total ms, solve ms, wrist error m)."""
    import numpy as np

    arm.smpl_ik.refine = refine
    start = wrist.location.copy()
    timed = solving.solve_body
    solve_ms = []

    def timing_solve(*args, **kwargs):
        t = time.perf_counter()
        try:
            return timed(*args, **kwargs)
        finally:
            solve_ms.append((time.perf_counter() - t) * 1e3)

    solving.solve_body = timing_solve   # the handler calls it through the module
    rows = []
    try:
        for k in range(steps + 5):
            angle = 2 * np.pi * k / steps
            wrist.location = start + type(start)((-0.1 + 0.1 * np.cos(angle), -0.1, 0.05 + 0.1 * np.sin(angle)))
            t = time.perf_counter()
            bpy.context.view_layer.update()
            total = (time.perf_counter() - t) * 1e3
            head = np.array(arm.matrix_world @ arm.pose.bones["left_wrist"].head)
            if k >= 5:  # the first steps load the network and warm caches
                rows.append((total, solve_ms[-1], float(np.linalg.norm(head - np.array(wrist.matrix_world.translation)))))
    finally:
        solving.solve_body = timed
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", type=Path, default=ROOT / "docs" / "figures" / "benchmark_drag.json",
                        help="JSON output (default docs/figures/benchmark_drag.json, which the docs quote)")
    args = parser.parse_args(argv)
    bpy = blender_session.start()
    import importlib

    import numpy as np

    solving = importlib.import_module(blender_session.MODULE + ".addon.solving")
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.smpl_ik.add_body()
    arm = bpy.context.active_object
    bpy.ops.smpl_ik.add_default_effectors()
    wrist = next(o for o in bpy.data.objects if o.type == "EMPTY" and o.smpl_ik_effector.joint == "left_wrist")
    result = {"steps": args.steps, "vertices": len(arm.smpl_ik.mesh.data.vertices), "effectors": 6,
              "blas_threads": os.environ["OPENBLAS_NUM_THREADS"], "goal_ms": 16.0}
    for name, refine in (("refined", True), ("raw_network", False)):
        rows = np.array(drag(bpy, solving, arm, wrist, args.steps, refine))
        result[name] = {"ms_median": round(float(np.median(rows[:, 0])), 2),
                        "ms_p90": round(float(np.percentile(rows[:, 0], 90)), 2),
                        "solve_ms_median": round(float(np.median(rows[:, 1])), 2),
                        "wrist_error_mm_max": round(float(rows[:, 2].max() * 1e3), 3)}
        r = result[name]
        print(f"{name:12s} step {r['ms_median']:6.2f} ms median, {r['ms_p90']:6.2f} ms p90 "
              f"(solve {r['solve_ms_median']:.2f} ms); wrist off its effector by at most {r['wrist_error_mm_max']:.3f} mm")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""Benchmark a viewport drag: move an effector, solve, write the pose, evaluate the mesh.

    python scripts/benchmark_drag.py [--steps 200] [--path-steps 40] [--passes 3]
        [--json docs/figures/benchmark_drag.json]

Headless Blender (the bpy module) with the extension enabled: an open body with the six
default effectors. Each step is one depsgraph update, which runs the live-solving handler
(SMPL-IK, refinement on, the dragged effector soft, Keep Pose While Dragging on as by
default) and evaluates the armature and the skinned mesh (13,718 vertices). One BLAS thread,
as on a busy machine.

Circle: the left-wrist effector moves along a 20 cm circle in small steps, as a mouse drag
does. Prints median / 90th percentile milliseconds per step (goal: under 16 ms, a 60 fps
drag; cpu_ms in the JSON is the process's CPU time for the step, which other programs on a
busy machine do not add to), the share of it spent solving, the largest wrist-to-effector distance seen and how far
the joints without an effector move a step (jump_mm: their mean distance from the step
before, the drag's continuity); the same with the raw network (refinement off), with Keep
Pose off and with the previous solver.

Path: the left-wrist effector moves 1 cm a step forward and up (45 degrees) from the T-pose,
40 cm in all; the straight arm reaches only the first steps, so the path ends out of reach.
Per step: the worst drift of a pinned effector from its joint, how far the ankle and foot
joints and the feet's heel, ball and toe points moved up or down, the wrist's miss against
the reachable minimum (the smallest miss long solves find, with every other effector held
and the feet planted), the joints' jump and the time. Run with today's solver, Keep Pose off
and the previous solver in the same run.

The previous solver is the Keep Pose drag before the drag steps were made cheap, rebuilt
from the core's public calls (benchmarks.drag.PreviousSolver, which the add-on solves with
in place of SMPL-IK while it runs): every step runs the network, decodes the
kept latent under the moved effectors, refines that (30 iterations at most) and finds the
new pose's latent (the flow backwards), and a step that starts to miss solves again from
the pose on screen. Each solver entry in the JSON says whether it kept the pose (keep_pose).
"""
import argparse
import os
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from benchmarks import blender_session
from benchmarks.drag import DragScene, circle_figures, path_figures
from models.body.model import load_body_model
from models.core.files import write_json

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200, help="steps of the circle drag")
    parser.add_argument("--path-steps", type=int, default=40, help="1 cm steps of the path drag")
    parser.add_argument("--passes", type=int, default=3,
                        help="times each solver drags the circle and the path, taking turns (all passes' times count)")
    parser.add_argument("--json", type=Path, default=FIGURES / "benchmark_drag.json",
                        help="JSON output (default docs/figures/benchmark_drag.json, which the docs quote)")
    args = parser.parse_args(argv)
    scene = DragScene.open_body(blender_session.start())
    result = {"steps": args.steps, "passes": args.passes, "vertices": len(scene.arm.smpl_ik.mesh.data.vertices),
              "effectors": 6, "blas_threads": os.environ["OPENBLAS_NUM_THREADS"], "goal_ms": 16.0}
    for name, r in circle_figures(scene, args.steps, args.passes).items():
        result[name] = r
        print(f"circle {name:15s} step {r['ms_median']:6.2f} ms median, {r['ms_p90']:6.2f} ms p90 "
              f"(CPU {r['cpu_ms_median']:.2f} / {r['cpu_ms_p90']:.2f})"
              f"(solve {r['solve_ms_median']:.2f} ms); wrist off its effector by at most "
              f"{r['wrist_error_mm_max']:.3f} mm; free joints move {r['jump_mm_mean']:.3f} mm a step")
    path = path_figures(scene, args.path_steps, args.passes, load_body_model(None).foot_contacts(np.zeros(10)))
    for name in ("solver", "keep_pose_off", "previous_solver"):
        r = path[name]
        print(f"path   {name:15s} step {r['ms_median']:6.2f} ms median, {r['ms_p90']:6.2f} ms p90 "
              f"(CPU {r['cpu_ms_median']:.2f} / {r['cpu_ms_p90']:.2f}); pins drift "
              f"<= {r['pin_drift_mm_max']:.3f} mm, feet move <= {r['foot_lift_mm_max']:.2f} mm, wrist ends "
              f"{r['wrist_miss_mm_end']:.1f} mm off ({r['miss_over_minimum_mm_end']:+.1f} mm over the reachable "
              f"minimum; at worst {r['miss_over_minimum_mm_max']:+.1f}); free joints move "
              f"{r['jump_mm_mean']:.2f} mm a step")
    result["path"] = path
    overflowed = path["minimum_solves_overflowed"]
    print(f"path: out of reach (long solves over 1 mm) at steps {path['out_of_reach_steps']}, "
          f"reachable minimum at the end {path['minimum_mm_end']:.1f} mm"
          + (f"; {overflowed} step(s) where a long solve overflowed (RuntimeWarning in models/ik/refine.py)"
             if overflowed else ""))
    write_json(args.json, result)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""Benchmark a viewport drag: move an effector, solve, write the pose, evaluate the mesh.

    python scripts/benchmark_drag.py [--steps 200] [--path-steps 40] [--passes 3]
        [--json docs/figures/benchmark_drag.json]

Headless Blender (the bpy module) with the extension enabled: an open body with the six
default effectors. Each step is one depsgraph update, which runs the live-solving handler
(SMPL-IK, refinement on, the dragged effector soft) and evaluates the armature and the
skinned mesh (13,718 vertices). One BLAS thread, as on a busy machine.

Circle: the left-wrist effector moves along a 20 cm circle in small steps, as a mouse drag
does. Prints median / 90th percentile milliseconds per step (goal: under 16 ms, a 60 fps
drag), the share of it spent solving, the same with the raw network (refinement off) and with
the previous solver, and the largest wrist-to-effector distance seen.

Path: the left-wrist effector moves 1 cm a step forward and up (45 degrees) from the T-pose,
40 cm in all; the straight arm reaches only the first steps, so the path ends out of reach.
Per step: the worst drift of a pinned effector from its joint, how far the ankle and foot
joints and the feet's heel, ball and toe points moved up or down, the wrist's miss against
the reachable minimum (the smallest miss long solves find, with every other effector held
and the feet planted), and the time. Run with today's solver and with the previous one
(every effector hard, a dragged one too; no joint limits, no planted feet) in the same run.
"""
import argparse
import importlib
import os
import sys
import time
import warnings
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import blender_session  # noqa: E402

FEET = ("left_ankle", "right_ankle", "left_foot", "right_foot")
LONG_SOLVE = 300   # refinement iterations of the solves that find the reachable minimum


class Timed:
    """Wraps the live-solving handler's solve_body (addon/pose/handlers.py calls it through its
    module) to time each solve."""

    def __init__(self, handlers):
        self.handlers, self.original, self.ms = handlers, handlers.solve_body, []

    def __enter__(self):
        def timing_solve(*args, **kwargs):
            t = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.ms.append((time.perf_counter() - t) * 1e3)
        self.handlers.solve_body = timing_solve
        return self

    def __exit__(self, *_exc):
        self.handlers.solve_body = self.original


def ext(module):
    return importlib.import_module(f"{blender_session.MODULE}.addon.{module}")


def core(module):
    """A models/ module as the extension loaded it (its classes are the ones the add-on checks)."""
    return importlib.import_module(f"{blender_session.MODULE}.models.{module}")


class PreviousSolver:
    """The solver before pins and soft effectors, built from the core's options in place of the
    add-on's solve_effectors while the block runs: every effector hard (a dragged one too), no
    joint limits, no planted feet, no floor, no warm start and no kept pose."""

    def __init__(self, solving):
        self.solving, self.original = solving, solving.solve_effectors

    def __enter__(self):
        smplik = core("ik.smplik")
        options = core("ik.refine").RefineOptions(joint_limits=False, plant_feet=False, give_way=False)
        effectors, bridge = ext("pose.effectors"), ext("com.bridge")

        def solve(arm, objs, dragged=(), give_way=(), current_pose=None, refine=None, mode=None):
            hard = [replace(e, soft=False) for e in effectors.core_effectors(arm, objs)]
            use = arm.smpl_ik.refine if refine is None else refine
            return smplik.load_smplik().solve(hard, bridge.rest_joints(arm), smplik.SolveOptions(
                refine=options if use else None, mode=mode or smplik.DEFAULT_MODE))
        self.solving.solve_effectors = solve
        return self

    def __exit__(self, *_exc):
        self.solving.solve_effectors = self.original


def joint_world(arm, name):
    import numpy as np

    return np.array(arm.matrix_world @ arm.pose.bones[name].head)


def start_over(bpy, arm):
    """The T-pose, every effector on its joint, no solve pending."""
    bpy.context.view_layer.objects.active = arm
    bpy.ops.smpl_ik.reset_pose()
    bpy.context.view_layer.update()


def drag(bpy, handlers, arm, wrist, steps, refine):
    """Circle drag; per step: (total ms, solve ms, wrist error m)."""
    import numpy as np

    arm.smpl_ik.refine = refine
    start_over(bpy, arm)
    start = wrist.location.copy()
    rows = []
    with Timed(handlers) as timed:
        for k in range(steps + 5):
            angle = 2 * np.pi * k / steps
            wrist.location = start + type(start)((-0.1 + 0.1 * np.cos(angle), -0.1, 0.05 + 0.1 * np.sin(angle)))
            t = time.perf_counter()
            bpy.context.view_layer.update()
            total = (time.perf_counter() - t) * 1e3
            if k >= 5:  # the first steps load the network and warm caches
                miss = np.linalg.norm(joint_world(arm, "left_wrist") - np.array(wrist.matrix_world.translation))
                rows.append((total, timed.ms[-1], float(miss)))
    arm.smpl_ik.refine = True
    return rows


def contact_heights(arm, contacts):
    """World Z of the feet's heel, ball and toe points in the pose on screen."""
    import numpy as np

    from models.core.kinematics import forward_kinematics
    from models.core.skeleton import PARENTS

    bridge = ext("com.bridge")
    local, trans = bridge.read_pose(arm, bridge.bone_axes(arm))
    fk = forward_kinematics(local, ext("com.bridge").rest_joints(arm), PARENTS, trans)
    world = np.array(arm.matrix_world)
    return (bridge.to_blender(contacts.positions(fk)) @ world[:3, :3].T + world[:3, 3])[:, 2]


def path_targets(arm, wrist, steps):
    """World positions (steps, 3) of the wrist effector along the path, from where it is."""
    import numpy as np

    forward = np.array(arm.matrix_world.to_3x3().normalized()) @ [0.0, -1.0, 0.0]
    direction = (forward + [0.0, 0.0, 1.0]) / np.sqrt(2.0)
    return np.array(wrist.location) + 0.01 * np.arange(1, steps + 1)[:, None] * direction


def path_drag(bpy, handlers, arm, effs, targets, contacts):
    """Drag the left-wrist effector through `targets` from the T-pose; per step a dict of the
    figures, and the core effectors of each step (as today's solver sees them: the wrist soft)."""
    import numpy as np
    from mathutils import Vector

    start_over(bpy, arm)
    wrist = effs["left_wrist"]
    pins = [o for j, o in effs.items() if j != "left_wrist"]
    feet = np.array([joint_world(arm, j)[2] for j in FEET])
    heights = contact_heights(arm, contacts)
    rows, problems = [], []
    with Timed(handlers) as timed:
        for step, target in enumerate(targets, 1):
            wrist.location = Vector(target)
            t = time.perf_counter()
            bpy.context.view_layer.update()
            total = (time.perf_counter() - t) * 1e3
            drift = max(float(np.linalg.norm(joint_world(arm, o.smpl_ik_effector.joint)
                                             - np.array(o.matrix_world.translation))) for o in pins)
            lift = max(np.abs([joint_world(arm, j)[2] for j in FEET] - feet).max(),
                       np.abs(contact_heights(arm, contacts) - heights).max())
            miss = float(np.linalg.norm(joint_world(arm, "left_wrist") - np.array(wrist.matrix_world.translation)))
            rows.append({"step": step, "ms": total, "solve_ms": timed.ms[-1], "pin_drift_mm": drift * 1e3,
                         "foot_lift_mm": float(lift) * 1e3, "wrist_miss_mm": miss * 1e3})
            objs = ext("pose.effectors").effectors_of(arm)
            problems.append(ext("pose.effectors").core_effectors(arm, objs, dragged={wrist.name}))
    return rows, problems


def reachable_minima(problems, rest, model):
    """The smallest wrist miss (metres) per step that long solves find with every other
    effector held and the feet planted as in the T-pose: the better of SMPL-IK's long solve and
    a long refinement from the previous step's minimum (a chain from the T-pose)."""
    import numpy as np

    from models.core.kinematics import forward_kinematics
    from models.core.skeleton import PARENTS
    from models.ik.refine import RefineOptions, planted_feet, refine_pose
    from models.ik.smplik import SolveOptions

    local, trans = np.tile(np.eye(3), (24, 1, 1)), np.zeros(3)
    rest_world = forward_kinematics(local, rest, PARENTS, trans).rotations
    options = RefineOptions(iterations=LONG_SOLVE)
    wrist = next(n for n, e in enumerate(problems[0]) if e.joint == "left_wrist")
    out, overflowed = [], 0
    for effectors in problems:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            tries = [model.solve(effectors, rest, SolveOptions(refine=options, current_pose=(local, trans))),
                     refine_pose(local, trans, rest, list(effectors) + planted_feet(effectors, rest_world), options)]
        overflowed += bool(caught)
        held = [t for t in tries if np.delete(t.errors[:len(effectors)], wrist).max() < 1e-3] or tries
        best = min(held, key=lambda t: t.errors[wrist])
        out.append(float(best.errors[wrist]))
        local, trans = best.local_rot, best.trans
    return out, overflowed


def summary(rows, minima):
    import numpy as np

    ms = np.array([t for r in rows for t in r["ms_passes"]])
    over = [r["wrist_miss_mm"] - m * 1e3 for r, m in zip(rows, minima)]
    return {"ms_median": round(float(np.median(ms)), 2), "ms_p90": round(float(np.percentile(ms, 90)), 2),
            "solve_ms_median": round(float(np.median([t for r in rows for t in r["solve_ms_passes"]])), 2),
            "pin_drift_mm_max": round(max(r["pin_drift_mm"] for r in rows), 3),
            "foot_lift_mm_max": round(max(r["foot_lift_mm"] for r in rows), 3),
            "wrist_miss_mm_end": round(rows[-1]["wrist_miss_mm"], 2),
            "miss_over_minimum_mm_max": round(max(over), 2),
            "miss_over_minimum_mm_end": round(over[-1], 2)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200, help="steps of the circle drag")
    parser.add_argument("--path-steps", type=int, default=40, help="1 cm steps of the path drag")
    parser.add_argument("--passes", type=int, default=3,
                        help="times each solver drags the circle and the path, taking turns (all passes' times count)")
    parser.add_argument("--json", type=Path, default=ROOT / "docs" / "figures" / "benchmark_drag.json",
                        help="JSON output (default docs/figures/benchmark_drag.json, which the docs quote)")
    args = parser.parse_args(argv)
    bpy = blender_session.start()

    import numpy as np

    from models.body.model import load_body_model
    from models.core.files import write_json
    from models.ik.smplik import load_smplik

    solving, handlers = ext("pose.solving"), ext("pose.handlers")
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.smpl_ik.add_body()
    arm = bpy.context.active_object
    bpy.ops.smpl_ik.add_default_effectors()
    effs = {o.smpl_ik_effector.joint: o for o in bpy.data.objects if o.type == "EMPTY"}
    wrist = effs["left_wrist"]
    result = {"steps": args.steps, "passes": args.passes, "vertices": len(arm.smpl_ik.mesh.data.vertices),
              "effectors": 6, "blas_threads": os.environ["OPENBLAS_NUM_THREADS"], "goal_ms": 16.0}
    circles = {"refined": (True, False), "raw_network": (False, False), "previous_solver": (True, True)}
    circle_rows = {name: [] for name in circles}
    for _ in range(args.passes):           # the solvers take turns, so a busy spell hits all of them
        for name, (refine, previous) in circles.items():
            with PreviousSolver(solving) if previous else nullcontext():
                circle_rows[name].extend(drag(bpy, handlers, arm, wrist, args.steps, refine))
    for name, rows in circle_rows.items():
        rows = np.array(rows)
        result[name] = {"ms_median": round(float(np.median(rows[:, 0])), 2),
                        "ms_p90": round(float(np.percentile(rows[:, 0], 90)), 2),
                        "solve_ms_median": round(float(np.median(rows[:, 1])), 2),
                        "wrist_error_mm_max": round(float(rows[:, 2].max() * 1e3), 3)}
        r = result[name]
        print(f"circle {name:15s} step {r['ms_median']:6.2f} ms median, {r['ms_p90']:6.2f} ms p90 "
              f"(solve {r['solve_ms_median']:.2f} ms); wrist off its effector by at most {r['wrist_error_mm_max']:.3f} mm")

    contacts = load_body_model(None).foot_contacts(np.zeros(10))
    start_over(bpy, arm)
    targets = path_targets(arm, wrist, args.path_steps)
    runs = {"solver": [], "previous_solver": []}
    for _ in range(args.passes):
        for name, taken in runs.items():
            with PreviousSolver(solving) if name == "previous_solver" else nullcontext():
                rows, found = path_drag(bpy, handlers, arm, effs, targets, contacts)
            taken.append(rows)
            if name == "solver":
                problems = found
    for name, taken in runs.items():       # the poses are the same every pass; the times differ
        for k, row in enumerate(taken[0]):
            row["ms_passes"] = [p[k]["ms"] for p in taken]
            row["solve_ms_passes"] = [p[k]["solve_ms"] for p in taken]
            row["ms"], row["solve_ms"] = float(np.median(row["ms_passes"])), float(np.median(row["solve_ms_passes"]))
        runs[name] = taken[0]
    minima, overflowed = reachable_minima(problems, ext("com.bridge").rest_joints(arm), load_smplik())
    path = {"steps": args.path_steps, "step_cm": 1.0, "passes": args.passes,
            "direction": "forward and up, 45 degrees, from the T-pose",
            "out_of_reach_steps": [k for k, m in enumerate(minima, 1) if m > 1e-3],
            "minimum_mm_end": round(minima[-1] * 1e3, 2), "minimum_solves_overflowed": overflowed}
    for name, rows in runs.items():
        path[name] = summary(rows, minima)
        r = path[name]
        print(f"path   {name:15s} step {r['ms_median']:6.2f} ms median, {r['ms_p90']:6.2f} ms p90; pins drift "
              f"<= {r['pin_drift_mm_max']:.3f} mm, feet move <= {r['foot_lift_mm_max']:.2f} mm, wrist ends "
              f"{r['wrist_miss_mm_end']:.1f} mm off ({r['miss_over_minimum_mm_end']:+.1f} mm over the reachable "
              f"minimum; at worst {r['miss_over_minimum_mm_max']:+.1f})")
    path["per_step"] = [{"step": k, "minimum_mm": round(m * 1e3, 2),
                         **{name: {key: round(value, 3) for key, value in runs[name][k - 1].items()
                                   if key in ("ms", "solve_ms", "pin_drift_mm", "foot_lift_mm", "wrist_miss_mm")}
                            for name in runs}}
                        for k, m in enumerate(minima, 1)]
    result["path"] = path
    print(f"path: out of reach (long solves over 1 mm) at steps {path['out_of_reach_steps']}, "
          f"reachable minimum at the end {path['minimum_mm_end']:.1f} mm"
          + (f"; {overflowed} step(s) where a long solve overflowed (RuntimeWarning in models/ik/refine.py)"
             if overflowed else ""))
    write_json(args.json, result)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

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
from the core's public calls (PreviousSolver): every step runs the network, decodes the
kept latent under the moved effectors, refines that (30 iterations at most) and finds the
new pose's latent (the flow backwards), and a step that starts to miss solves again from
the pose on screen. Each solver entry in the JSON says whether it kept the pose (keep_pose).
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
PER_STEP = ("ms", "cpu_ms", "solve_ms", "pin_drift_mm", "foot_lift_mm", "wrist_miss_mm", "jump_mm")   # per path step


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
    """The Keep Pose drag before the drag steps were made cheap, built from the core's public
    calls in place of the add-on's solve_effectors while the block runs (a solve off a drag,
    or with Keep Pose or Exact Effectors off, goes to the add-on's own): the kept pose's latent
    (the last solution's, else the pose's under the moved effectors) decoded under the moved
    effectors at the kept pose's place is refined (RefineOptions' 30 iterations, the natural
    pose the fallback start); a pin it misses is refined again from the network's guess; the
    new pose's latent is found at once (the flow backwards); and a step that starts to miss is
    solved again from the pose on screen, taken when it misses 1 cm less."""

    MARGIN = 0.01   # metres (radians) less miss that made the kept drag take the plain warm start

    def __init__(self, solving):
        self.solving, self.original = solving, solving.solve_effectors

    def __enter__(self):
        import numpy as np

        smplik, effectors = core("ik.smplik"), core("ik.effectors")
        bridge, original, solving = ext("com.bridge"), self.original, self.solving

        def kept_latent_solve(net, found, rest, options, kept):
            condition = net.condition(effectors.encode_effectors(found), rest[None])
            pose = (kept.local_rot, kept.trans) if isinstance(kept, smplik.IkSolution) else kept
            latent = getattr(kept, "latent", None)
            latent = net.encode(condition, np.asarray(pose[0])[None])[0] if latent is None else latent
            start = (net.decode(condition, latent[None, None])[0][0, 0], np.asarray(pose[1], dtype=np.float64))
            natural = lambda: tuple(x[0, 0] for x in net.decode(condition, np.zeros((1, 1, latent.size))))  # noqa: E731
            solution = net.refine_from(found, start, rest, options.refine, options.current_pose, natural)
            if any(not m.soft for m in solution.misses):
                guess = (condition.local_rot[0], condition.trans[0])
                again = net.refine_from(found, guess, rest, options.refine, options.current_pose)
                if smplik.miss_total(again) < smplik.miss_total(solution):
                    solution = again
            return smplik.IkSolution(local_rot=solution.local_rot, trans=solution.trans, rest=rest,
                                     errors=solution.errors, misses=solution.misses,
                                     latent=net.encode(condition, solution.local_rot[None])[0])

        def solve(arm, objs, dragged=(), give_way=(), current_pose=None, refine=None, mode=None):
            net = smplik.load_smplik()
            refine = arm.smpl_ik.refine if refine is None else refine
            if not (dragged and arm.smpl_ik.keep_pose and net.flow is not None and refine):
                return original(arm, objs, dragged, give_way, current_pose, refine, mode)
            found = ext("pose.effectors").core_effectors(arm, objs, dragged, give_way)
            rest = bridge.rest_joints(arm)
            on_screen = bridge.read_pose(arm, bridge.bone_axes(arm)) if current_pose is None else current_pose
            plain = smplik.SolveOptions(refine=solving.refine_options(arm), current_pose=on_screen, warm_start=True)
            kept = solving.kept_pose(arm, on_screen, rest)
            solution = kept_latent_solve(net, found, rest, plain, kept)
            if solution.misses and not getattr(kept, "misses", ()):
                warm = net.solve(found, rest, plain)
                if smplik.miss_total(warm) < smplik.miss_total(solution) - self.MARGIN:
                    return warm
            return solution
        self.solving.solve_effectors = solve
        return self

    def __exit__(self, *_exc):
        self.solving.solve_effectors = self.original


class KeepPoseOff:
    """Keep Pose While Dragging off on the body while the block runs."""

    def __init__(self, arm):
        self.arm = arm

    def __enter__(self):
        self.arm.smpl_ik.keep_pose = False
        return self

    def __exit__(self, *_exc):
        self.arm.smpl_ik.keep_pose = True


def solver_context(name, solving, arm):
    """The block a named solver runs in: today's ("refined", "solver", "raw_network"), Keep
    Pose off, or the previous solver."""
    if name == "previous_solver":
        return PreviousSolver(solving)
    if name == "keep_pose_off":
        return KeepPoseOff(arm)
    return nullcontext()


def joint_world(arm, name):
    import numpy as np

    return np.array(arm.matrix_world @ arm.pose.bones[name].head)


def free_joints(arm):
    """World positions (F, 3) of the joints without an effector (the drag's continuity is how
    far they move a step)."""
    import numpy as np

    pinned = {o.smpl_ik_effector.joint for o in ext("pose.effectors").effectors_of(arm)}
    return np.array([joint_world(arm, b.name) for b in arm.pose.bones if b.name not in pinned])


def start_over(bpy, arm):
    """The T-pose, every effector on its joint, no solve pending."""
    bpy.context.view_layer.objects.active = arm
    bpy.ops.smpl_ik.reset_pose()
    bpy.context.view_layer.update()


def drag(bpy, handlers, arm, wrist, steps, refine):
    """Circle drag; per step: (total ms, solve ms, wrist error m, jump m of the free joints, CPU ms)."""
    import numpy as np

    arm.smpl_ik.refine = refine
    start_over(bpy, arm)
    start = wrist.location.copy()
    rows = []
    before = free_joints(arm)
    with Timed(handlers) as timed:
        for k in range(steps + 5):
            angle = 2 * np.pi * k / steps
            wrist.location = start + type(start)((-0.1 + 0.1 * np.cos(angle), -0.1, 0.05 + 0.1 * np.sin(angle)))
            t, cpu = time.perf_counter(), time.process_time()
            bpy.context.view_layer.update()
            total, cpu = (time.perf_counter() - t) * 1e3, (time.process_time() - cpu) * 1e3
            now = free_joints(arm)
            if k >= 5:  # the first steps load the network and warm caches
                miss = np.linalg.norm(joint_world(arm, "left_wrist") - np.array(wrist.matrix_world.translation))
                jump = np.linalg.norm(now - before, axis=1).mean()
                rows.append((total, timed.ms[-1], float(miss), float(jump), cpu))
            before = now
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
    before = free_joints(arm)
    rows, problems = [], []
    with Timed(handlers) as timed:
        for step, target in enumerate(targets, 1):
            wrist.location = Vector(target)
            t, cpu = time.perf_counter(), time.process_time()
            bpy.context.view_layer.update()
            total, cpu = (time.perf_counter() - t) * 1e3, (time.process_time() - cpu) * 1e3
            drift = max(float(np.linalg.norm(joint_world(arm, o.smpl_ik_effector.joint)
                                             - np.array(o.matrix_world.translation))) for o in pins)
            lift = max(np.abs([joint_world(arm, j)[2] for j in FEET] - feet).max(),
                       np.abs(contact_heights(arm, contacts) - heights).max())
            miss = float(np.linalg.norm(joint_world(arm, "left_wrist") - np.array(wrist.matrix_world.translation)))
            now = free_joints(arm)
            rows.append({"step": step, "ms": total, "cpu_ms": cpu, "solve_ms": timed.ms[-1],
                         "pin_drift_mm": drift * 1e3, "foot_lift_mm": float(lift) * 1e3, "wrist_miss_mm": miss * 1e3,
                         "jump_mm": float(np.linalg.norm(now - before, axis=1).mean()) * 1e3})
            before = now
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
    cpu = np.array([t for r in rows for t in r["cpu_ms_passes"]])
    over = [r["wrist_miss_mm"] - m * 1e3 for r, m in zip(rows, minima)]
    return {"ms_median": round(float(np.median(ms)), 2), "ms_p90": round(float(np.percentile(ms, 90)), 2),
            "cpu_ms_median": round(float(np.median(cpu)), 2), "cpu_ms_p90": round(float(np.percentile(cpu, 90)), 2),
            "solve_ms_median": round(float(np.median([t for r in rows for t in r["solve_ms_passes"]])), 2),
            "solve_ms_p90": round(float(np.percentile([t for r in rows for t in r["solve_ms_passes"]], 90)), 2),
            "pin_drift_mm_max": round(max(r["pin_drift_mm"] for r in rows), 3),
            "foot_lift_mm_max": round(max(r["foot_lift_mm"] for r in rows), 3),
            "wrist_miss_mm_end": round(rows[-1]["wrist_miss_mm"], 2),
            "miss_over_minimum_mm_max": round(max(over), 2),
            "miss_over_minimum_mm_end": round(over[-1], 2),
            "jump_mm_mean": round(float(np.mean([r["jump_mm"] for r in rows])), 3)}


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
    # (refinement on, the solver): keep_pose says whether the drag keeps the pose
    circles = {"refined": (True, True), "raw_network": (False, True), "keep_pose_off": (True, False),
               "previous_solver": (True, True)}
    circle_rows = {name: [] for name in circles}
    for _ in range(args.passes):           # the solvers take turns, so a busy spell hits all of them
        for name, (refine, _keep) in circles.items():
            with solver_context(name, solving, arm):
                circle_rows[name].extend(drag(bpy, handlers, arm, wrist, args.steps, refine))
    for name, rows in circle_rows.items():
        rows = np.array(rows)
        result[name] = {"keep_pose": circles[name][1],
                        "ms_median": round(float(np.median(rows[:, 0])), 2),
                        "ms_p90": round(float(np.percentile(rows[:, 0], 90)), 2),
                        "cpu_ms_median": round(float(np.median(rows[:, 4])), 2),
                        "cpu_ms_p90": round(float(np.percentile(rows[:, 4], 90)), 2),
                        "solve_ms_median": round(float(np.median(rows[:, 1])), 2),
                        "solve_ms_p90": round(float(np.percentile(rows[:, 1], 90)), 2),
                        "wrist_error_mm_max": round(float(rows[:, 2].max() * 1e3), 3),
                        "jump_mm_mean": round(float(rows[:, 3].mean() * 1e3), 3)}
        r = result[name]
        print(f"circle {name:15s} step {r['ms_median']:6.2f} ms median, {r['ms_p90']:6.2f} ms p90 "
              f"(CPU {r['cpu_ms_median']:.2f} / {r['cpu_ms_p90']:.2f})"
              f"(solve {r['solve_ms_median']:.2f} ms); wrist off its effector by at most "
              f"{r['wrist_error_mm_max']:.3f} mm; free joints move {r['jump_mm_mean']:.3f} mm a step")

    contacts = load_body_model(None).foot_contacts(np.zeros(10))
    start_over(bpy, arm)
    targets = path_targets(arm, wrist, args.path_steps)
    runs = {"solver": [], "keep_pose_off": [], "previous_solver": []}
    for _ in range(args.passes):
        for name, taken in runs.items():
            with solver_context(name, solving, arm):
                rows, found = path_drag(bpy, handlers, arm, effs, targets, contacts)
            taken.append(rows)
            if name == "solver":
                problems = found
    for name, taken in runs.items():       # the poses are the same every pass; the times differ
        for k, row in enumerate(taken[0]):
            row["ms_passes"] = [p[k]["ms"] for p in taken]
            row["solve_ms_passes"] = [p[k]["solve_ms"] for p in taken]
            row["cpu_ms_passes"] = [p[k]["cpu_ms"] for p in taken]
            for key in ("ms", "solve_ms", "cpu_ms"):
                row[key] = float(np.median(row[f"{key}_passes"]))
        runs[name] = taken[0]
    minima, overflowed = reachable_minima(problems, ext("com.bridge").rest_joints(arm), load_smplik())
    path = {"steps": args.path_steps, "step_cm": 1.0, "passes": args.passes,
            "direction": "forward and up, 45 degrees, from the T-pose",
            "out_of_reach_steps": [k for k, m in enumerate(minima, 1) if m > 1e-3],
            "minimum_mm_end": round(minima[-1] * 1e3, 2), "minimum_solves_overflowed": overflowed}
    for name, rows in runs.items():
        path[name] = {"keep_pose": name != "keep_pose_off", **summary(rows, minima)}
        r = path[name]
        print(f"path   {name:15s} step {r['ms_median']:6.2f} ms median, {r['ms_p90']:6.2f} ms p90 "
              f"(CPU {r['cpu_ms_median']:.2f} / {r['cpu_ms_p90']:.2f}); pins drift "
              f"<= {r['pin_drift_mm_max']:.3f} mm, feet move <= {r['foot_lift_mm_max']:.2f} mm, wrist ends "
              f"{r['wrist_miss_mm_end']:.1f} mm off ({r['miss_over_minimum_mm_end']:+.1f} mm over the reachable "
              f"minimum; at worst {r['miss_over_minimum_mm_max']:+.1f}); free joints move "
              f"{r['jump_mm_mean']:.2f} mm a step")
    path["per_step"] = [{"step": k, "minimum_mm": round(m * 1e3, 2),
                         **{name: {key: round(value, 3) for key, value in runs[name][k - 1].items()
                                   if key in PER_STEP}
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

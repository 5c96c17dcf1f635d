"""The viewport drag benchmark in headless Blender: circle and path drags of an effector, timed,
with their continuity and reach."""
import importlib
import time
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace

import numpy as np

from models.core.kinematics import forward_kinematics
from models.core.skeleton import FOOT_JOINTS, PARENTS
from models.ik.options import SolveOptions
from models.ik.refine import RefineOptions, planted_feet, refine_pose
from models.ik.smplik import load_smplik

from . import blender_session
from .report import median_and_p90
from .timing import CallTimer

LONG_SOLVE = 300   # refinement iterations of the solves that find the reachable minimum
PER_STEP = ("ms", "cpu_ms", "solve_ms", "pin_drift_mm", "foot_lift_mm", "wrist_miss_mm", "jump_mm")   # per path step
WARM_UP_STEPS = 5  # circle steps first, uncounted: they load the network and warm caches


def ext(module):
    """An addon/ module of the enabled extension (blender_session.start() first)."""
    return importlib.import_module(f"{blender_session.MODULE}.addon.{module}")


def core(module):
    """A models/ module as the extension loaded it (its classes are the ones the add-on checks)."""
    return importlib.import_module(f"{blender_session.MODULE}.models.{module}")


class PreviousSolver:
    """The Keep Pose drag before the drag steps were made cheap, built from the core's public
    calls around `net` (the extension's SmplIk), which the add-on solves with in its place
    (`solving_with`). A solve that keeps a pose (SolveOptions.keep, refined: the add-on's Keep
    Pose drag) goes the previous way: the kept pose's latent (the last solution's, else the
    pose's under the moved effectors) decoded under the moved effectors at the kept pose's
    place is refined (RefineOptions' 30 iterations, the natural pose the fallback start); a
    pin it misses is refined again from the network's guess; the new pose's latent is found
    at once (the flow backwards); and a step that starts to miss is solved again from the pose
    on screen, taken when it misses MARGIN less. Any other solve is the network's own."""

    MARGIN = 0.01   # metres (radians) less miss that made the kept drag take the plain warm start

    def __init__(self, net):
        self.net, self.flow = net, net.flow
        self.solutions, self.options, self.effectors = core("ik.solution"), core("ik.options"), core("ik.effectors")

    def kept_latent_solve(self, found, rest, options, kept):
        """The kept pose's latent decoded under the effectors `found` and refined (the class docstring)."""
        net = self.net
        condition = net.condition(self.effectors.encode_effectors(found), rest[None])
        pose = (kept.local_rot, kept.trans) if isinstance(kept, self.solutions.IkSolution) else kept
        latent = getattr(kept, "latent", None)
        latent = net.encode(condition, np.asarray(pose[0])[None])[0] if latent is None else latent
        start = (net.decode(condition, latent[None, None])[0][0, 0], np.asarray(pose[1], dtype=np.float64))

        def natural():
            return tuple(x[0, 0] for x in net.decode(condition, np.zeros((1, 1, latent.size))))

        solution = net.refine_from(found, start, rest, options.refine, options.current_pose, natural)
        if any(not m.soft for m in solution.misses):
            guess = (condition.local_rot[0], condition.trans[0])
            again = net.refine_from(found, guess, rest, options.refine, options.current_pose)
            if self.solutions.miss_total(again) < self.solutions.miss_total(solution):
                solution = again
        return self.solutions.IkSolution(local_rot=solution.local_rot, trans=solution.trans, rest=rest,
                                         errors=solution.errors, misses=solution.misses,
                                         latent=net.encode(condition, solution.local_rot[None])[0])

    def solve(self, effectors, rest, options):
        """As SmplIk.solve; a refined solve that keeps a pose goes the previous way, from the
        options the add-on's drag would have warm-started with (its mode, warm_start, no keep)."""
        if options.keep is None or options.refine is None:
            return self.net.solve(effectors, rest, options)
        plain = replace(options, mode=self.options.DEFAULT_MODE, warm_start=True, keep=None)
        solution = self.kept_latent_solve(effectors, rest, plain, options.keep)
        if solution.misses and not getattr(options.keep, "misses", ()):
            warm = self.net.solve(effectors, rest, plain)
            if self.solutions.miss_total(warm) < self.solutions.miss_total(solution) - self.MARGIN:
                return warm
        return solution


@contextmanager
def solving_with(solving, solver):
    """While the block runs, the add-on's solving (addon/pose/solving.py, its module `solving`)
    takes `solver` where it loads SMPL-IK (its load_smplik), so its live solves use it."""
    original = solving.load_smplik
    solving.load_smplik = lambda: solver
    try:
        yield solver
    finally:
        solving.load_smplik = original


@contextmanager
def keep_pose_off(arm):
    """Keep Pose While Dragging off on the body while the block runs."""
    arm.smpl_ik.keep_pose = False
    try:
        yield
    finally:
        arm.smpl_ik.keep_pose = True


def solver_context(name, solving, arm):
    """The block a named solver runs in: today's ("refined", "solver", "raw_network"), Keep
    Pose off, or the previous solver."""
    if name == "previous_solver":
        return solving_with(solving, PreviousSolver(core("ik.smplik").load_smplik()))
    if name == "keep_pose_off":
        return keep_pose_off(arm)
    return nullcontext()


def joint_world(arm, name):
    """(3,) world position of the bone `name`'s head."""
    return np.array(arm.matrix_world @ arm.pose.bones[name].head)


def free_joints(arm):
    """World positions (F, 3) of the joints without an effector (the drag's continuity is how
    far they move a step)."""
    pinned = {o.smpl_ik_effector.joint for o in ext("pose.effectors").effectors_of(arm)}
    return np.array([joint_world(arm, b.name) for b in arm.pose.bones if b.name not in pinned])


def start_over(bpy, arm):
    """The T-pose, every effector on its joint, no solve pending."""
    bpy.context.view_layer.objects.active = arm
    bpy.ops.smpl_ik.reset_pose()
    bpy.context.view_layer.update()


def circle_drag(bpy, handlers, arm, wrist, steps, refine):
    """The wrist effector dragged round a 20 cm circle in `steps` steps (after WARM_UP_STEPS),
    Exact Effectors `refine`; per step (total ms, solve ms, wrist error m, jump m of the free
    joints, CPU ms)."""
    arm.smpl_ik.refine = refine
    start_over(bpy, arm)
    start = wrist.location.copy()
    rows = []
    before = free_joints(arm)
    with CallTimer(handlers, "solve_body") as timed:
        for k in range(steps + WARM_UP_STEPS):
            angle = 2 * np.pi * k / steps
            wrist.location = start + type(start)((-0.1 + 0.1 * np.cos(angle), -0.1, 0.05 + 0.1 * np.sin(angle)))
            t, cpu = time.perf_counter(), time.process_time()
            bpy.context.view_layer.update()
            total, cpu = (time.perf_counter() - t) * 1e3, (time.process_time() - cpu) * 1e3
            now = free_joints(arm)
            if k >= WARM_UP_STEPS:
                miss = np.linalg.norm(joint_world(arm, "left_wrist") - np.array(wrist.matrix_world.translation))
                jump = np.linalg.norm(now - before, axis=1).mean()
                rows.append((total, timed.ms[-1], float(miss), float(jump), cpu))
            before = now
    arm.smpl_ik.refine = True
    return rows


def circle_summary(rows, keep_pose):
    """The JSON figures of circle_drag's rows (ms, CPU ms and solve ms median and p90, the worst
    wrist error and the mean jump in mm)."""
    rows = np.array(rows)
    return {"keep_pose": keep_pose, **median_and_p90("ms", rows[:, 0]), **median_and_p90("cpu_ms", rows[:, 4]),
            **median_and_p90("solve_ms", rows[:, 1]),
            "wrist_error_mm_max": round(float(rows[:, 2].max() * 1e3), 3),
            "jump_mm_mean": round(float(rows[:, 3].mean() * 1e3), 3)}


def contact_heights(arm, contacts):
    """World Z of the feet's heel, ball and toe points (`contacts`) in the pose on screen."""
    bridge = ext("com.bridge")
    local, trans = bridge.read_pose(arm, bridge.bone_axes(arm))
    fk = forward_kinematics(local, bridge.rest_joints(arm), PARENTS, trans)
    world = np.array(arm.matrix_world)
    return (bridge.to_blender(contacts.positions(fk)) @ world[:3, :3].T + world[:3, 3])[:, 2]


def path_targets(arm, wrist, steps):
    """World positions (steps, 3) of the wrist effector along the path, from where it is."""
    forward = np.array(arm.matrix_world.to_3x3().normalized()) @ [0.0, -1.0, 0.0]
    direction = (forward + [0.0, 0.0, 1.0]) / np.sqrt(2.0)
    return np.array(wrist.location) + 0.01 * np.arange(1, steps + 1)[:, None] * direction


def path_drag(bpy, handlers, arm, effs, targets, contacts):
    """Drag the left-wrist effector through `targets` from the T-pose; per step a dict of the
    figures, and the core effectors of each step (as today's solver sees them: the wrist soft)."""
    from mathutils import Vector

    start_over(bpy, arm)
    wrist = effs["left_wrist"]
    pins = [o for j, o in effs.items() if j != "left_wrist"]
    feet = np.array([joint_world(arm, j)[2] for j in FOOT_JOINTS])
    heights = contact_heights(arm, contacts)
    before = free_joints(arm)
    rows, problems = [], []
    with CallTimer(handlers, "solve_body") as timed:
        for step, target in enumerate(targets, 1):
            wrist.location = Vector(target)
            t, cpu = time.perf_counter(), time.process_time()
            bpy.context.view_layer.update()
            total, cpu = (time.perf_counter() - t) * 1e3, (time.process_time() - cpu) * 1e3
            drift = max(float(np.linalg.norm(joint_world(arm, o.smpl_ik_effector.joint)
                                             - np.array(o.matrix_world.translation))) for o in pins)
            lift = max(np.abs([joint_world(arm, j)[2] for j in FOOT_JOINTS] - feet).max(),
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
    a long refinement from the previous step's minimum (a chain from the T-pose); and the
    number of steps where a long solve overflowed (a RuntimeWarning)."""
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


def merge_passes(taken):
    """The first pass's path rows, each with every pass's ms, solve_ms and cpu_ms
    (`*_passes`) and their medians in place of its own (the poses are the same every pass)."""
    for k, row in enumerate(taken[0]):
        row["ms_passes"] = [p[k]["ms"] for p in taken]
        row["solve_ms_passes"] = [p[k]["solve_ms"] for p in taken]
        row["cpu_ms_passes"] = [p[k]["cpu_ms"] for p in taken]
        for key in ("ms", "solve_ms", "cpu_ms"):
            row[key] = float(np.median(row[f"{key}_passes"]))
    return taken[0]


def path_summary(rows, minima):
    """The JSON figures of a solver's merged path rows against the reachable minima (metres)."""
    over = [r["wrist_miss_mm"] - m * 1e3 for r, m in zip(rows, minima)]
    return {**median_and_p90("ms", np.array([t for r in rows for t in r["ms_passes"]])),
            **median_and_p90("cpu_ms", np.array([t for r in rows for t in r["cpu_ms_passes"]])),
            **median_and_p90("solve_ms", [t for r in rows for t in r["solve_ms_passes"]]),
            "pin_drift_mm_max": round(max(r["pin_drift_mm"] for r in rows), 3),
            "foot_lift_mm_max": round(max(r["foot_lift_mm"] for r in rows), 3),
            "wrist_miss_mm_end": round(rows[-1]["wrist_miss_mm"], 2),
            "miss_over_minimum_mm_max": round(max(over), 2),
            "miss_over_minimum_mm_end": round(over[-1], 2),
            "jump_mm_mean": round(float(np.mean([r["jump_mm"] for r in rows])), 3)}


@dataclass(frozen=True)
class DragScene:
    """The scene a drag runs in: bpy, the add-on's pose.solving and pose.handlers modules, the
    body `arm` and its effector objects `effs` by joint name."""

    bpy: object
    solving: object
    handlers: object
    arm: object
    effs: dict

    @classmethod
    def open_body(cls, bpy):
        """An empty scene with an open body and its six default effectors (blender_session.start() first)."""
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.ops.smpl_ik.add_body()
        arm = bpy.context.active_object
        bpy.ops.smpl_ik.add_default_effectors()
        effs = {o.smpl_ik_effector.joint: o for o in bpy.data.objects if o.type == "EMPTY"}
        return cls(bpy, ext("pose.solving"), ext("pose.handlers"), arm, effs)


# circle solvers: (Exact Effectors, Keep Pose While Dragging)
CIRCLES = {"refined": (True, True), "raw_network": (False, True), "keep_pose_off": (True, False),
           "previous_solver": (True, True)}
PATH_SOLVERS = ("solver", "keep_pose_off", "previous_solver")


def circle_figures(scene, steps, passes):
    """{solver: circle_summary} of each of CIRCLES dragging the circle `passes` times, taking
    turns (so a busy spell hits all of them)."""
    rows = {name: [] for name in CIRCLES}
    for _ in range(passes):
        for name, (refine, _keep) in CIRCLES.items():
            with solver_context(name, scene.solving, scene.arm):
                rows[name].extend(circle_drag(scene.bpy, scene.handlers, scene.arm, scene.effs["left_wrist"],
                                              steps, refine))
    return {name: circle_summary(r, CIRCLES[name][1]) for name, r in rows.items()}


def path_figures(scene, steps, passes, contacts):
    """The path section: each of PATH_SOLVERS dragging the wrist `steps` 1 cm steps from the
    T-pose `passes` times, taking turns, against the reachable minima of today's solver's
    problems; contacts: the body's foot contact points (BodyModel.foot_contacts)."""
    start_over(scene.bpy, scene.arm)
    targets = path_targets(scene.arm, scene.effs["left_wrist"], steps)
    runs = {name: [] for name in PATH_SOLVERS}
    for _ in range(passes):
        for name, taken in runs.items():
            with solver_context(name, scene.solving, scene.arm):
                rows, found = path_drag(scene.bpy, scene.handlers, scene.arm, scene.effs, targets, contacts)
            taken.append(rows)
            if name == "solver":
                problems = found
    runs = {name: merge_passes(taken) for name, taken in runs.items()}
    minima, overflowed = reachable_minima(problems, ext("com.bridge").rest_joints(scene.arm),
                                          load_smplik())
    path = {"steps": steps, "step_cm": 1.0, "passes": passes,
            "direction": "forward and up, 45 degrees, from the T-pose",
            "out_of_reach_steps": [k for k, m in enumerate(minima, 1) if m > 1e-3],
            "minimum_mm_end": round(minima[-1] * 1e3, 2), "minimum_solves_overflowed": overflowed}
    for name, rows in runs.items():
        path[name] = {"keep_pose": name != "keep_pose_off", **path_summary(rows, minima)}
    path["per_step"] = [{"step": k, "minimum_mm": round(m * 1e3, 2),
                         **{name: {key: round(value, 3) for key, value in runs[name][k - 1].items()
                                   if key in PER_STEP}
                            for name in runs}}
                        for k, m in enumerate(minima, 1)]
    return path

"""Solving bodies from their effectors: on demand, live while an effector moves, and over a
frame range (bake); plus the pose edits that keep effectors pinned (mirror, reset).

Live solving is a depsgraph handler. It solves a body only when one of its enabled
effectors' transforms changed since that body was last solved or pinned (a signature of the
effectors is remembered per body), so writing the pose never feeds back into another solve.
The effectors that moved are the ones being dragged: they are solved as soft (as close as
the pins allow), every other one as it is set.

Every solve says what it did not meet: the body's status names the effector and the
distance left (empty once all are met), and a refused input (a bad tolerance or floor
height) leaves the pose as it was with the reason in the status.
"""
import math
from dataclasses import dataclass

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..models.core.errors import SmplIkError
from ..models.core.skeleton import JOINT_NAMES, MIRROR
from ..models.ik.refine import RefineOptions
from ..models.ik.smplik import load_smplik
from ..models.motion.temporal import smooth_poses
from . import bridge, live
from .body_object import body_model_of, is_body
from .effectors import core_effectors, effectors_of, is_effector, pin, rest_joints

# The solver before pins and soft effectors, for scripts/benchmark_drag.py to time beside
# today's: every effector hard (a dragged one too), no joint limits, no planted feet, no floor.
PREVIOUS_SOLVER = False
FLOOR_LIMIT = 10000.0    # metres; Blender stores an infinite float as its largest, so bound it
FLOOR_TILT = math.radians(0.5)
SHOWN_MISSES = 3


def refine_options(arm):
    """models.ik.refine.RefineOptions from the body's settings (Plant Feet, Floor). The floor
    (world Z) goes into the body's frame; SmplIkError for a height that is not a finite
    number of metres, or a body not standing upright."""
    if PREVIOUS_SOLVER:
        return RefineOptions(joint_limits=False, plant_feet=False)
    props = arm.smpl_ik
    floor = contacts = None
    if props.use_floor:
        height = props.floor_height
        if not (math.isfinite(height) and abs(height) <= FLOOR_LIMIT):
            raise SmplIkError(f"{arm.name}: the floor height must be a number of metres between "
                              f"-{FLOOR_LIMIT:g} and {FLOOR_LIMIT:g}, got {height:g}; the pose was left as it was")
        floor, tilt = bridge.floor_in_body(bridge.matrix_array(arm.matrix_world), height)
        if tilt > FLOOR_TILT:
            raise SmplIkError(f"{arm.name}: a floor needs the body upright, and it is tilted "
                              f"{math.degrees(tilt):.1f} degrees; straighten it or turn Floor off")
        contacts = foot_contacts(arm)
    return RefineOptions(plant_feet=props.plant_feet, floor=floor, contacts=contacts)


_contacts = {}


def foot_contacts(arm):
    """The body's heel, ball and toe points (models.core.kinematics.AttachedPoints), for its
    file and shape (remembered: a drag asks on every step)."""
    key = (arm.smpl_ik.body_path, tuple(round(b, 6) for b in arm.smpl_ik.applied_betas))
    if key not in _contacts:
        _contacts.clear()
        _contacts[key] = body_model_of(arm).foot_contacts(np.array(arm.smpl_ik.applied_betas[:]))
    return _contacts[key]


def reach_message(misses):
    """What the status and the reports say of a solve's misses (refine.Miss, largest first):
    '' when none."""
    if not misses:
        return ""
    text = "; ".join(m.describe() for m in misses[:SHOWN_MISSES])
    more = len(misses) - SHOWN_MISSES
    return f"Out of reach: {text}" + (f" (and {more} more)" if more > 0 else "")


def _set_status(arm, text):
    if arm.smpl_ik.status != text:   # a write tags the body for another depsgraph update
        arm.smpl_ik.status = text


def solve_effectors(arm, objs, dragged=(), current_pose=None, refine=None):
    """Solve the body from effector objects without writing anything; returns the IkSolution.
    dragged: names of the effectors moving now (solved soft). current_pose: (local_rot, trans)
    whose feet Plant Feet keeps (default: the pose on screen). refine: Exact Effectors
    (default: the body's setting). SmplIkError for bad values."""
    refine = arm.smpl_ik.refine if refine is None else refine
    effectors = core_effectors(arm, objs, dragged, all_hard=PREVIOUS_SOLVER)
    options = refine_options(arm)
    if current_pose is None and options.plant_feet and refine:
        current_pose = bridge.read_pose(arm, bridge.bone_axes(arm))
    return load_smplik().solve(effectors, rest_joints(arm), refine=refine, options=options,
                               current_pose=current_pose, warm_start=bool(dragged) and not PREVIOUS_SOLVER)


def solve_body(arm, objs=None, signature=None, dragged=()):
    """Solve a body from its enabled effectors and write its pose; returns the IkSolution.
    `objs` and their `signature`, when the caller already has them, save gathering them again;
    dragged: names of the effectors being moved (solved soft). The status names what the pose
    misses (empty when all are met). Raises SmplIkError (no effectors, bad values) with the
    pose unchanged and the reason in the status."""
    objs = effectors_of(arm) if objs is None else objs
    try:
        if not objs:
            raise SmplIkError(f"{arm.name}: no enabled effectors to solve from; add some with Add Effector")
        solution = solve_effectors(arm, objs, dragged)
    except SmplIkError as exc:
        _set_status(arm, str(exc))
        raise
    bridge.write_pose(arm, solution.local_rot, solution.trans, bridge.bone_axes(arm))
    live.solved[arm.session_uid] = live.signature(objs) if signature is None else signature
    _set_status(arm, reach_message(solution.misses))
    return solution


@persistent
def _on_depsgraph_update(scene, depsgraph):
    if live.suspended:
        return
    if live.reprime:  # the first evaluation after undo, redo or loading: poses as stored are the truth
        live.reprime.clear()
        live.solved.clear()
        live.unmet.clear()
        for obj in bpy.data.objects:
            if is_body(obj):
                live.mark_solved(obj, effectors_of(obj))
        return
    bodies = {}
    for update in depsgraph.updates:
        if not update.is_updated_transform or not isinstance(update.id, bpy.types.Object):
            continue
        obj = update.id.original
        if is_effector(obj) and obj.smpl_ik_effector.enabled:
            arm = obj.smpl_ik_effector.body
            if is_body(arm) and arm.smpl_ik.live:
                bodies[arm.session_uid] = arm
    for key, arm in bodies.items():
        objs = effectors_of(arm)
        signature = live.signature(objs)
        before = live.solved.get(key)
        if live.unchanged(before, signature):
            continue
        live.solved[key] = signature  # a refused input is not retried on every redraw
        try:
            # an effector left out of reach stays soft (as when it was dragged) until it is met
            # again, so moving another one never makes the pins give way for it
            dragged = set(live.moved(before, signature)) | live.unmet.get(key, set())
            solution = solve_body(arm, objs, signature, dragged=dragged)
            missed = {(m.joint, m.kind.name) for m in solution.misses if m.soft}
            live.unmet[key] = {o.name for o in objs if (o.smpl_ik_effector.joint, o.smpl_ik_effector.kind) in missed}
        except SmplIkError:
            pass                      # solve_body put the reason in the body's status


@persistent
def _on_file_or_undo(*_args):
    """After undo, redo or loading a file the stored poses are the truth. Objects' world
    matrices are only valid once the depsgraph has evaluated them, so the effectors are
    remembered as solved at the next depsgraph update (which then solves nothing)."""
    live.reprime.append(True)


# --- pose edits -----------------------------------------------------------------------------

_FLIP_X = np.diag([-1.0, 1.0, 1.0])


def mirror_pose(arm):
    """Swap the pose's left and right sides (about the body's own YZ plane)."""
    axes = bridge.bone_axes(arm)
    local, trans = bridge.read_pose(arm, axes)
    rest = rest_joints(arm)
    local = _FLIP_X @ local[list(MIRROR)] @ _FLIP_X
    trans = _FLIP_X @ (rest[0] + trans) - rest[0]
    bridge.write_pose(arm, local, trans, axes)
    pin(arm, effectors_of(arm, enabled_only=False))


def reset_pose(arm):
    """The rest pose (T-pose) at the body's origin."""
    axes = bridge.bone_axes(arm)
    bridge.write_pose(arm, np.broadcast_to(np.eye(3), (len(JOINT_NAMES), 3, 3)), np.zeros(3), axes)
    pin(arm, effectors_of(arm, enabled_only=False))


def keyframe_pose(arm, frame):
    """Key every pose bone's rotation and the root's location at `frame`."""
    for name in JOINT_NAMES:
        pb = arm.pose.bones[name]
        pb.keyframe_insert("rotation_quaternion", frame=frame, group=name)
    arm.pose.bones[JOINT_NAMES[0]].keyframe_insert("location", frame=frame, group=JOINT_NAMES[0])


# --- baking ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Baked:
    """What a bake did: its frames and, for each frame where an effector was not met, that
    frame's largest miss, as (frame, refine.Miss) in frame order (solved before smoothing)."""

    frame_start: int
    frame_end: int
    missed: tuple = ()

    def describe(self):
        """'Baked frames 1-10' and, when something missed, the frames and the worst miss."""
        done = f"Baked frames {self.frame_start}-{self.frame_end}"
        if not self.missed:
            return done
        frame, worst = max(self.missed, key=lambda fm: fm[1].error)
        frames = frame_ranges([f for f, _ in self.missed])
        return (f"{done}; effectors not met at {len(self.missed)} frame(s) ({frames}), the worst: "
                f"{worst.describe()} at frame {frame}")


def frame_ranges(frames):
    """'3-5, 9' for [3, 4, 5, 9] (sorted frame numbers)."""
    runs = []
    for f in frames:
        if runs and f == runs[-1][1] + 1:
            runs[-1][1] = f
        else:
            runs.append([f, f])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def bake_steps(context, arm, frame_start, frame_end, smoothing=0.0, refine=None):
    """Generator: solve every frame from the (animated) effectors, yielding the fraction done,
    then key the armature and return a Baked (the generator's StopIteration value). Plant
    Feet keeps the feet of the frame before (the first frame: of the pose on screen).
    Stopping the generator early keys nothing and restores the frame."""
    scene = context.scene
    if frame_end < frame_start:
        raise SmplIkError(f"the bake range {frame_start}-{frame_end} is empty")
    if not effectors_of(arm):
        raise SmplIkError(f"{arm.name}: no enabled effectors to bake from")
    frame_numbers = list(range(frame_start, frame_end + 1))
    original_frame = scene.frame_current
    use_refine = arm.smpl_ik.refine if refine is None else refine
    local, trans, missed = [], [], []
    live.suspended.append(True)
    try:
        for n, frame in enumerate(frame_numbers):
            scene.frame_set(frame)
            objs = effectors_of(arm)
            if not objs:
                raise SmplIkError(f"{arm.name}: no enabled effectors at frame {frame}")
            try:
                solution = solve_effectors(arm, objs, current_pose=(local[-1], trans[-1]) if local else None,
                                           refine=use_refine)
            except SmplIkError as exc:
                raise SmplIkError(f"frame {frame}: {exc}") from None
            local.append(solution.local_rot)
            trans.append(solution.trans)
            if solution.misses:
                missed.append((frame, solution.misses[0]))
            yield (n + 1) / (len(frame_numbers) + 1)
        local, trans = smooth_poses(np.array(local), np.array(trans), smoothing)
        axes = bridge.bone_axes(arm)
        for frame, rot, tr in zip(frame_numbers, local, trans):
            bridge.write_pose(arm, rot, tr, axes)
            keyframe_pose(arm, frame)
    finally:
        live.suspended.pop()
        scene.frame_set(original_frame)
    live.mark_solved(arm, effectors_of(arm))
    return Baked(frame_start, frame_end, tuple(missed))


def register():
    bpy.app.handlers.depsgraph_update_post.append(_on_depsgraph_update)
    for handlers in (bpy.app.handlers.undo_post, bpy.app.handlers.redo_post, bpy.app.handlers.load_post):
        handlers.append(_on_file_or_undo)


def unregister():
    for handlers in (bpy.app.handlers.depsgraph_update_post, bpy.app.handlers.undo_post,
                     bpy.app.handlers.redo_post, bpy.app.handlers.load_post):
        for fn in (_on_depsgraph_update, _on_file_or_undo):
            while fn in handlers:
                handlers.remove(fn)
    live.solved.clear()
    live.unmet.clear()
    live.reprime.clear()

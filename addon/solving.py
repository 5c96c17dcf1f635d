"""Solving bodies from their effectors: on demand, live while an effector moves, and over a
frame range (bake); plus the pose edits that keep effectors pinned (mirror, reset).

Live solving is a depsgraph handler. It solves a body only when one of its enabled
effectors' transforms changed since that body was last solved or pinned (a signature of the
effectors is remembered per body), so writing the pose never feeds back into another solve.
"""
import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..models.core.errors import SmplIkError
from ..models.core.skeleton import JOINT_NAMES, MIRROR
from ..models.ik.smplik import load_smplik
from ..models.motion.temporal import smooth_poses
from . import bridge, live
from .body_object import is_body
from .effectors import core_effectors, effectors_of, is_effector, pin, rest_joints


def solve_body(arm, objs=None, signature=None):
    """Solve a body from its enabled effectors and write its pose; returns the IkSolution.
    `objs` and their `signature`, when the caller already has them, save gathering them again.
    Raises SmplIkError (no effectors, bad values) with the body unchanged."""
    objs = effectors_of(arm) if objs is None else objs
    if not objs:
        raise SmplIkError(f"{arm.name}: no enabled effectors to solve from; add some with Add Effector")
    solution = load_smplik().solve(core_effectors(arm, objs), rest_joints(arm), refine=arm.smpl_ik.refine)
    bridge.write_pose(arm, solution.local_rot, solution.trans, bridge.bone_axes(arm))
    live.solved[arm.session_uid] = live.signature(objs) if signature is None else signature
    return solution


@persistent
def _on_depsgraph_update(scene, depsgraph):
    if live.suspended:
        return
    if live.reprime:  # the first evaluation after undo, redo or loading: poses as stored are the truth
        live.reprime.clear()
        live.solved.clear()
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
        if live.solved.get(key) == signature:
            continue
        live.solved[key] = signature  # a refused input is not retried on every redraw
        try:
            solve_body(arm, objs, signature)
            if arm.smpl_ik.status:
                arm.smpl_ik.status = ""
        except SmplIkError as exc:
            arm.smpl_ik.status = str(exc)


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

def bake_steps(context, arm, frame_start, frame_end, smoothing=0.0, refine=None):
    """Generator: solve every frame from the (animated) effectors, yielding the fraction done,
    then key the armature. Stopping the generator early keys nothing and restores the frame."""
    scene = context.scene
    if frame_end < frame_start:
        raise SmplIkError(f"the bake range {frame_start}-{frame_end} is empty")
    if not effectors_of(arm):
        raise SmplIkError(f"{arm.name}: no enabled effectors to bake from")
    frame_numbers = list(range(frame_start, frame_end + 1))
    original_frame = scene.frame_current
    model, rest = load_smplik(), rest_joints(arm)
    use_refine = arm.smpl_ik.refine if refine is None else refine
    local, trans = [], []
    live.suspended.append(True)
    try:
        for n, frame in enumerate(frame_numbers):
            scene.frame_set(frame)
            objs = effectors_of(arm)
            if not objs:
                raise SmplIkError(f"{arm.name}: no enabled effectors at frame {frame}")
            solution = model.solve(core_effectors(arm, objs), rest, refine=use_refine)
            local.append(solution.local_rot)
            trans.append(solution.trans)
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
    yield 1.0


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
    live.reprime.clear()

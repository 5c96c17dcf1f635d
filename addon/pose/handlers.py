"""Live solving: a depsgraph handler solves a body only when one of its enabled effectors'
transforms changed since that body was last solved or pinned (a signature of the effectors
is remembered per body, in com.live), so writing the pose never feeds back into another
solve. After undo, redo or loading a file the stored poses are the truth."""
import bpy
from bpy.app.handlers import persistent

from ...models.core.errors import SmplIkError
from ..com import live
from ..com.objects import is_body, is_effector
from .effectors import effectors_of
from .solving import giving_way, solve_body


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
        if live.unchanged(live.solved.get(key), signature):
            continue
        # an effector left out of reach stays soft (as when it was dragged) until it is met
        # again, so moving another one never makes the pins give way for it
        dragged = giving_way(arm, signature)
        live.solved[key] = signature  # a refused input is not retried on every redraw
        try:
            solve_body(arm, objs, signature, dragged=dragged)
        except SmplIkError:
            pass                      # solve_body put the reason in the body's status


@persistent
def _on_file_or_undo(*_args):
    """After undo, redo or loading a file the stored poses are the truth. Objects' world
    matrices are only valid once the depsgraph has evaluated them, so the effectors are
    remembered as solved at the next depsgraph update (which then solves nothing)."""
    live.reprime.append(True)


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
    live.last.clear()
    live.alternatives.clear()

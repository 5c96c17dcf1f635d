"""Small helpers the Blender tests share: evaluate the scene, find a body's effectors, read joints."""
import bpy
import numpy as np

from models.core.skeleton import JOINT_NAMES


def update():
    """Evaluate the depsgraph (the live-solving handler runs)."""
    bpy.context.view_layer.update()


def effectors(arm):
    """{joint name: effector object} of a body."""
    return {o.smpl_ik_effector.joint: o for o in bpy.data.objects
            if o.type == "EMPTY" and o.smpl_ik_effector.body == arm}


def joint_world(arm, joint):
    """(3,) world position of a joint in the pose on screen."""
    return np.array(arm.matrix_world @ arm.pose.bones[joint].head)


def quats(arm):
    """(24, 4) the pose bones' quaternions."""
    return np.array([arm.pose.bones[n].rotation_quaternion[:] for n in JOINT_NAMES])


def largest_turn_deg(arm):
    """Degrees: the largest rotation of any pose bone away from its rest (0 in the rest pose)."""
    w = np.clip(np.abs(quats(arm)[:, 0]), 0.0, 1.0)
    return float(np.degrees(2 * np.arccos(w)).max())


def fcurves(action):
    """An action's F-curves (Blender 5 keeps them in layers, strips and channel bags)."""
    if getattr(action, "layers", None):
        return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
                for fc in bag.fcurves]
    return list(action.fcurves)


def keys(action):
    """{(data path, index): [(frame, value), ...]} of an action."""
    return {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points] for fc in fcurves(action)}


def fit(rig):
    """Fit an SMPL-IK proxy to a rig (Fit Rig); returns the proxy."""
    bpy.context.view_layer.objects.active = rig
    assert bpy.ops.smpl_ik.fit_rig() == {"FINISHED"}
    update()
    return rig.smpl_ik_rig.proxy


def data_counts():
    """How many objects, meshes, armatures and actions the file holds."""
    return (len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.armatures), len(bpy.data.actions))


def refused_unchanged(call, message, target):
    """Run `call` (an operator call that must fail) on a new body when target is 'ACTIVE'
    (nothing selected otherwise): it raises with `message` (a regex) and leaves every data
    block and the scene's frame range as they were."""
    import pytest

    if target == "ACTIVE":
        assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    scene = bpy.context.scene
    frames, before = (scene.frame_start, scene.frame_end), data_counts()
    with pytest.raises(RuntimeError, match=message):
        call()
    assert data_counts() == before and (scene.frame_start, scene.frame_end) == frames


def undo_restores(call, operator, state):
    """`call` (an operator call that succeeds) changes `state()`; one undo brings it back, and
    the operator class `operator` is an undo step in the UI."""
    bpy.ops.ed.undo_push(message="before")
    before = state()
    assert call() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="after")        # as the operator's UNDO flag does in the UI
    assert state() != before
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert state() == before
    assert "UNDO" in operator.bl_options

"""The body's keys: its SMPL channels (every bone's quaternion, the root's location) keyed in
bulk or at one frame, read back from the F-curves, and whether its pose is keyed at all."""
import bpy
import numpy as np

from ...models.core.skeleton import JOINT_NAMES, NUM_JOINTS
from ..com import bridge
from ..com.blender import action_curves, curve_maker

ROOT_PATH = f'pose.bones["{JOINT_NAMES[0]}"].location'


def rotation_path(name):
    return f'pose.bones["{name}"].rotation_quaternion'


def scene_fps(scene):
    return scene.render.fps / scene.render.fps_base


def write_keys(action, arm, frames, quats, location, progress=lambda fraction: None):
    """Key the armature's slot of `action`: every SMPL bone's quaternion (K, 24, 4) (w first)
    and the root's location (K, 3) at `frames` (K,), one F-curve per channel written in one
    call each (linear interpolation: the keys are the motion, nothing eases between them)."""
    new_curve = curve_maker(action, arm)
    co = np.empty((len(frames), 2), np.float32)
    co[:, 0] = frames
    linear = np.full(len(frames), bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value,
                     np.int32)
    for pb in arm.pose.bones:
        if pb.name in JOINT_NAMES:
            pb.rotation_mode = "QUATERNION"

    def key(path, index, group, values):
        fc = new_curve(path, index, group)
        points = fc.keyframe_points
        points.add(len(frames))
        co[:, 1] = values
        points.foreach_set("co", co.ravel())
        points.foreach_set("interpolation", linear)
        fc.update()

    for j, name in enumerate(JOINT_NAMES):
        for i in range(4):
            key(rotation_path(name), i, name, quats[:, j, i])
        if j == 0:
            for i in range(3):
                key(ROOT_PATH, i, name, location[:, i])
        progress((j + 1) / NUM_JOINTS)


def keyframe_pose(arm, frame):
    """Key every pose bone's rotation and the root's location at `frame`."""
    for name in JOINT_NAMES:
        pb = arm.pose.bones[name]
        pb.keyframe_insert("rotation_quaternion", frame=frame, group=name)
    arm.pose.bones[JOINT_NAMES[0]].keyframe_insert("location", frame=frame, group=JOINT_NAMES[0])


def pose_is_keyed(arm):
    """Whether the body's action has keys on its pose bones (then it, not the bones, decides
    the pose whenever the frame changes)."""
    anim = arm.animation_data
    curves = action_curves(anim.action, arm) if anim is not None and anim.action is not None else None
    return any(fc.data_path.startswith("pose.bones[") and len(fc.keyframe_points) for fc in (curves or ()))


def pose_curves(arm):
    """{(data_path, index): F-curve} of the SMPL channels the body's action keys."""
    anim = arm.animation_data
    if anim is None or anim.action is None:
        return {}
    curves = action_curves(anim.action, arm)
    wanted = {rotation_path(n) for n in JOINT_NAMES} | {ROOT_PATH}
    return {(fc.data_path, fc.array_index): fc for fc in (curves or ()) if fc.data_path in wanted}


def is_animated(arm):
    anim = arm.animation_data
    return anim is not None and (bool(pose_curves(arm)) or any(
        d.data_path.startswith("pose.bones") for d in anim.drivers) or any(
        not t.mute and len(t.strips) for t in anim.nla_tracks))


def sample_curve(fc, frames):
    """(K,) an F-curve's values at `frames` (K,): the keys' own values where a key sits on
    the frame (read in one call), the curve evaluated elsewhere."""
    n = len(fc.keyframe_points)
    frames = np.asarray(frames, np.float64)
    if n == 0:
        return np.array([fc.evaluate(f) for f in frames])
    co = np.empty(2 * n, np.float32)
    fc.keyframe_points.foreach_get("co", co)
    keys, values = co[0::2].astype(np.float64), co[1::2].astype(np.float64)
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    at = np.minimum(np.searchsorted(keys, frames), n - 1)
    hit = keys[at] == frames
    out = np.empty(len(frames))
    out[hit] = values[at[hit]]
    for k in np.nonzero(~hit)[0]:
        out[k] = fc.evaluate(frames[k])
    return out


def keyed_channels(arm, frames, progress=lambda fraction: None):
    """(quaternions (K, 24, 4), root location (K, 3)) of the body's channels at `frames`:
    keyed channels from their F-curves, the others as the pose bones hold them."""
    curves = pose_curves(arm)
    still_q, still_loc = bridge.read_channels(arm)
    quats = np.broadcast_to(still_q, (len(frames), NUM_JOINTS, 4)).copy()
    location = np.broadcast_to(still_loc, (len(frames), 3)).copy()
    for j, name in enumerate(JOINT_NAMES):
        for i in range(4):
            fc = curves.get((rotation_path(name), i))
            if fc is not None:
                quats[:, j, i] = sample_curve(fc, frames)
        progress((j + 1) / NUM_JOINTS)
    for i in range(3):
        fc = curves.get((ROOT_PATH, i))
        if fc is not None:
            location[:, i] = sample_curve(fc, frames)
    return quats, location

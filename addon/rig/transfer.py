"""Transfer to Rig: bake what the proxy makes a driven rig do onto the rig's own bones, into a
new action (the rig's own actions are kept), optionally removing the drive."""
import bpy

from ...models.core.errors import SmplIkError
from ..com.blender import assign_new_action
from ..com.objects import is_custom_rig
from .drive import IK_FK, drive_constraints


def transfer_action_name(rig, proxy):
    """The new action a transfer writes: '<rig> from <proxy's action>' (the proxy's name when
    it has no action)."""
    action = proxy.animation_data.action if proxy is not None and proxy.animation_data else None
    source = action.name if action is not None else (proxy.name if proxy is not None else "SMPL-IK")
    return f"{rig.name} from {source}"


def transfer_to_rig(context, rig, frame_start, frame_end, remove_drive=False):
    """Key the rig's driven bones with what the proxy makes them do on every frame of the
    range (their visual local transforms) into a new action (`transfer_action_name`),
    assigned to the rig; the rig's own actions are left as they were (one that only the rig
    used gets a fake user, so it is kept). Optionally remove the drive. On an error nothing
    is keyed and the rig keeps its action. Returns the number of frames keyed."""
    if not is_custom_rig(rig):
        raise SmplIkError("select the custom rig (the armature a proxy drives)")
    driven = drive_constraints(rig)
    if not driven:
        raise SmplIkError(f"{rig.name} is not driven by an SMPL-IK proxy; fit it first")
    if frame_end < frame_start:
        raise SmplIkError(f"the range {frame_start}-{frame_end} is empty")
    scene = context.scene
    proxy = rig.smpl_ik_rig.proxy or driven[0][1].target
    bones = sorted({pb.name for pb, _ in driven})
    switches = [pb for pb in rig.pose.bones if IK_FK in pb.keys()] if rig.smpl_ik_rig.rigify else []
    original = scene.frame_current
    ad = rig.animation_data or rig.animation_data_create()
    previous = ad.action
    previous_slot = getattr(ad, "action_slot", None) if previous is not None else None
    # sampled under the new, still empty action: the bones it will not key hold still while
    # sampling exactly as they will when it plays
    action, kept = assign_new_action(rig, transfer_action_name(rig, proxy))
    try:
        frames = range(frame_start, frame_end + 1)
        samples = []
        for frame in frames:
            scene.frame_set(frame)
            samples.append({name: rig.convert_space(pose_bone=rig.pose.bones[name], matrix=rig.pose.bones[name].matrix,
                                                    from_space="POSE", to_space="LOCAL").copy() for name in bones})
        for frame, sample in zip(frames, samples):
            for name, matrix in sample.items():
                _key_bone(rig.pose.bones[name], matrix, frame)
        for pb in switches:   # the keys are on FK controls: the action plays them in FK
            pb[IK_FK] = 1.0
            pb.keyframe_insert(f'["{IK_FK}"]', frame=frame_start, group=pb.name)
    except Exception as exc:
        ad.action = previous
        if previous_slot is not None:
            ad.action_slot = previous_slot
        if kept is not None:
            kept.use_fake_user = False
        bpy.data.actions.remove(action)
        scene.frame_set(original)
        raise SmplIkError(f"could not transfer the motion to {rig.name}: {exc}") from exc
    if remove_drive:
        for pb, con in driven:
            pb.constraints.remove(con)
        rig.smpl_ik_rig.proxy = None
    scene.frame_set(original)
    return frame_end - frame_start + 1


def _key_bone(pb, matrix, frame):
    """Key a pose bone's location and rotation (in its own rotation mode) from a local matrix."""
    name = pb.name
    loc, rot, _ = matrix.decompose()
    pb.location = loc
    if pb.rotation_mode == "QUATERNION":
        pb.rotation_quaternion = rot
        pb.keyframe_insert("rotation_quaternion", frame=frame, group=name)
    elif pb.rotation_mode == "AXIS_ANGLE":
        axis, angle = rot.to_axis_angle()
        pb.rotation_axis_angle = (angle, *axis)
        pb.keyframe_insert("rotation_axis_angle", frame=frame, group=name)
    else:
        pb.rotation_euler = rot.to_euler(pb.rotation_mode, pb.rotation_euler)
        pb.keyframe_insert("rotation_euler", frame=frame, group=name)
    pb.keyframe_insert("location", frame=frame, group=name)

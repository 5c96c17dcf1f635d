"""A body's motion out of Blender as an AMASS-style SMPL `.npz`: its keyed motion, read from the
keys or evaluated frame by frame when constraints, drivers, NLA or blending make them differ
from what Blender shows, or its pose when it is not animated."""
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...models.core.errors import SmplIkError
from ...models.core.kinematics import world_to_local
from ...models.core.rotations import matrix_to_axis_angle, quat_wxyz_to_axis_angle
from ...models.core.skeleton import JOINT_NAMES, NUM_JOINTS
from ...models.motion import amass
from ..body.build import body_floor, body_model_of, open_body_name_of
from ..com import bridge, live
from .importer import file_path
from .keys import is_animated, keyed_channels, pose_curves, scene_fps


@dataclass(frozen=True)
class ExportOptions:
    """What an export writes: frames frame_start..frame_end (None: the scene's) of an
    animated body, or its pose when it is not animated; up_axis 'Z' (AMASS) or 'Y' (SMPL's
    frame)."""

    filepath: str
    frame_start: int = None
    frame_end: int = None
    up_axis: str = "Z"


@dataclass(frozen=True)
class Exported:
    """What an export wrote: the file, its frames and rate, its up axis, the floor height it
    states (None: not written), and how the motion was read ('keys': from the F-curves;
    'evaluated': frame by frame as Blender shows it, for `reason`; 'pose': the body is not
    animated, its current pose)."""

    path: str
    frames: int
    fps: float
    up_axis: str
    source: str
    reason: str = ""
    floor_height: object = None
    notes: tuple = ()

    def describe(self):
        what = {"keys": "from its keys", "evaluated": f"evaluated frame by frame ({self.reason})",
                "pose": "its current pose (the body is not animated)"}[self.source]
        text = (f"Exported {self.frames} frame(s) at {self.fps:g} fps to {self.path}, {what}; "
                f"up axis {self.up_axis}")
        if self.floor_height is not None:
            text += f"; floor at {self.up_axis.lower()} = {self.floor_height:.3f} m (the body's Floor Height)"
        return text + "".join(f"; {n}" for n in self.notes)


def _evaluation_reasons(arm):
    """Why the body's keys alone are not what Blender shows: constraints, drivers, NLA, a
    blended action, F-curve modifiers or muted curves, bones not in quaternion mode."""
    reasons = []
    for name in JOINT_NAMES:
        pb = arm.pose.bones[name]
        if any(not c.mute and c.influence > 0 for c in pb.constraints):
            reasons.append(f"bone {name} has constraints")
        if pb.rotation_mode != "QUATERNION":
            reasons.append(f"bone {name} rotates in {pb.rotation_mode} mode")
    anim = arm.animation_data
    if anim is not None:
        if any(d.data_path.startswith("pose.bones") for d in anim.drivers):
            reasons.append("the pose has drivers")
        if any(not t.mute and len(t.strips) for t in anim.nla_tracks):
            reasons.append("the body has NLA strips")
        if anim.action is not None and (anim.action_influence < 1.0 or anim.action_blend_type != "REPLACE"):
            reasons.append("its action is blended")
        if anim.action is not None and hasattr(anim.action, "layers") and (
                len(anim.action.layers) > 1 or any(len(layer.strips) > 1 for layer in anim.action.layers)):
            reasons.append("its action has layers")
        for fc in pose_curves(arm).values():
            if len(fc.modifiers) or fc.mute:
                reasons.append(f"the F-curve {fc.data_path}[{fc.array_index}] has modifiers or is muted")
                break
    return reasons


def _pose_matrices(arm):
    """(24, 4, 4) the evaluated pose matrices (armature space) of the SMPL bones."""
    bones = arm.pose.bones
    buf = np.empty(len(bones) * 16, np.float32)
    bones.foreach_get("matrix", buf)
    order = {pb.name: k for k, pb in enumerate(bones)}
    return buf.reshape(-1, 4, 4).transpose(0, 2, 1)[[order[n] for n in JOINT_NAMES]].astype(np.float64)


def pose_from_matrices(matrices, axes, pelvis_rest):
    """SMPL (local rotations (..., 24, 3, 3), trans (..., 3)) from evaluated pose matrices
    (..., 24, 4, 4) (armature space) of bones with rest axes (24, 3, 3) and the rest pelvis
    (3,) (SMPL frame): what Blender shows, constraints and drivers included."""
    world, positions = bridge.pose_matrices_to_smpl(matrices, axes)
    return world_to_local(world), positions[..., 0, :] - pelvis_rest


def evaluated_pose(context, arm, frames, progress=lambda fraction: None):
    """SMPL (local rotations (K, 24, 3, 3), trans (K, 3)) as Blender shows the body at each of
    `frames` (live solving paused, so the keys and constraints are what is read)."""
    scene = context.scene
    original = scene.frame_current, scene.frame_subframe
    mats = np.empty((len(frames), NUM_JOINTS, 4, 4))
    # the skinned mesh need not follow while the bones are read: its modifiers rest meanwhile
    mesh = arm.smpl_ik.mesh
    resting = [m for m in mesh.modifiers if m.show_viewport] if mesh is not None else []
    live.suspended.append(True)
    try:
        for m in resting:
            m.show_viewport = False
        for k, frame in enumerate(frames):
            scene.frame_set(int(frame))
            mats[k] = _pose_matrices(arm)
            if k % 64 == 0:
                progress(k / len(frames))
    finally:
        for m in resting:
            m.show_viewport = True
        live.suspended.pop()
        scene.frame_set(original[0], subframe=original[1])
    return pose_from_matrices(mats, bridge.bone_axes(arm), bridge.rest_joints(arm)[0])


def export_motion(context, arm, options, progress=lambda fraction: None):
    """Write the body's motion (options: an ExportOptions) as an AMASS-style `.npz`, atomically;
    returns an Exported. An animated body gives one frame per scene frame of the range, read
    from its keys, or evaluated frame by frame when constraints, drivers, NLA or blending make
    the keys differ from what Blender shows; a body that is not animated gives its pose."""
    path = file_path(options.filepath, "output")
    if path.suffix.lower() != ".npz":
        path = path.with_name(path.name + ".npz")
    scene = context.scene
    body = body_model_of(arm)
    betas = np.array(arm.smpl_ik.applied_betas[:])
    pelvis = bridge.rest_joints(arm)[0]
    axes = bridge.bone_axes(arm)
    reasons = _evaluation_reasons(arm)
    notes = []
    if is_animated(arm):
        start = scene.frame_start if options.frame_start is None else int(options.frame_start)
        end = scene.frame_end if options.frame_end is None else int(options.frame_end)
        if end < start:
            raise SmplIkError(f"the export range {start}-{end} is empty")
        frames = np.arange(start, end + 1)
        if reasons:
            local, trans = evaluated_pose(context, arm, frames, lambda f: progress(0.9 * f))
            poses = matrix_to_axis_angle(local)
            source = "evaluated"
        else:
            quats, location = keyed_channels(arm, frames, lambda f: progress(0.9 * f))
            poses = quat_wxyz_to_axis_angle(bridge.bone_quats_to_smpl_quats(quats, axes))
            trans = bridge.trans_from_root_location(location, axes)
            source = "keys"
    else:
        context.view_layer.update()
        if reasons:
            local, trans = pose_from_matrices(_pose_matrices(arm)[None], axes, pelvis)
            poses = matrix_to_axis_angle(local)
            source = "evaluated"
        else:
            quats, location = bridge.read_channels(arm)
            poses = quat_wxyz_to_axis_angle(bridge.bone_quats_to_smpl_quats(quats[None], axes))
            trans = bridge.trans_from_root_location(location[None], axes)
            source = "pose"
    moved = [n for n in JOINT_NAMES[1:] if any(abs(v) > 1e-9 for v in arm.pose.bones[n].location)]
    if moved:
        notes.append(f"the locations of {', '.join(moved[:3])} are not exported (SMPL's joints only rotate)")
    if options.up_axis == "Z":
        poses, trans = amass.z_up_from_smpl_frame(poses, trans, pelvis)
    body_model = open_body_name_of(arm.smpl_ik.body_path, body) or Path(arm.smpl_ik.body_path).name
    # the body's floor in the file's numbers (SMPL's up in armature space is the file's up
    # either way), so that importing the file puts it back on a floor
    try:
        floor_height, tilt = body_floor(arm)
    except SmplIkError as exc:   # a bad Floor Height does not stop an export: it only goes unsaid
        floor_height, tilt = None, 0.0
        notes.append(f"no floor_height written ({exc})")
    if tilt > bridge.FLOOR_TILT:
        floor_height = None
        notes.append(f"no floor_height written: {arm.name} is tilted {math.degrees(tilt):.1f} degrees from upright")
    progress(0.95)
    amass.write_motion_npz(path, amass.MotionFile(poses=poses, trans=trans, betas=betas, gender=body.gender,
                                                  fps=scene_fps(scene), body_model=body_model,
                                                  up_axis=options.up_axis, floor_height=floor_height))
    return Exported(path=str(path), frames=len(poses), fps=scene_fps(scene), up_axis=options.up_axis,
                    source=source, reason=", ".join(reasons[:2]), floor_height=floor_height, notes=tuple(notes))

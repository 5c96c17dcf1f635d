"""AMASS-style SMPL motion (`.npz`) in and out of Blender: import a file onto a new or the
active body as one new action (keys written in bulk, resampled to the scene's frame rate), and
export a body's keyed motion or its pose.

The file's numbers become the pose bones' channels through the bridge's conventions (SMPL
local rotations, the root's translation); a Z-up (AMASS) file is first turned into SMPL's
Y-up frame (models.motion.amass), then, as the floor option says, moved up or down onto the
floor (models.motion.floor measures the body's lowest point). Everything that can fail
(reading and checking the file, choosing and loading the body) happens before the scene
changes, so a refused file leaves no body, action or orphan data behind.
"""
import math
from dataclasses import dataclass, field
from pathlib import Path

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..models.body.model import NUM_BETAS, load_body_model, open_body_name, open_body_path
from ..models.core.errors import SmplIkError
from ..models.core.rotations import axis_angle_to_quat_wxyz, matrix_to_axis_angle, quat_wxyz_to_axis_angle
from ..models.core.skeleton import JOINT_NAMES, NUM_JOINTS, PARENTS
from ..models.motion import amass, floor
from ..models.motion.resample import continuous_quats, resample_motion, resample_timing
from . import bridge, live
from .body_object import SHAPE_KEY_RANGE, body_model_of, create_body
from .common import assign_new_action
from .operators import target_body
from .preferences import user_body_files

UP_AXIS_ITEMS = (
    ("AUTO", "Auto", "Decide from the file: its own word, else where the root orientation sends the body's "
                     "up axis (the report says which)"),
    ("Z", "Z (AMASS)", "The file is Z-up in the world, as AMASS's own files are"),
    ("Y", "Y (SMPL frame)", "The file is in SMPL's Y-up frame, as scripts/retarget.py writes"),
)
EXPORT_UP_ITEMS = UP_AXIS_ITEMS[1:]
FLOOR_ITEMS = (
    ("AUTO", "Auto", "Put the body on the floor unless the file says where its floor is (floor_height): then "
                     "put that floor on the floor, keeping the clip's height above it"),
    ("ON", "Put on Floor", "Move the clip up or down so that its lowest point is on the floor, whatever the file "
                           f"says (not when it is within {100 * floor.ON_FLOOR:g} cm of it, or up to "
                           f"{100 * floor.FAR_ABOVE:g} cm above)"),
    ("OFF", "As in File", "Keep the file's heights; the report says where the lowest point is"),
)
ROOT_PATH = f'pose.bones["{JOINT_NAMES[0]}"].location'


def _open_body_name(body_path, body):
    """models.body.model.open_body_name of a body object's file path (relative paths resolved
    as Blender does) and its BodyModel's gender."""
    return open_body_name(bpy.path.abspath(body_path) if body_path else None, body.gender)


def _rotation_path(name):
    return f'pose.bones["{name}"].rotation_quaternion'


def _scene_fps(scene):
    return scene.render.fps / scene.render.fps_base


# --- import ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ImportOptions:
    """What an import does. target: 'NEW' (a new body at the 3D cursor, its origin being the
    file's origin) or 'ACTIVE' (the selected body); up_axis: 'AUTO', 'Z' or 'Y'; floor: 'AUTO',
    'ON' or 'OFF' (models.motion.floor.place_on_floor: onto the floor unless the file states
    its own; always measured and moved; kept as in the file); keep_source_rate: one key per
    source frame instead of keys at the scene's frame rate; set_frame_range: the scene's range
    becomes the keys'; frame_start: the first key's frame (None: the scene's start)."""

    filepath: str
    target: str = "NEW"
    up_axis: str = "AUTO"
    floor: str = "AUTO"
    keep_source_rate: bool = False
    set_frame_range: bool = True
    frame_start: int = None


@dataclass(frozen=True)
class Imported:
    """What an import did: the body (armature) and its new action, the keyed frames, the
    source's frame count and rate, the rate of the keys, the up axis chosen, what was done
    about the floor (floor: a models.motion.floor.FloorPlacement, None when the body's tilt
    left no level floor to measure against; floor_note: in words) and notes."""

    body: object
    action: object
    frame_start: int
    frame_end: int
    source_frames: int
    source_fps: float
    key_fps: float
    up: amass.UpAxisChoice
    body_label: str
    floor: object = None
    floor_note: str = ""
    notes: tuple = field(default_factory=tuple)

    def describe(self):
        keys = self.frame_end - self.frame_start + 1
        text = (f"Imported {self.action.name}: {self.source_frames} frames at {self.source_fps:g} fps "
                f"as {keys} keys at {self.key_fps:g} fps (frames {self.frame_start}-{self.frame_end}) on "
                f"{self.body.name} ({self.body_label}); up axis {self.up.axis}: {self.up.reason}")
        return text + "".join(f"; {n}" for n in (self.floor_note, *self.notes) if n)


def _file(path_text, what):
    if not path_text:
        raise SmplIkError(f"no {what} file given")
    return Path(bpy.path.abspath(path_text))


def _body_for_gender(context, motion):
    """(BodyModel, body_path for the armature, notes) for a new body carrying `motion`: the
    user's file of its gender, else the open body of that gender."""
    gender = motion.gender or "neutral"
    user = amass.choose_body_file(user_body_files(context), gender, motion.kind)
    if user is not None:
        return load_body_model(user), str(user), []
    return load_body_model(open_body_path(gender)), "", []   # no file: the body's gender names its open body


def _carried_betas(motion, body_path, body, notes):
    """(10,) the file's betas as the body's shape, or None where they do not carry over: they
    carry onto a user's SMPL file (cut or padded to 10), and onto an open body only when the
    file says its betas are that body's (this project's own files)."""
    betas = motion.betas
    if betas.size == 0:   # a file without betas leaves the shape as it is (a new body: average)
        return None
    open_name = _open_body_name(body_path, body)
    if open_name is not None and motion.body_model != open_name:
        if betas.size and np.any(betas):
            notes.append(f"the file's betas are in the shape space of {motion.body_model or 'SMPL'}, which the "
                         "open body does not share: they were not used")
        return None
    out = np.zeros(NUM_BETAS)
    n = min(NUM_BETAS, betas.size)
    out[:n] = betas[:n]
    if betas.size > NUM_BETAS and np.any(betas[NUM_BETAS:]):
        notes.append(f"betas {NUM_BETAS}-{betas.size - 1} dropped (the body has {NUM_BETAS})")
    if np.any(np.abs(out) > SHAPE_KEY_RANGE):
        notes.append(f"betas clipped to -{SHAPE_KEY_RANGE:g}..{SHAPE_KEY_RANGE:g}")
        out = np.clip(out, -SHAPE_KEY_RANGE, SHAPE_KEY_RANGE)
    return out


def _smpl_frame_motion(motion, choice, pelvis_rest):
    """(poses (T, 24, 3), trans (T, 3)) of `motion` in SMPL's Y-up frame."""
    if choice.axis == "Z":
        return amass.smpl_frame_from_z_up(motion.poses, motion.trans, pelvis_rest)
    return motion.poses, motion.trans


def _pelvis_rest(arm):
    """(3,) the body's rest pelvis in SMPL's frame (its bone head: what the pose moves)."""
    return bridge.from_blender(bridge.bone_heads(arm)[0])


def _world_matrix(arm):
    """(4, 4) the armature's world matrix, current even before the scene is evaluated when
    nothing parents or constrains the object (its own location, rotation and scale)."""
    current = arm.parent is None and not len(arm.constraints)
    return bridge.matrix_array(arm.matrix_basis if current else arm.matrix_world)


def body_floor(arm):
    """(height, tilt) of a body's floor, its Floor Height (world Z, metres): the height along
    SMPL's up axis in the armature's space, and the angle (radians) between the world's up and
    the body's (bridge.floor_in_body). SmplIkError for a floor height that is not a number."""
    height = arm.smpl_ik.floor_height
    if not math.isfinite(height):
        raise SmplIkError(f"{arm.name}: its Floor Height is {height:g}, not a number of metres; set it on the "
                          "Body panel")
    return bridge.floor_in_body(_world_matrix(arm), height)


def _placed_on_floor(arm, body, poses, trans, motion, options, floor_height, tilt):
    """(trans (T, 3) moved along SMPL's up as the floor option says, FloorPlacement or None,
    note) for the motion (poses (T, 24, 3), trans, SMPL frame, armature space) on `arm`,
    whose floor lies at `floor_height` (armature space, SMPL's Y) with the body tilted `tilt`
    radians from upright (over bridge.FLOOR_TILT: no level floor, the heights are kept)."""
    if tilt > bridge.FLOOR_TILT:
        return trans, None, (f"{arm.name} is tilted {math.degrees(tilt):.1f} degrees from upright, so no level "
                             "floor lies under it: heights kept as in the file")
    lowest = floor.lowest_point(body, np.array(arm.smpl_ik.applied_betas[:]), poses, trans, "Y",
                                rest_joints=bridge.from_blender(bridge.bone_heads(arm)))
    placed = floor.place_on_floor(lowest, floor_height, options.floor, motion.floor_height)
    return trans + [0.0, placed.shift, 0.0], placed, placed.note


def read_motion(path_text):
    """The checked MotionFile at `path_text` (SmplIkError naming the file when it is missing,
    unreadable or wrong)."""
    path = _file(path_text, "motion")
    if not path.is_file():
        raise SmplIkError(f"{path}: no such file")
    return amass.read_motion_npz(path)


def import_motion(context, options, progress=lambda fraction: None):
    """Import an AMASS-style `.npz` (options: an ImportOptions) as one new action named after
    the file; returns an Imported. SmplIkError (file missing, unreadable or wrong; no body
    selected for 'ACTIVE') before the scene changes."""
    motion = read_motion(options.filepath)
    if options.floor not in floor.FLOOR_MODES:
        raise SmplIkError(f"floor option {options.floor!r} is not one of {', '.join(floor.FLOOR_MODES)}")
    scene = context.scene
    notes = []
    if options.target == "ACTIVE":
        arm = target_body(context)
        body = body_model_of(arm)
        body_path = arm.smpl_ik.body_path
        if motion.gender and motion.gender != body.gender:
            notes.append(f"the file is for a {motion.gender} body, {arm.name} is {body.gender}")
        floor_height, tilt = body_floor(arm)   # its own floor (Floor Height), in its armature's space
    else:
        arm = None
        body, body_path, more = _body_for_gender(context, motion)
        notes += more
        floor_height, tilt = 0.0, 0.0   # the file's origin at the cursor: the floor at the cursor's height
    betas = _carried_betas(motion, body_path, body, notes)
    if options.up_axis == "AUTO":
        up = amass.detect_up_axis(motion.poses, motion.up_axis)
    else:
        up = amass.UpAxisChoice(options.up_axis, "as asked")
    source_fps = motion.fps
    if source_fps is None:
        source_fps = _scene_fps(scene)
        notes.append(f"the file has no frame rate: taken as the scene's {source_fps:g} fps")
    key_fps = source_fps if options.keep_source_rate else _scene_fps(scene)
    if abs(key_fps - _scene_fps(scene)) > 1e-3 * key_fps:
        notes.append(f"one key per source frame: the keys play at the scene's {_scene_fps(scene):g} fps, "
                     f"not the file's {source_fps:g}")
    timing = resample_timing(motion.num_frames, source_fps, key_fps)
    start = scene.frame_start if options.frame_start is None else int(options.frame_start)
    for note in motion.notes:
        if "no 'betas'" in note and options.target == "ACTIVE":
            note = "no 'betas': the body keeps its shape"
        if "mocap_framerate" not in note:
            notes.append(note)
    progress(0.1)

    created = []
    reshaped = None   # the active body's shape before the file's betas, restored on a failure
    try:
        if arm is None:
            if context.mode != "OBJECT" and context.view_layer.objects.active is not None:
                bpy.ops.object.mode_set(mode="OBJECT")
            arm = create_body(context, body, body_path=body_path, name=f"SMPL-IK {Path(motion.path).stem}",
                              location=scene.cursor.location.copy(), betas=betas)
            created += [arm.smpl_ik.mesh, arm]
            arm.location = scene.cursor.location   # the file's origin (its floor) at the cursor
            arm.smpl_ik.floor_height = scene.cursor.location.z   # the body's floor: where it was put
        elif betas is not None and not np.allclose(arm.smpl_ik.applied_betas[:], betas, rtol=0, atol=1e-7):
            if arm.smpl_ik.rig is not None:
                notes.append(f"{arm.name} takes its shape from its rig: the file's betas were not applied")
            else:
                reshaped = arm.smpl_ik.applied_betas[:]
                arm.smpl_ik.betas = betas.tolist()
        progress(0.2)
        poses, trans = _smpl_frame_motion(motion, up, _pelvis_rest(arm))
        trans, placed, floor_note = _placed_on_floor(arm, body, poses, trans, motion, options, floor_height, tilt)
        progress(0.25)
        quats, trans = resample_motion(axis_angle_to_quat_wxyz(poses), trans, timing)
        axes = bridge.bone_axes(arm)
        bone_quats = continuous_quats(bridge.smpl_quats_to_bone_quats(quats, axes))
        location = bridge.root_location_from_trans(trans, axes)
        progress(0.3)
        action, kept = assign_new_action(arm, Path(motion.path).stem)
        created.append(action)
        if kept is not None:
            notes.append(f"its previous action {kept.name!r} is kept (fake user)")
        frames = start + np.arange(timing.num_frames)
        write_keys(action, arm, frames, bone_quats, location, lambda f: progress(0.3 + 0.7 * f))
    except BaseException:
        _remove(created)
        if reshaped is not None:
            arm.smpl_ik.betas = reshaped
        raise
    if options.set_frame_range:
        scene.frame_start, scene.frame_end = start, start + timing.num_frames - 1
    if options.target != "ACTIVE":
        for obj in context.selected_objects:
            obj.select_set(False)
        arm.select_set(True)
        context.view_layer.objects.active = arm
    return Imported(body=arm, action=action, frame_start=start, frame_end=start + timing.num_frames - 1,
                    source_frames=motion.num_frames, source_fps=source_fps, key_fps=key_fps, up=up,
                    body_label=body.label, floor=placed, floor_note=floor_note, notes=tuple(notes))


def _remove(created):
    """Remove what a failed import made (objects, then their data), so nothing is orphaned."""
    for item in created:
        if item is None:
            continue
        if isinstance(item, bpy.types.Action):
            bpy.data.actions.remove(item)
            continue
        data = item.data
        bpy.data.objects.remove(item)
        if data is not None and data.users == 0:
            (bpy.data.meshes if isinstance(data, bpy.types.Mesh) else bpy.data.armatures).remove(data)


# --- keys in bulk -------------------------------------------------------------------------------

def _channels(action, arm, create):
    """The collection of F-curves the armature's slot of `action` holds (created when asked),
    or None; in Blender before 4.4, the action's own."""
    if not hasattr(action, "layers"):
        return action.fcurves
    slot = arm.animation_data.action_slot
    if slot is None:
        return None
    if create:
        layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
        strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
        return strip.channelbag(slot, ensure=True).fcurves
    from bpy_extras import anim_utils

    bag = anim_utils.action_get_channelbag_for_slot(action, slot)
    return bag.fcurves if bag is not None else None


def _new_curve(curves, path, index, group):
    try:
        return curves.new(path, index=index, group_name=group)
    except TypeError:   # Blender before 4.4: action.fcurves.new(..., action_group=)
        return curves.new(path, index=index, action_group=group)


def write_keys(action, arm, frames, quats, location, progress=lambda fraction: None):
    """Key the armature's slot of `action`: every SMPL bone's quaternion (K, 24, 4) (w first)
    and the root's location (K, 3) at `frames` (K,), one F-curve per channel written in one
    call each (linear interpolation: the keys are the motion, nothing eases between them)."""
    curves = _channels(action, arm, create=True)
    co = np.empty((len(frames), 2), np.float32)
    co[:, 0] = frames
    linear = np.full(len(frames), bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value,
                     np.int32)
    for pb in arm.pose.bones:
        if pb.name in JOINT_NAMES:
            pb.rotation_mode = "QUATERNION"

    def key(path, index, group, values):
        fc = _new_curve(curves, path, index, group)
        points = fc.keyframe_points
        points.add(len(frames))
        co[:, 1] = values
        points.foreach_set("co", co.ravel())
        points.foreach_set("interpolation", linear)
        fc.update()

    for j, name in enumerate(JOINT_NAMES):
        for i in range(4):
            key(_rotation_path(name), i, name, quats[:, j, i])
        if j == 0:
            for i in range(3):
                key(ROOT_PATH, i, name, location[:, i])
        progress((j + 1) / NUM_JOINTS)


# --- export -------------------------------------------------------------------------------------

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
        for fc in _pose_curves(arm).values():
            if len(fc.modifiers) or fc.mute:
                reasons.append(f"the F-curve {fc.data_path}[{fc.array_index}] has modifiers or is muted")
                break
    return reasons


def _pose_curves(arm):
    """{(data_path, index): F-curve} of the SMPL channels the body's action keys."""
    anim = arm.animation_data
    if anim is None or anim.action is None:
        return {}
    curves = _channels(anim.action, arm, create=False)
    wanted = {_rotation_path(n) for n in JOINT_NAMES} | {ROOT_PATH}
    return {(fc.data_path, fc.array_index): fc for fc in (curves or ()) if fc.data_path in wanted}


def _is_animated(arm):
    anim = arm.animation_data
    return anim is not None and (bool(_pose_curves(arm)) or any(
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
    curves = _pose_curves(arm)
    still_q, still_loc = bridge.read_channels(arm)
    quats = np.broadcast_to(still_q, (len(frames), NUM_JOINTS, 4)).copy()
    location = np.broadcast_to(still_loc, (len(frames), 3)).copy()
    for j, name in enumerate(JOINT_NAMES):
        for i in range(4):
            fc = curves.get((_rotation_path(name), i))
            if fc is not None:
                quats[:, j, i] = sample_curve(fc, frames)
        progress((j + 1) / NUM_JOINTS)
    for i in range(3):
        fc = curves.get((ROOT_PATH, i))
        if fc is not None:
            location[:, i] = sample_curve(fc, frames)
    return quats, location


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
    parent = world[..., [max(p, 0) for p in PARENTS], :, :]
    local = np.swapaxes(parent, -1, -2) @ world
    local[..., 0, :, :] = world[..., 0, :, :]
    return local, positions[..., 0, :] - pelvis_rest


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
    return pose_from_matrices(mats, bridge.bone_axes(arm), _pelvis_rest(arm))


def export_motion(context, arm, options, progress=lambda fraction: None):
    """Write the body's motion (options: an ExportOptions) as an AMASS-style `.npz`, atomically;
    returns an Exported. An animated body gives one frame per scene frame of the range, read
    from its keys, or evaluated frame by frame when constraints, drivers, NLA or blending make
    the keys differ from what Blender shows; a body that is not animated gives its pose."""
    path = _file(options.filepath, "output")
    if path.suffix.lower() != ".npz":
        path = path.with_name(path.name + ".npz")
    scene = context.scene
    body = body_model_of(arm)
    betas = np.array(arm.smpl_ik.applied_betas[:])
    pelvis = _pelvis_rest(arm)
    axes = bridge.bone_axes(arm)
    reasons = _evaluation_reasons(arm)
    notes = []
    if _is_animated(arm):
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
    body_model = _open_body_name(arm.smpl_ik.body_path, body) or Path(arm.smpl_ik.body_path).name
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
    amass.write_motion_npz(path, poses, trans, betas, body.gender, _scene_fps(scene), body_model=body_model,
                           up_axis=options.up_axis, floor_height=floor_height)
    return Exported(path=str(path), frames=len(poses), fps=_scene_fps(scene), up_axis=options.up_axis,
                    source=source, reason=", ".join(reasons[:2]), floor_height=floor_height, notes=tuple(notes))


# --- operators ----------------------------------------------------------------------------------

class _Progress:
    """The window manager's progress bar, 0-1000, as a callable taking a fraction."""

    def __init__(self, context):
        self.wm = context.window_manager

    def __enter__(self):
        self.wm.progress_begin(0, 1000)
        return lambda fraction: self.wm.progress_update(int(1000 * min(max(fraction, 0.0), 1.0)))

    def __exit__(self, *exc):
        self.wm.progress_end()


class SMPL_IK_OT_import_motion(bpy.types.Operator, ImportHelper):
    """Import an AMASS-style SMPL motion (.npz) onto a new body or the active one, as one new action"""

    bl_idname = "smpl_ik.import_motion"
    bl_label = "Import SMPL-IK Motion"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".npz"
    filter_glob: StringProperty(default="*.npz", options={"HIDDEN"})
    target: EnumProperty(name="Onto", items=(("NEW", "New Body", "A new body of the file's gender at the 3D cursor"),
                                             ("ACTIVE", "Active Body", "The selected body")), default="NEW")
    up_axis: EnumProperty(name="Up Axis", items=UP_AXIS_ITEMS, default="AUTO")
    floor: EnumProperty(name="Floor", items=FLOOR_ITEMS, default="AUTO",
                        description="Put the clip's feet on the floor (the 3D cursor's height for a new body, the "
                                    "body's Floor Height for the active one)")
    keep_source_rate: BoolProperty(name="Keep Source Rate", default=False,
                                   description="One key per frame of the file instead of keys at the scene's "
                                               "frame rate (the motion then plays faster or slower)")
    set_frame_range: BoolProperty(name="Set Frame Range", default=True,
                                  description="Make the scene's frame range the imported keys'")
    frame_start: IntProperty(name="Start Frame", default=1, description="The first key's frame "
                             "(unless set: the scene's start frame)")

    def execute(self, context):
        options = ImportOptions(filepath=self.filepath, target=self.target, up_axis=self.up_axis, floor=self.floor,
                                keep_source_rate=self.keep_source_rate, set_frame_range=self.set_frame_range,
                                frame_start=self.frame_start if self.properties.is_property_set("frame_start") else None)
        try:
            with _Progress(context) as progress:
                result = import_motion(context, options, progress)
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, result.describe())
        return {"FINISHED"}


class SMPL_IK_OT_export_motion(bpy.types.Operator, ExportHelper):
    """Export the selected body's animation (or its pose) as an AMASS-style SMPL motion (.npz)"""

    bl_idname = "smpl_ik.export_motion"
    bl_label = "Export SMPL-IK Motion"
    bl_options = {"REGISTER"}

    filename_ext = ".npz"
    filter_glob: StringProperty(default="*.npz", options={"HIDDEN"})
    frame_start: IntProperty(name="Start", default=1, description="First frame (unless set: the scene's)")
    frame_end: IntProperty(name="End", default=250, description="Last frame (unless set: the scene's)")
    up_axis: EnumProperty(name="Up Axis", items=EXPORT_UP_ITEMS, default="Z")

    def invoke(self, context, event):
        if not self.properties.is_property_set("frame_start"):
            self.frame_start = context.scene.frame_start
        if not self.properties.is_property_set("frame_end"):
            self.frame_end = context.scene.frame_end
        return ExportHelper.invoke(self, context, event)

    def execute(self, context):
        is_set = self.properties.is_property_set
        options = ExportOptions(filepath=self.filepath,
                                frame_start=self.frame_start if is_set("frame_start") else None,
                                frame_end=self.frame_end if is_set("frame_end") else None, up_axis=self.up_axis)
        try:
            arm = target_body(context)
            with _Progress(context) as progress:
                result = export_motion(context, arm, options, progress)
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, result.describe())
        return {"FINISHED"}


def _menu_import(self, context):
    self.layout.operator(SMPL_IK_OT_import_motion.bl_idname, text="SMPL-IK motion (.npz)")


def _menu_export(self, context):
    self.layout.operator(SMPL_IK_OT_export_motion.bl_idname, text="SMPL-IK motion (.npz)")


classes = (SMPL_IK_OT_import_motion, SMPL_IK_OT_export_motion)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)
    bpy.types.TOPBAR_MT_file_export.append(_menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(_menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
    _unregister_classes()

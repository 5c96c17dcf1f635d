"""AMASS-style SMPL motion (`.npz`) into Blender: a file onto a new or the active body as one
new action (keys written in bulk, resampled to the scene's frame rate). Joint files (3D joint
positions in a layout of models.motion.joints) are solved into such a motion first
(models.ik.from_joints) and keyed the same way.

The file's numbers become the pose bones' channels through the bridge's conventions (SMPL
local rotations, the root's translation); a Z-up (AMASS) file is first turned into SMPL's
Y-up frame (models.motion.amass), then, as the floor option says, moved up or down onto the
floor (models.motion.floor measures the body's lowest point). Everything that can fail
(reading and checking the file, choosing and loading the body) happens before the scene
changes, so a refused file leaves no body, action or orphan data behind.
"""
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import bpy
import numpy as np

from ...models.body.model import NUM_BETAS, load_body_model, open_body_path
from ...models.core.errors import SmplIkError
from ...models.core.rotations import axis_angle_to_quat_wxyz
from ...models.ik.from_joints import JointOptions, joints_to_smpl
from ...models.motion import amass, floor
from ...models.motion.betas import carried_betas
from ...models.motion.joints import read_joint_file
from ...models.motion.resample import continuous_quats, resample_motion, resample_timing
from ..body.build import SHAPE_KEY_RANGE, BodySpec, body_floor, body_model_of, create_body, open_body_name_of
from ..com import bridge
from ..com.blender import assign_new_action, object_mode, remove_created, select_only, user_body_files
from ..com.objects import target_body
from .keys import scene_fps, write_keys


@dataclass(frozen=True)
class ImportOptions:
    """What an import does. target: 'NEW' (a new body at the 3D cursor, its origin being the
    file's origin) or 'ACTIVE' (the selected body); up_axis: 'AUTO', 'Z' or 'Y'; floor: 'AUTO',
    'ON' or 'OFF' (models.motion.floor.place_on_floor: onto the floor unless the file states
    its own; always measured and moved; kept as in the file); source_fps: the file's frame
    rate, overriding the one it states (0: the file's own); keep_source_rate: one key per
    source frame instead of keys at the scene's frame rate; set_frame_range: the scene's range
    becomes the keys'; frame_start: the first key's frame (None: the scene's start)."""

    filepath: str
    target: str = "NEW"
    up_axis: str = "AUTO"
    floor: str = "AUTO"
    source_fps: float = 0.0
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


def file_path(path_text, what):
    """The file a path names, resolved as Blender resolves relative paths; SmplIkError when
    none is given."""
    if not path_text:
        raise SmplIkError(f"no {what} file given")
    return Path(bpy.path.abspath(path_text))


def body_for_gender(context, gender, kind="smpl"):
    """(BodyModel, body_path for the armature) for a new body carrying a motion of `gender`
    and `kind` ('smpl', 'smplh', 'smplx'): the user's file of that gender, else the open body
    of that gender."""
    user = amass.choose_body_file(user_body_files(context), gender, kind)
    if user is not None:
        return load_body_model(user), str(user)
    return load_body_model(open_body_path(gender)), ""   # no file: the body's gender names its open body


def _smpl_frame_motion(motion, choice, pelvis_rest):
    """(poses (T, 24, 3), trans (T, 3)) of `motion` in SMPL's Y-up frame."""
    if choice.axis == "Z":
        return amass.smpl_frame_from_z_up(motion.poses, motion.trans, pelvis_rest)
    return motion.poses, motion.trans


def _placed_on_floor(arm, body, poses, trans, motion, options, floor_height, tilt):
    """(trans (T, 3) moved along SMPL's up as the floor option says, FloorPlacement or None,
    note) for the motion (poses (T, 24, 3), trans, SMPL frame, armature space) on `arm`,
    whose floor lies at `floor_height` (armature space, SMPL's Y) with the body tilted `tilt`
    radians from upright (over bridge.FLOOR_TILT: no level floor, the heights are kept)."""
    if tilt > bridge.FLOOR_TILT:
        return trans, None, (f"{arm.name} is tilted {math.degrees(tilt):.1f} degrees from upright, so no level "
                             "floor lies under it: heights kept as in the file")
    measure = floor.LowestPointOptions(up_axis="Y", rest_joints=bridge.from_blender(bridge.bone_heads(arm)))
    lowest = floor.lowest_point(body, np.array(arm.smpl_ik.applied_betas[:]), poses, trans, measure)
    placed = floor.place_on_floor(lowest, floor_height, options.floor, motion.floor_height)
    return trans + [0.0, placed.shift, 0.0], placed, placed.note


def read_motion(path_text):
    """The checked MotionFile at `path_text` (SmplIkError naming the file when it is missing,
    unreadable or wrong)."""
    path = file_path(path_text, "motion")
    if not path.is_file():
        raise SmplIkError(f"{path}: no such file")
    return amass.read_motion_npz(path)


def import_motion(context, options, progress=lambda fraction: None):
    """Import an AMASS-style `.npz` (options: an ImportOptions) as one new action named after
    the file; returns an Imported. SmplIkError (file missing, unreadable or wrong; no body
    selected for 'ACTIVE') before the scene changes."""
    return key_motion(context, read_motion(options.filepath), options, progress)


def key_motion(context, motion, options, progress=lambda fraction: None, new_body=None):
    """Key a MotionFile (read from a file, or made from one: its path names the action) on a
    body as `options` (an ImportOptions; its filepath is not read) say, as one new action;
    returns an Imported. new_body: (BodyModel, body_path) for a new body, when the caller
    chose it (None: the user's file of the motion's gender, else the open body). SmplIkError
    before the scene changes."""
    if options.floor not in floor.FLOOR_MODES:
        raise SmplIkError(f"floor option {options.floor!r} is not one of {', '.join(floor.FLOOR_MODES)}")
    if not (options.source_fps >= 0 and math.isfinite(options.source_fps)):
        raise SmplIkError(f"source rate {options.source_fps:g} is not a positive frame rate (0: the file's own)")
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
        body, body_path = new_body or body_for_gender(context, motion.gender or "neutral", motion.kind)
        floor_height, tilt = 0.0, 0.0   # the file's origin at the cursor: the floor at the cursor's height
    carried = carried_betas(motion.betas, motion.body_model, open_body_name_of(body_path, body), NUM_BETAS,
                            SHAPE_KEY_RANGE)
    betas = carried.betas
    notes += carried.notes
    if options.up_axis == "AUTO":
        up = amass.detect_up_axis(motion.poses, motion.up_axis)
    else:
        up = amass.UpAxisChoice(options.up_axis, "as asked")
    source_fps = motion.fps
    if options.source_fps:
        said = "states none" if source_fps is None else f"says {source_fps:g}"
        notes.append(f"source rate {options.source_fps:g} fps as given (the file {said})")
        source_fps = options.source_fps
    elif source_fps is None:
        source_fps = scene_fps(scene)
        notes.append(f"the file has no frame rate: taken as the scene's {source_fps:g} fps")
    key_fps = source_fps if options.keep_source_rate else scene_fps(scene)
    if abs(key_fps - scene_fps(scene)) > 1e-3 * key_fps:
        notes.append(f"one key per source frame: the keys play at the scene's {scene_fps(scene):g} fps, "
                     f"not the file's {source_fps:g}")
    timing = resample_timing(motion.num_frames, source_fps, key_fps)
    start = scene.frame_start if options.frame_start is None else int(options.frame_start)
    ours = ("fps_missing", "betas_missing") if options.target == "ACTIVE" else ("fps_missing",)
    notes += motion.notes_except(*ours)      # the frame rate is said above, in the scene's terms
    if motion.betas_missing and options.target == "ACTIVE":
        notes.append("no 'betas': the body keeps its shape")
    progress(0.1)

    created = []
    reshaped = None   # the active body's shape before the file's betas, restored on a failure
    try:
        if arm is None:
            object_mode(context)
            arm = create_body(context, body, BodySpec(body_path=body_path, name=f"SMPL-IK {Path(motion.path).stem}",
                                                   location=scene.cursor.location.copy(), betas=betas))
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
        poses, trans = _smpl_frame_motion(motion, up, bridge.rest_joints(arm)[0])
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
        remove_created(created)
        if reshaped is not None:
            arm.smpl_ik.betas = reshaped
        raise
    if options.set_frame_range:
        scene.frame_start, scene.frame_end = start, start + timing.num_frames - 1
    if options.target != "ACTIVE":
        select_only(context, arm)
    return Imported(body=arm, action=action, frame_start=start, frame_end=start + timing.num_frames - 1,
                    source_frames=motion.num_frames, source_fps=source_fps, key_fps=key_fps, up=up,
                    body_label=body.label, floor=placed, floor_note=floor_note, notes=tuple(notes))


@dataclass(frozen=True)
class JointImportOptions:
    """What a joint-file import does: `joints` (a models.ik.from_joints.JointOptions: layout,
    units, up axis, frame rate, smoothing) and `keys` (an ImportOptions: target, floor, frame
    range; its up axis is SMPL's Y, as the solved motion is)."""

    filepath: str
    joints: JointOptions
    keys: ImportOptions


@dataclass(frozen=True)
class JointsImported:
    """What a joint-file import did: the solved JointMotion and the Imported keys."""

    solved: object
    keyed: Imported

    def describe(self):
        return f"{self.keyed.describe()}; joints: {self.solved.describe()}"


def import_joints(context, options, progress=lambda fraction: None):
    """Solve a joint file (options: a JointImportOptions) on a new body (the user's neutral
    SMPL file, else the open body) or the active one, and key it as one new action named after
    the file; returns a JointsImported. SmplIkError (file missing, unreadable or wrong, no
    layout with its joint count, an implausible figure, no body selected for 'ACTIVE') before
    the scene changes."""
    path = file_path(options.filepath, "joint")
    joint_file = read_joint_file(path)
    if options.keys.target == "ACTIVE":
        arm = target_body(context)
        body, body_path = body_model_of(arm), arm.smpl_ik.body_path
    else:
        body, body_path = body_for_gender(context, "neutral")
    solved = joints_to_smpl(joint_file, body, options.joints, lambda f: progress(0.7 * f))
    motion = solved.motion_file(body, open_body_name_of(body_path, body))
    keys = dataclasses.replace(options.keys, filepath=str(path), up_axis="Y")
    keyed = key_motion(context, motion, keys, lambda f: progress(0.7 + 0.3 * f), new_body=(body, body_path))
    return JointsImported(solved=solved, keyed=keyed)

"""Real rigs through Blender's own exporters: the armature a user brings in from an FBX or glTF
file (bone rest orientations rewritten, other units, leaf bones added) fits, drives and takes a
transfer as the source rig does, and a transferred motion survives the export to a game engine."""
import tempfile
from pathlib import Path

import bpy
import numpy as np
import pytest
from mathutils import Vector

from models.body.model import load_body_model
from models.core.kinematics import forward_kinematics
from models.core.metrics import angle_deg
from models.core.rotations import axis_angle_to_matrix, kabsch, matrix_to_axis_angle
from models.core.skeleton import PARENTS
from models.motion.bvh import Motion, read_bvh
from models.motion.retarget import retarget

from conftest import ROOT
from scene import fit, update
from test_rig import drag_left_wrist, head, rest_heads

MOCAP = ROOT.parent / "shared" / "data" / "mocap"
RIGS = {"m21": MOCAP / "m21" / "m21_data_t.bvh",            # m21's own skeleton, T-pose
        "character_creator": MOCAP / "cmu_varied" / "002_05.bvh"}  # CC_Base_ bones with rest frames
HANDS = {"m21": ("LeftHand", "RightHand"), "character_creator": ("CC_Base_L_Hand", "CC_Base_R_Hand")}
needs_mocap = pytest.mark.skipif(not all(p.is_file() for p in RIGS.values()),
                                 reason=f"{MOCAP} lacks the m21 or cmu_varied clips (the shared mocap data is absent)")

ALONG_X = {"primary_bone_axis": "X", "secondary_bone_axis": "-Y"}   # every bone rest frame turned
# an FBX's animation as the tests take it: the active action's every frame keyed, played from frame 1
ANIMATED = {"bake_anim": True, "bake_anim_use_all_actions": False, "bake_anim_use_nla_strips": False,
            "bake_anim_simplify_factor": 0.0}
FORMATS = {   # format: (export options, import options)
    "fbx": ({}, {}),
    "fbx_bone_axes_guessed": ({}, {"automatic_bone_orientation": True}),
    "fbx_y_bones_along_x": (ALONG_X, {}),
    "fbx_centimetres": ({"global_scale": 0.01}, {}),   # the armature at object scale 0.01, as Mixamo's
    "gltf": ({}, {}),
}


def _enable(module):
    if module not in bpy.context.preferences.addons:
        bpy.ops.preferences.addon_enable(module=module)


def _select_only(rig):
    bpy.ops.object.select_all(action="DESELECT")
    rig.select_set(True)
    bpy.context.view_layer.objects.active = rig


def _armature():
    return next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")


def fbx_round_trip(rig, path, export_options, import_options):
    """Export `rig` alone to the FBX file `path`, empty the file, import it back: the armature."""
    _enable("io_scene_fbx")
    _select_only(rig)
    bpy.ops.export_scene.fbx(filepath=path, use_selection=True, object_types={"ARMATURE"}, **export_options)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.import_scene.fbx(filepath=path, **import_options)
    return _armature()


def export_and_reimport(rig, kind, folder):
    """Export `rig` alone in the format `kind` (FORMATS) with Blender's exporter, without its
    animation, empty the file and import it back: the armature."""
    if kind != "gltf":
        return fbx_round_trip(rig, str(Path(folder) / "rig.fbx"),
                              dict(bake_anim=False, add_leaf_bones=True, **FORMATS[kind][0]), FORMATS[kind][1])
    _enable("io_scene_gltf2")
    _select_only(rig)
    path = str(Path(folder) / "rig.glb")
    bpy.ops.export_scene.gltf(filepath=path, use_selection=True, export_animations=False)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.import_scene.gltf(filepath=path)
    return _armature()


def imported_rest_rig(name, frame=1):
    """The clip's armature with a frame as its rest pose (the first: a T-pose for m21, standing
    with the arms down for the Character Creator clip, whose zero pose has the legs up), without
    its motion."""
    bpy.ops.import_anim.bvh(filepath=str(RIGS[name]))
    rig = bpy.context.active_object
    bpy.context.scene.frame_set(frame)
    bpy.ops.object.mode_set(mode="POSE")
    assert bpy.ops.pose.armature_apply() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    rig.animation_data_clear()
    update()
    return rig


def fits_and_follows(rig, name):
    """Fit Rig on `rig`, then drag the proxy's left wrist: the rig stays put, the proxy stands on
    its joints and the rig's hands go where the proxy's go (tolerances in parts of its size)."""
    before = rest_heads(rig)
    size = max(np.ptp(np.array(list(before.values())), axis=0))
    proxy = fit(rig)
    assert proxy is not None, name
    mapped = {it.joint: it.bone for it in rig.smpl_ik_rig.mapping if it.bone}
    assert len(mapped) >= 19, mapped
    for bone, h in before.items():                  # fitting leaves the character where it was
        assert np.linalg.norm(head(rig, bone) - h) < 1e-4 * size, bone
    for joint, bone in mapped.items():              # the proxy stands on the rig's joints
        assert np.linalg.norm(head(proxy, joint) - before[bone]) < 1e-3 * size, (joint, bone)
    drag_left_wrist(proxy, tuple(v * size for v in (-0.08, -0.1, 0.12)))
    for side, hand in zip(("left", "right"), HANDS[name]):
        assert np.linalg.norm(head(rig, hand) - head(proxy, f"{side}_wrist")) < 1e-3 * size, hand
    assert np.linalg.norm(head(rig, HANDS[name][0]) - before[HANDS[name][0]]) > 0.05 * size


@needs_mocap
@pytest.mark.parametrize("kind", list(FORMATS))
@pytest.mark.parametrize("name", list(RIGS))
def test_an_exported_rig_fits_and_follows_as_its_source_does(name, kind):
    with tempfile.TemporaryDirectory() as folder:
        fits_and_follows(export_and_reimport(imported_rest_rig(name), kind, folder), name)


@needs_mocap
def test_a_rig_exported_in_the_middle_of_its_motion_fits_and_follows():
    """Blender's FBX round trip makes the pose a rig had when exported its rest pose: here the
    rest is a frame 5 s into the punching clip, as such an export of the clip would give."""
    with tempfile.TemporaryDirectory() as folder:
        rig = export_and_reimport(imported_rest_rig("character_creator", frame=300), "fbx", folder)
    fits_and_follows(rig, "character_creator")


@needs_mocap
def test_a_transferred_motion_plays_the_same_after_exporting_the_rig_to_fbx():
    """Pose a Character Creator rig whose bones point along X, at object scale 0.01, transfer the
    motion to its own bones and export it as a game engine would take it: the re-imported
    armature plays what the proxy drove."""
    with tempfile.TemporaryDirectory() as folder:
        rig = export_and_reimport(imported_rest_rig("character_creator"), "fbx_y_bones_along_x", folder)
        rig.scale = (0.01, 0.01, 0.01)
        update()
        size = max(np.ptp(np.array(list(rest_heads(rig).values())), axis=0))
        proxy = fit(rig)
        wrist = drag_left_wrist(proxy, (0.0, 0.0, 0.0))
        start = wrist.location.copy()
        for frame, lift in ((1, 0.0), (9, 0.15)):
            wrist.location = start + Vector((-0.05, -0.1, lift)) * size
            wrist.keyframe_insert("location", frame=frame)
        bpy.context.view_layer.objects.active = proxy
        assert bpy.ops.smpl_ik.bake(frame_start=1, frame_end=9) == {"FINISHED"}
        bones = [b.name for b in rig.data.bones if not b.name.endswith("_end")]
        driven = {}
        for frame in (1, 5, 9):
            bpy.context.scene.frame_set(frame)
            driven[frame] = {b: head(rig, b) for b in bones}
        assert np.linalg.norm(driven[9]["CC_Base_L_Hand"] - driven[1]["CC_Base_L_Hand"]) > 0.1 * size
        bpy.context.view_layer.objects.active = rig
        assert bpy.ops.smpl_ik.transfer_to_rig(frame_start=1, frame_end=9, remove_drive=True) == {"FINISHED"}
        played = fbx_round_trip(rig, str(Path(folder) / "posed.fbx"), dict(ANIMATED, add_leaf_bones=False, **ALONG_X),
                                dict(anim_offset=0.0, **ALONG_X))
    for frame, heads in driven.items():
        bpy.context.scene.frame_set(frame)
        for bone, h in heads.items():
            assert np.linalg.norm(head(played, bone) - h) < 1e-3 * size, (frame, bone)


def written_by_blender(name, frames, via_fbx):
    """The clip's first `frames` frames as Blender's BVH writer writes them (Z up, six channels
    on every joint), after an FBX round trip (leaf bones added, bones along X) if `via_fbx`."""
    bpy.ops.import_anim.bvh(filepath=str(RIGS[name]), use_fps_scale=False)
    rig = bpy.context.active_object
    with tempfile.TemporaryDirectory() as folder:
        if via_fbx:
            rig = fbx_round_trip(rig, str(Path(folder) / "clip.fbx"), dict(ANIMATED, add_leaf_bones=True, **ALONG_X),
                                 dict(anim_offset=0.0, **ALONG_X))
        bpy.context.view_layer.objects.active = rig
        path = str(Path(folder) / "clip.bvh")
        assert bpy.ops.export_anim.bvh(filepath=path, frame_start=1, frame_end=frames) == {"FINISHED"}
        return read_bvh(path)


def retarget_both(name, via_fbx):
    """(from the source file, from Blender's file): the first 40 frames retargeted to the open body."""
    source = read_bvh(RIGS[name])
    n = min(40, source.num_frames)
    ours = written_by_blender(name, n, via_fbx)
    assert ours.num_frames == n
    source = Motion(source.skeleton, source.values[:n], source.frame_time, source.path)
    return retarget(source, load_body_model()), retarget(ours, load_body_model())


def joints_of(r):
    return forward_kinematics(axis_angle_to_matrix(r.poses), load_body_model().rest_joints(r.betas), PARENTS,
                              r.trans).positions


@needs_mocap
@pytest.mark.parametrize("name", list(RIGS))
def test_a_clip_written_by_blender_retargets_to_the_motion_of_its_source(name):
    want, got = retarget_both(name, via_fbx=False)
    assert np.abs(got.betas - want.betas).max() < 0.01
    turn = np.linalg.norm(matrix_to_axis_angle(
        axis_angle_to_matrix(got.poses) @ np.swapaxes(axis_angle_to_matrix(want.poses), -1, -2)), axis=-1)
    assert np.degrees(turn).max() < 0.5, np.degrees(turn).max(axis=0)
    assert np.abs(got.trans - want.trans).max() < 1e-3


@needs_mocap
@pytest.mark.parametrize("name", list(RIGS))
def test_a_clip_through_fbx_retargets_to_the_same_body_and_joints(name):
    """After an FBX round trip the rest pose is the pose the clip had when it was exported, so the
    written file's zero pose is no rest pose and a motion frame becomes the reference: the same
    body, and the same joints up to the way the whole clip faces (a turn about the vertical)."""
    want, got = retarget_both(name, via_fbx=True)
    if name == "m21":   # m21's clip holds a T-pose at rest: the written file has lost it
        assert "frame" in " ".join(got.notes) and not any("frame" in n for n in want.notes)
    assert np.abs(got.betas - want.betas).max() < 0.01
    assert abs(got.mean_limb_error_deg - want.mean_limb_error_deg) < 0.05
    a, b = joints_of(want), joints_of(got)
    a, b = a - a[:, :1], b - b[:, :1]
    turn = kabsch(b.reshape(-1, 3), a.reshape(-1, 3))     # one rotation for the whole clip
    assert angle_deg(turn @ np.array([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 0.0])) < 2.0   # about the vertical
    off = np.linalg.norm(b @ turn.T - a, axis=-1)[:, :22] * 1000   # mm; the hand leaves have no direction
    assert off.mean() < 8.0 and off.max() < 20.0, (off.mean(), off.max(axis=0))

"""Pose from a photo in Blender: the pose follows the detector, bad photos change nothing."""
import importlib

import bpy
import numpy as np
import pytest

from models.core.skeleton import JOINT_INDEX

import blender_session
from conftest import ROOT

pytest.importorskip("mediapipe", reason="the photo packages are not installed "
                    "(pip install --no-deps -r requirements-photo.txt)")
IMAGES = ROOT.parent / "shared" / "data" / "images"
needs_images = pytest.mark.skipif(not IMAGES.is_dir(), reason=f"{IMAGES} not found (the shared photos are absent)")
LIMBS = [("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"), ("right_shoulder", "right_elbow"),
         ("right_elbow", "right_wrist"), ("left_hip", "left_knee"), ("left_knee", "left_ankle"),
         ("right_hip", "right_knee"), ("right_knee", "right_ankle")]


def addon(name):
    return importlib.import_module(f"{blender_session.MODULE}.addon.{name}")


def scene_state():
    return {o.name: tuple(o.matrix_world.translation) for o in bpy.data.objects}, len(bpy.data.images)


@needs_images
def test_photo_pose_points_limbs_the_way_the_detector_does():
    from models.photo.pose import detect_people, smpl_targets

    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg")) == {"FINISHED"}
    rgb, image = addon("photo").load_rgb(str(IMAGES / "bus.jpg"))
    bpy.data.images.remove(image)
    largest = detect_people(rgb)[0]
    seen, confident = smpl_targets(largest)
    _, posed = addon("effectors").posed_joints(arm)
    checked = 0
    for a, b in LIMBS:
        ia, ib = JOINT_INDEX[a], JOINT_INDEX[b]
        if not (confident[ia] and confident[ib]):
            continue
        want, got = seen[ib] - seen[ia], posed[ib] - posed[ia]
        angle = np.degrees(np.arccos(np.clip(want @ got / np.linalg.norm(want) / np.linalg.norm(got), -1, 1)))
        assert angle < 15, (a, b, angle)
        checked += 1
    assert checked >= 6
    # effectors on the joints the photo showed, pinned where the body now is; the photo behind
    effectors = [o for o in bpy.data.objects if o.type == "EMPTY" and o.smpl_ik_effector.body == arm]
    assert {o.smpl_ik_effector.joint for o in effectors} >= {"pelvis", "left_wrist", "right_ankle"}
    for o in effectors:
        bone = arm.pose.bones[o.smpl_ik_effector.joint]
        assert np.linalg.norm(np.array(arm.matrix_world @ bone.head) - np.array(o.matrix_world.translation)) < 1e-4
    ref = [o for o in bpy.data.objects if o.type == "EMPTY" and o.empty_display_type == "IMAGE"]
    assert len(ref) == 1 and ref[0].data.name.startswith("bus")


@needs_images
def test_choosing_the_second_person_gives_another_pose():
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), reference=False) == {"FINISHED"}
    first = addon("effectors").posed_joints(arm)[1]
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), person=3, reference=False) == {"FINISHED"}
    third = addon("effectors").posed_joints(arm)[1]
    assert np.abs(first - third).max() > 0.02
    with pytest.raises(RuntimeError, match="asked for person 9 .* found only 3"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), person=9)


@needs_images
def test_no_person_found_leaves_the_scene_unchanged():
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    before = scene_state()
    with pytest.raises(RuntimeError, match="zidane.jpg: no person found"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "zidane.jpg"))
    assert scene_state() == before


def test_unreadable_or_missing_image_leaves_the_scene_unchanged(tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a picture\n")
    with pytest.raises(RuntimeError, match="notes.jpg: not an image Blender can read"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(bad))   # no body active: none is left behind
    assert scene_state() == ({}, 0)
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    before = scene_state()
    with pytest.raises(RuntimeError, match="missing.png: no such file"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(tmp_path / "missing.png"))
    assert scene_state() == before

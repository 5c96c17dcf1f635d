"""Pose from a photo in Blender: read the image with Blender, detect and lift with the core
(models/photo.py), pose the body, pin effectors on the joints that were seen, and stand the
photo behind the body as a reference.

MediaPipe is imported on first use only; the per-platform builds of the extension bundle it.
"""
import importlib.util
import math
from pathlib import Path

import bpy
import numpy as np
from mathutils import Matrix

from ..models.core.errors import SmplIkError
from ..models.core.skeleton import JOINT_INDEX
from . import bridge
from .effectors import create_effector, effectors_of, pin, rest_joints

# Joints that get an effector when the photo showed them.
EFFECTOR_JOINTS = ("pelvis", "head", "left_wrist", "right_wrist", "left_ankle", "right_ankle",
                   "left_elbow", "right_elbow", "left_knee", "right_knee")
MISSING = ("Pose from a photo needs MediaPipe, which this build of the extension does not "
           "include: install the SMPL-IK build made for your platform (its file name ends in "
           "linux-x64, windows-x64 or macos-arm64)")


def detector_available():
    return importlib.util.find_spec("mediapipe") is not None


def load_rgb(filepath):
    """(H, W, 3) uint8 pixels and the Blender image of a file; the image is removed again if
    it cannot be read. Raises SmplIkError naming the file."""
    path = Path(bpy.path.abspath(filepath))
    if not path.is_file():
        raise SmplIkError(f"{path}: no such file")
    try:
        image = bpy.data.images.load(str(path), check_existing=False)
    except RuntimeError as exc:
        raise SmplIkError(f"{path}: not an image Blender can read ({exc})") from None
    try:
        width, height = image.size
        channels = image.channels
        if width < 2 or height < 2 or channels < 3:
            raise SmplIkError(f"{path}: not an image Blender can read ({width}x{height}, {channels} channels)")
        pixels = np.empty(width * height * channels, dtype=np.float32)
        image.pixels.foreach_get(pixels)
    except (SmplIkError, RuntimeError) as exc:
        bpy.data.images.remove(image)
        raise SmplIkError(str(exc) if isinstance(exc, SmplIkError) else f"{path}: unreadable ({exc})") from None
    if image.colorspace_settings.name not in ("sRGB", "Non-Color"):
        image.colorspace_settings.name = "sRGB"
    rgb = pixels.reshape(height, width, channels)[::-1, :, :3]   # Blender stores rows bottom-up
    return np.ascontiguousarray(np.clip(rgb * 255.0 + 0.5, 0, 255).astype(np.uint8)), image


def _reference_empty(context, arm, image, detection, rgb_shape):
    """An image Empty behind the body, scaled so the person is about the body's height."""
    height_px, width_px = rgb_shape[:2]
    x0, y0, x1, y1 = detection.bbox
    rest = rest_joints(arm)
    body_height = rest[:, 1].max() - rest[:, 1].min() + 0.25   # joints span less than the body
    metres_per_px = body_height / max(y1 - y0, 1.0)
    obj = bpy.data.objects.new(f"{arm.name} photo", None)
    obj.empty_display_type = "IMAGE"
    obj.data = image
    obj.empty_display_size = max(width_px, height_px) * metres_per_px
    obj.empty_image_depth = "BACK"
    obj.color[3] = 0.6
    obj.use_empty_image_alpha = True
    # put the person's box (cx, cz from the picture's centre, image right = body +X) on the body,
    # and stand the picture upright behind it (the body faces -Y)
    cx = ((x0 + x1) / 2 - width_px / 2) * metres_per_px
    cz = (height_px / 2 - (y0 + y1) / 2) * metres_per_px
    middle = (rest[:, 1].max() + rest[:, 1].min()) / 2
    obj.matrix_world = (arm.matrix_world @ Matrix.Translation((-cx, 0.6, middle - cz))
                        @ Matrix.Rotation(math.pi / 2, 4, "X"))
    context.collection.objects.link(obj)
    return obj


def pose_from_image(context, arm, filepath, person=0, min_visibility=0.5, reference=True, effectors=True):
    """Pose `arm` from the person in a photo; returns (PhotoPose, number of people found).

    Raises SmplIkError before changing anything when the photo cannot be read, nobody is
    found or too little of the person is visible."""
    from ..models.photo.pose import detect_people, pose_from_detection

    if not detector_available():
        raise SmplIkError(MISSING)
    rgb, image = load_rgb(filepath)
    try:
        people = detect_people(rgb, max_people=max(3, person + 1))
        name = Path(bpy.path.abspath(filepath)).name
        if not people:
            raise SmplIkError(f"{name}: no person found (the detector needs one person's body, "
                              "most of it in the frame)")
        if person >= len(people):
            raise SmplIkError(f"{name}: asked for person {person + 1} (largest first) but found "
                              f"only {len(people)}")
        solved = pose_from_detection(people[person], rest_joints(arm), min_visibility)
    except Exception:
        bpy.data.images.remove(image)
        raise
    bridge.write_pose(arm, solved.local_rot, solved.trans, bridge.rest_frames(arm))
    if effectors:
        have = {o.smpl_ik_effector.joint for o in effectors_of(arm, enabled_only=False)
                if o.smpl_ik_effector.kind == "POSITION"}
        for joint in EFFECTOR_JOINTS:
            if solved.confident[JOINT_INDEX[joint]] and joint not in have:
                create_effector(context, arm, joint, "POSITION")
    pin(arm, effectors_of(arm, enabled_only=False))
    if reference:
        _reference_empty(context, arm, image, people[person], rgb.shape)
    elif not image.users:
        bpy.data.images.remove(image)
    return solved, len(people)

"""Pose from a photo in Blender: read the image with Blender, detect and lift with the core
(models/photo/detect.py, fit.py), pose the body, pin effectors on the joints that were seen, and stand the
photo behind the body as a reference. On a body whose pose is keyed, the photo's pose is keyed
at the current frame too (the action would replace it at the next frame change otherwise).

MediaPipe is imported on first use only; the per-platform builds of the extension bundle it.
"""
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np
from mathutils import Matrix

from ...models.core.errors import SmplIkError
from ...models.core.skeleton import JOINT_INDEX
from ..com import bridge
from ..com.builds import PHOTO_PLATFORMS, zip_name
from ..motion.keys import keyframe_pose, pose_is_keyed
from ..pose.effectors import create_effector, effectors_of, pin

# Joints that get an effector when the photo showed them.
EFFECTOR_JOINTS = ("pelvis", "head", "left_wrist", "right_wrist", "left_ankle", "right_ankle",
                   "left_elbow", "right_elbow", "left_knee", "right_knee")
_ZIPS = [zip_name(p) for p in PHOTO_PLATFORMS]
MISSING = ("Pose from a photo needs MediaPipe, which this build of the extension does not "
           "include: install the SMPL-IK build made for your platform, "
           f"{', '.join(_ZIPS[:-1])} or {_ZIPS[-1]}")
PHOTO_BEHIND = 0.6   # metres from the body's origin to the reference photo, behind it


@dataclass(frozen=True)
class PhotoOptions:
    """What Pose from Photo is asked to do. person: 1 is the largest person in the photo;
    min_visibility: joints the detector is less sure of are left to SMPL-IK; show_photo:
    stand the photo behind the body; add_effectors: pin the joints the photo shows;
    key_animated: on a body whose pose is keyed, key the photo's pose at the current frame."""

    filepath: str
    person: int = 1
    min_visibility: float = 0.5
    show_photo: bool = True
    add_effectors: bool = True
    key_animated: bool = True


@dataclass(frozen=True)
class PhotoResult:
    """pose: the models.photo.fit.PhotoPose written to the body; people: how many were found;
    animated: the body's pose is keyed (its action sets the pose at every frame change);
    keyed_frame: the frame the photo's pose was keyed at, or None when it was not keyed."""

    pose: object
    people: int
    animated: bool = False
    keyed_frame: int | None = None


def detector_available():
    return importlib.util.find_spec("mediapipe") is not None


def load_rgb(filepath):
    """(H, W, 3) uint8 pixels and the Blender image of a file; the image is removed again if
    it cannot be read. Raises SmplIkError naming the file."""
    if not filepath.strip():
        raise SmplIkError("no photo was given: choose an image file (the file path is empty)")
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
    low, high = bridge.up_extent(bridge.rest_joints(arm))
    body_height = high - low + 0.25   # joints span less than the body
    metres_per_px = body_height / max(y1 - y0, 1.0)
    obj = bpy.data.objects.new(f"{arm.name} photo", None)
    obj.empty_display_type = "IMAGE"
    obj.data = image
    obj.empty_display_size = max(width_px, height_px) * metres_per_px
    obj.empty_image_depth = "BACK"
    obj.color[3] = 0.6
    obj.use_empty_image_alpha = True
    # In SMPL's frame: the picture in the XY plane (image right = the body's left, +X; image
    # up = +Y) behind the body (-Z), the person's box centre (cx, cy from the picture's
    # centre) on the middle of the body.
    cx = ((x0 + x1) / 2 - width_px / 2) * metres_per_px
    cy = (height_px / 2 - (y0 + y1) / 2) * metres_per_px
    origin = (-cx, (low + high) / 2 - cy, -PHOTO_BEHIND)
    obj.matrix_world = arm.matrix_world @ Matrix(bridge.object_matrix(np.eye(3), origin).tolist())
    context.collection.objects.link(obj)
    return obj


def pose_from_image(context, arm, options):
    """Pose `arm` from the person in a photo as PhotoOptions `options` say; returns a
    PhotoResult.

    Raises SmplIkError before changing anything when the photo cannot be read, nobody is
    found or too little of the person is visible."""
    from ...models.photo.detect import detect_people
    from ...models.photo.fit import pose_from_detection

    if not detector_available():
        raise SmplIkError(MISSING)
    if options.person < 1:
        raise SmplIkError(f"person {options.person}: people are counted from 1 (the largest)")
    rgb, image = load_rgb(options.filepath)
    index = options.person - 1
    try:
        people = detect_people(rgb, max_people=max(3, options.person + 1))
        name = Path(bpy.path.abspath(options.filepath)).name
        if not people:
            raise SmplIkError(f"{name}: no person found (the detector needs one person's body, "
                              "most of it in the frame)")
        if index >= len(people):
            found = "only 1 person" if len(people) == 1 else \
                f"only {len(people)} people; choose a person from 1 to {len(people)}"
            raise SmplIkError(f"{name}: asked for person {options.person} (largest first) but found {found}")
        solved = pose_from_detection(people[index], bridge.rest_joints(arm), options.min_visibility)
    except Exception:
        bpy.data.images.remove(image)
        raise
    bridge.write_pose(arm, solved.local_rot, solved.trans, bridge.bone_axes(arm))
    if options.add_effectors:
        have = {o.smpl_ik_effector.joint for o in effectors_of(arm, enabled_only=False)
                if o.smpl_ik_effector.kind == "POSITION"}
        for joint in EFFECTOR_JOINTS:
            if solved.confident[JOINT_INDEX[joint]] and joint not in have:
                create_effector(context, arm, joint, "POSITION")
    pin(arm, effectors_of(arm, enabled_only=False))
    animated = pose_is_keyed(arm)
    keyed_frame = None
    if animated and options.key_animated:
        keyed_frame = context.scene.frame_current
        keyframe_pose(arm, keyed_frame)
    if options.show_photo:
        _reference_empty(context, arm, image, people[index], rgb.shape)
    elif not image.users:
        bpy.data.images.remove(image)
    return PhotoResult(pose=solved, people=len(people), animated=animated, keyed_frame=keyed_frame)

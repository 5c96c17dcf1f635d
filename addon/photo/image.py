"""Pose from a photo in Blender: read the image with Blender, detect the people, fit each one's
body to the photo through the camera it was taken with (models/photo/camera.py, fit.py), place
them together (fit.photo_scene), and add that camera with the photo as its background, so that
looking through it the bodies overlay the people. Effectors are pinned on the joints that were
seen; on a body whose pose is keyed, the photo's pose is keyed at the current frame too (the
action would replace it at the next frame change otherwise).

Where things go: the photo's scene stands where the first body stands (the active body's floor
point, or the 3D cursor for a new body) and turns with that body's object; the other people
stand at the places and depths the fit found for them, the camera where it saw them from.

Everything that can fail (the file, its size, the detector, each fit) is checked before
anything is added; what a later failure made is removed again, so the scene is left as it was.
The detector's packages are imported on first use only; the per-platform builds of the
extension bundle them with its model files.
"""
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np
from mathutils import Matrix

from ...models.body.model import NUM_BETAS, load_body_model, open_body_path
from ...models.core.errors import SmplIkError
from ...models.core.skeleton import JOINT_INDEX
from ...models.photo.camera import check_image_size
from ...models.photo.image_size import image_size_from_header
from ..body.build import BodySpec, body_model_of, create_body
from ..com import bridge
from ..com.blender import object_mode, remove_created, select_only
from ..com.builds import PHOTO_PLATFORMS, blender_python, zip_name
from ..motion.keys import keyframe_pose, pose_is_keyed
from ..pose.effectors import create_effector, effectors_of, pin

# Joints that get an effector when the photo showed them.
EFFECTOR_JOINTS = ("pelvis", "head", "left_wrist", "right_wrist", "left_ankle", "right_ankle",
                   "left_elbow", "right_elbow", "left_knee", "right_knee")
_PYTHON = blender_python()
_ZIPS = [zip_name(p, _PYTHON) for p in PHOTO_PLATFORMS] if _PYTHON else []
MISSING = ("Pose from a photo needs the photo packages, which this build of the extension does "
           "not include: install the SMPL-IK build made for your platform and "
           + (f"{_PYTHON.says}, {', '.join(_ZIPS[:-1])} or {_ZIPS[-1]}" if _ZIPS else "Blender"))
MAX_PEOPLE = 10        # All People: the most the detector looks for (one pass each)
PHOTO_ALPHA = 0.85     # the camera's background photo: nearly opaque, the bodies drawn over it
SENSOR_MM = 36.0       # the camera's sensor width (sensor fit Auto: across the longer side)


@dataclass(frozen=True)
class PhotoOptions:
    """What Pose from Photo is asked to do. person: 1 is the largest person in the photo;
    all_people: pose every person found instead (the active body takes the largest, a new open
    body of its gender each other one; `person` is then not used); min_visibility: joints the
    detector is less sure of are left to SMPL-IK; add_camera: add the camera the photo was
    taken with, the photo as its background, as the scene's camera with the render size set to
    the photo's; add_effectors: pin the joints the photo shows; key_animated: on a body whose
    pose is keyed, key the photo's pose at the current frame."""

    filepath: str
    person: int = 1
    all_people: bool = False
    min_visibility: float = 0.5
    add_camera: bool = True
    add_effectors: bool = True
    key_animated: bool = True


@dataclass(frozen=True, eq=False)
class PhotoResult:
    """bodies: the armatures posed, the active (or new) body first; persons: the person number
    each one shows (1 the largest); fits: each one's models.photo.fit.ImageFit (in the camera's
    frame); people: how many people were found; camera: the camera object added (None without
    add_camera); previous_camera: the scene camera it replaced, or None; size: the photo's
    (width, height) in pixels; notes: what a person should know (a corrupt EXIF, a person left
    out); animated: the first body's pose is keyed; keyed_frame: the frame its photo pose was
    keyed at, or None when it was not keyed."""

    bodies: tuple
    persons: tuple
    fits: tuple
    people: int
    camera: object = None
    previous_camera: object = None
    size: tuple = (0, 0)
    notes: tuple = ()
    animated: bool = False
    keyed_frame: int | None = None


def detector_problem():
    """Why Pose from Photo and Video cannot run in this installation (MISSING when the photo
    packages are not there, else a model file missing), or None."""
    from ...models.photo.runtime import MissingPackage, unavailable

    problem = unavailable()
    if problem is None:
        return None
    return MISSING if isinstance(problem, MissingPackage) else str(problem)


def photo_path(filepath):
    """The photo's Path (Blender's relative paths resolved); SmplIkError when none is given or
    there is no such file."""
    if not filepath.strip():
        raise SmplIkError("no photo was given: choose an image file (the file path is empty)")
    path = Path(bpy.path.abspath(filepath))
    if not path.is_file():
        raise SmplIkError(f"{path}: no such file")
    return path


def load_rgb(filepath):
    """(H, W, 3) uint8 pixels and the Blender image of a file; the image is removed again if
    it cannot be read. The size is checked (models.photo.camera.check_image_size) from the
    file's header before Blender decodes anything (image.size decodes the whole image) and
    from Blender's image before its pixels are read. Raises SmplIkError naming the file."""
    path = photo_path(filepath)
    try:
        stored = image_size_from_header(path)
    except OSError as exc:
        raise SmplIkError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if stored is not None:
        check_image_size(*stored, what=path.name)
    try:
        image = bpy.data.images.load(str(path), check_existing=False)
    except RuntimeError as exc:
        raise SmplIkError(f"{path}: not an image Blender can read ({exc})") from None
    try:
        width, height = image.size
        channels = image.channels
        if width == 0 or height == 0 or channels < 3:
            raise SmplIkError(f"{path}: not an image Blender can read ({width}x{height}, {channels} channels)")
        check_image_size(width, height, what=path.name)
        pixels = np.empty(width * height * channels, dtype=np.float32)
        image.pixels.foreach_get(pixels)
    except (SmplIkError, RuntimeError) as exc:
        bpy.data.images.remove(image)
        raise SmplIkError(str(exc) if isinstance(exc, SmplIkError) else f"{path}: unreadable ({exc})") from None
    if image.colorspace_settings.name not in ("sRGB", "Non-Color"):
        image.colorspace_settings.name = "sRGB"
    rgb = pixels.reshape(height, width, channels)[::-1, :, :3]   # Blender stores rows bottom-up
    return np.ascontiguousarray(np.clip(rgb * 255.0 + 0.5, 0, 255).astype(np.uint8)), image


@dataclass(frozen=True, eq=False)
class _Posed:
    """One person to pose: `person` (1 the largest), the body's armature (None: a new open body
    of `body`), its BodyModel, betas (10,), rest joints (24, 3) and the ImageFit."""

    person: int
    arm: object
    body: object
    betas: np.ndarray
    rest: np.ndarray
    fit: object


def _fit_people(people, arm, options, camera, name):
    """The _Posed people, in order: the person asked for, or with all_people everyone who can
    be fitted (the others left out with a note). The first fitted one gets `arm` (a new open
    neutral body when None), the others new open bodies of its gender. Returns (posed, notes)."""
    from ...models.photo.fit import FitOptions, fit_to_image

    zeros = np.zeros(NUM_BETAS)

    def new_body():
        body = load_body_model(open_body_path((arm.smpl_ik.gender if arm is not None else "") or "neutral"))
        return None, body, zeros, body.rest_joints(zeros)

    first = new_body() if arm is None else (arm, body_model_of(arm), np.array(arm.smpl_ik.applied_betas[:]),
                                              bridge.rest_joints(arm))
    chosen = range(len(people)) if options.all_people else [options.person - 1]
    posed, notes = [], []
    for index in chosen:
        target, body, betas, rest = new_body() if posed else first
        try:
            fit = fit_to_image(people[index], rest, camera, body=body, betas=betas,
                               options=FitOptions(min_visibility=options.min_visibility))
        except SmplIkError as exc:
            if not options.all_people:
                raise SmplIkError(f"{name}: person {index + 1}: {exc}") from None
            notes.append(f"{name}: person {index + 1} was left out: {exc}")
            continue
        posed.append(_Posed(index + 1, target, body, betas, rest, fit))
    if not posed:
        raise SmplIkError(f"{name}: no person could be fitted ({'; '.join(notes)})")
    return posed, notes


def _new_body(context, person, name, world):
    """A new body for `person` (a _Posed without an armature) whose armature's world matrix is
    `world` (4, 4); the mesh follows its armature."""
    arm = create_body(context, person.body, BodySpec(name=name, betas=person.betas))
    arm.matrix_world = Matrix(world.tolist())
    return arm


def add_camera(context, name, camera, world, image=None, clip=None):
    """A camera object `name` at `world` (4, 4, Blender; its local -Z the view, +Y up, as the
    photo's camera frame), its lens the photo's (sensor fit Auto, SENSOR_MM wide, no shift),
    `image` (a photo) or `clip` (a MovieClip: a video) as its background."""
    data = bpy.data.cameras.new(name)
    data.sensor_fit = "AUTO"
    data.sensor_width = SENSOR_MM
    data.lens_unit = "MILLIMETERS"
    data.lens = camera.lens_mm(SENSOR_MM)
    data.shift_x = data.shift_y = 0.0
    data.show_background_images = True
    background = data.background_images.new()
    if clip is not None:
        background.source = "MOVIE_CLIP"
        background.clip = clip
        background.use_camera_clip = False
    else:
        background.image = image
    background.alpha = PHOTO_ALPHA
    background.display_depth = "BACK"
    background.frame_method = "FIT"   # the render size is the photo's, so the photo fills the frame
    obj = bpy.data.objects.new(name, data)
    obj.matrix_world = Matrix(world.tolist())
    context.collection.objects.link(obj)
    return obj


def without_scale(matrix):
    m = np.array(matrix, dtype=np.float64)
    m[:3, :3] /= np.linalg.norm(m[:3, :3], axis=0)
    return m


def _translation(offset):
    m = np.eye(4)
    m[:3, 3] = offset
    return m


def _saved_pose(arm):
    """What posing changes on an existing body: its pose channels and its effectors' matrices."""
    if arm is None:
        return None
    return bridge.read_channels(arm), [(o, o.matrix_world.copy()) for o in effectors_of(arm, enabled_only=False)]


def _restore_pose(arm, saved):
    if arm is None or saved is None:
        return
    bridge.write_channels(arm, *saved[0])
    for obj, matrix in saved[1]:
        if obj.name in bpy.data.objects:
            obj.matrix_world = matrix


def pose_from_image(context, arm, options):
    """Pose `arm` (None: a new open body at the 3D cursor), and with options.all_people a new
    body for every other person, from a photo as PhotoOptions `options` say; returns a
    PhotoResult.

    Raises SmplIkError, with the scene as it was, when the photo cannot be read or is too small
    or too large, nobody is found, the person asked for is not there or cannot be fitted."""
    from ...models.photo.camera import camera_for_image
    from ...models.photo.detect import detect_people
    from ...models.photo.scene import photo_scene

    if (problem := detector_problem()) is not None:
        raise SmplIkError(problem)
    if options.person < 1:
        raise SmplIkError(f"person {options.person}: people are counted from 1 (the largest)")
    path = photo_path(options.filepath)
    name = path.name
    rgb, image = load_rgb(options.filepath)
    height, width = rgb.shape[:2]
    saved = _saved_pose(arm)
    created = [image]   # in the order made; a failure removes them last first
    try:
        camera = camera_for_image(str(path), width, height, what=name)
        people = detect_people(rgb, max_people=MAX_PEOPLE if options.all_people else max(3, options.person + 1))
        if not people:
            raise SmplIkError(f"{name}: no person found (the detector needs one person's body, "
                              "most of it in the frame)")
        if not options.all_people and options.person > len(people):
            found = "only 1 person" if len(people) == 1 else \
                f"only {len(people)} people; choose a person from 1 to {len(people)}"
            raise SmplIkError(f"{name}: asked for person {options.person} (largest first) but found {found}")
        posed, notes = _fit_people(people, arm, options, camera, name)
        scene = photo_scene([p.fit for p in posed], [p.rest for p in posed])

        # Blender from the scene's frame: the first body's armature space (SMPL's axes) is the
        # scene's frame; another body's armature is the first's moved to where it stands
        first = posed[0]
        if first.arm is None:
            object_mode(context)
            cursor = np.array(context.scene.cursor.location, dtype=np.float64)
            floor = bridge.to_blender(first.body.rest_floor_point(first.betas))
            world = _translation(cursor - floor)
        else:
            world = bridge.matrix_array(first.arm.matrix_world)
        bodies = []
        for k, (person, (local, trans)) in enumerate(zip(posed, scene.poses)):
            target = person.arm
            offset = np.zeros(3)
            if target is None:
                object_mode(context)
                if k:  # its armature's origin under its pelvis, its floor point on the first one's floor
                    pelvis = person.rest[0] + trans
                    floor = first.body.rest_floor_point(first.betas) - person.body.rest_floor_point(person.betas)
                    offset = np.array([pelvis[0], floor[1], pelvis[2]])
                target = _new_body(context, person, f"{Path(name).stem} person {person.person}",
                                   world @ _translation(bridge.to_blender(offset)))
                created += [target, target.smpl_ik.mesh]
            bridge.write_pose(target, local, trans - offset, bridge.bone_axes(target))
            bodies.append(target)
        if options.add_effectors:
            for person, target in zip(posed, bodies):
                have = {o.smpl_ik_effector.joint for o in effectors_of(target, enabled_only=False)
                        if o.smpl_ik_effector.kind == "POSITION"}
                for joint in EFFECTOR_JOINTS:
                    if person.fit.confident[JOINT_INDEX[joint]] and joint not in have:
                        created.append(create_effector(context, target, joint, "POSITION"))
        for target in bodies:
            pin(target, effectors_of(target, enabled_only=False))
        camera_obj = previous = None
        if options.add_camera:
            placed = world @ bridge.object_matrix(scene.camera_rotation, scene.camera_position)
            camera_obj = add_camera(context, name, camera, without_scale(placed), image)
            created.append(camera_obj)
    except BaseException:
        _restore_pose(arm, saved)
        remove_created(reversed(created))
        raise
    if camera_obj is not None:
        previous = context.scene.camera
        context.scene.camera = camera_obj
        context.scene.render.resolution_x, context.scene.render.resolution_y = width, height
    elif not image.users:
        bpy.data.images.remove(image)
    if first.arm is None:
        select_only(context, bodies[0])
    animated = first.arm is not None and pose_is_keyed(first.arm)
    keyed_frame = None
    if animated and options.key_animated:
        keyed_frame = context.scene.frame_current
        keyframe_pose(first.arm, keyed_frame)
    return PhotoResult(bodies=tuple(bodies), persons=tuple(p.person for p in posed),
                       fits=tuple(p.fit for p in posed), people=len(people), camera=camera_obj,
                       previous_camera=previous, size=(width, height),
                       notes=tuple(camera.notes) + tuple(notes), animated=animated, keyed_frame=keyed_frame)

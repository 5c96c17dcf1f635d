"""A body's motion from a video of a person: the landmarker (models/photo/tracking.py) follows the
person from frame to frame, each frame's filtered keypoints are fitted through the camera,
warm-started from the frame before; the fitted poses are smoothed, and the feet found where they
rest on the floor and held there (models/photo/contacts.py). The Blender operator
(addon/photo/video.py) and models/photo/video_job.py call `pose_from_video` or `video_steps`.

Frames: everything is in the camera's frame (models/photo/camera.py: the camera at the origin
looking down -Z, +Y up in the picture, +X right); `video_scene` levels it for a scene (the
floor the feet stand on horizontal, Y up).
"""
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..body.model import load_body_model
from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.rotations import shortest_arc
from ..core.skeleton import PARENTS
from ..motion.temporal import local_linear, smooth_poses
from .camera import camera_from_focal, camera_from_fov, check_image_size, default_camera
from .contacts import FOOT_INDICES_BY_SIDE, clip_up, floor_of, foot_contacts, lock_feet
from .fit import FitOptions, fit_to_image
from .shape import clip_shape
from .tracking import PersonTracker
from .video_reader import VideoReader

WARM_ITERATIONS = 3        # descent steps of a frame's fit warm-started from the frame before
SMOOTH_SIGMA_S = 0.05      # seconds: the Gaussian over the fitted rotations and root (1.5 frames at 30 fps)
# Seconds: the Gaussian weights of the local line the root's distance from the camera is smoothed by
# (smooth_depth; docs/training_log.md, "Video: depth smoothing")
DEPTH_SIGMA_S = 0.2


class VideoCancelled(SmplIkError):
    """pose_from_video's progress callback returned False: nothing was made."""


@dataclass(frozen=True)
class VideoOptions:
    """What pose_from_video does. temporal False: the per-frame baseline, each frame detected
    on its own (static image mode) and fitted from scratch, no filter, no foot locking; smooth:
    the One Euro filter on the keypoints, the Gaussian on the fitted poses and the local line
    on the root's distance from the camera (smooth_depth) (with temporal);
    lock_feet: hold feet in contact where they rest (with temporal); focal_px: the camera's
    focal length in pixels, or fov_deg its field of view across the diagonal in degrees (both
    None: the default field of view, camera.DEFAULT_DIAGONAL_FOV_DEG: a video has no EXIF);
    min_visibility: joints the detector is less sure of are left to the prior; fit_shape: fit
    the body's proportions to the person over the clip (models.photo.shape.clip_shape, at the
    height of the body given) and refit every frame with them, a second pass over the fitted
    frames (with temporal; the VideoMotion's betas are then the fitted ones); height_m: the
    person's height in metres where known (between MIN_HEIGHT_M and MAX_HEIGHT_M): the shape
    is fitted as with fit_shape and keeps that height instead."""

    temporal: bool = True
    smooth: bool = True
    lock_feet: bool = True
    focal_px: float | None = None
    fov_deg: float | None = None
    min_visibility: float = 0.5
    fit_shape: bool = False
    height_m: float | None = None


MIN_HEIGHT_M, MAX_HEIGHT_M = 0.5, 2.6   # a person's height, metres, as VideoOptions.height_m may give it


@dataclass(frozen=True)
class VideoClip:
    """Which frames and person of a video to fit: source frames frame_start, frame_start +
    step, ... up to frame_end (not included; None: the video's end), counted from 0; person
    counted from 0, largest first on the first frame with people (then followed)."""

    frame_start: int = 0
    frame_end: int | None = None
    step: int = 1
    person: int = 0


@dataclass
class ClipFits:
    """The per-frame fits of a clip as they are made: frames (source frame numbers), local_rot
    and trans (each frame's fitted (24, 3, 3) and (3,), None where not found), found (bool
    each), fitted ((index, Detection, ImageFit) of each frame fitted, kept for the shape's
    second pass)."""

    frames: list = field(default_factory=list)
    local_rot: list = field(default_factory=list)
    trans: list = field(default_factory=list)
    found: list = field(default_factory=list)
    fitted: list = field(default_factory=list)


@dataclass(frozen=True)
class VideoMotion:
    """A body's motion fitted to a video, in the camera's frame (module docstring).

    local_rot (T, 24, 3, 3); trans (T, 3) metres, SMPL's root translation; joints (T, 24, 3)
    the posed joints; betas (10,) the body's shape; fps the output's (the video's / step);
    frames (T,) source frame indices; contact (T, 2) bool, left and right foot in contact;
    camera the Camera; notes what a person should know (frames nobody was found in, a frame
    rate assumed). found (T,) bool: the person was detected and fitted on that frame (the others
    carry the nearest fitted pose); up (3,) unit, the floor's up; floor the floor's height
    along `up` (metres); video_fps the source's rate; seconds the wall time taken."""

    local_rot: np.ndarray
    trans: np.ndarray
    joints: np.ndarray
    betas: np.ndarray
    fps: float
    frames: np.ndarray
    contact: np.ndarray
    camera: object
    notes: tuple
    found: np.ndarray = None
    up: np.ndarray = None
    floor: float = 0.0
    video_fps: float = 0.0
    seconds: float = 0.0


@dataclass(frozen=True)
class VideoScene:
    """A VideoMotion levelled for a scene (SMPL's axes, Y up): local_rot (T, 24, 3, 3) with the
    root turned, trans (T, 3); the floor under the feet at the body's rest floor height (its
    lowest ankle or foot joint at rest), the first frame's pelvis above the origin; the camera
    at camera_position (3,) turned by camera_rotation (3, 3) (scene from camera frame)."""

    local_rot: np.ndarray
    trans: np.ndarray
    camera_rotation: np.ndarray
    camera_position: np.ndarray


def frame_ranges(frames, step=1):
    """'3-5, 9' for source frames [3, 4, 5, 9] (sorted); frames `step` apart make one run."""
    runs = []
    for f in frames:
        if runs and f == runs[-1][1] + step:
            runs[-1][1] = f
        else:
            runs.append([f, f])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _camera(width, height, options):
    """The video's Camera: options.focal_px, else options.fov_deg, else the default field of
    view (a video has no EXIF)."""
    if options.focal_px is not None:
        return camera_from_focal(width, height, options.focal_px)
    if options.fov_deg is not None:
        return camera_from_fov(width, height, options.fov_deg)
    return default_camera(width, height)


def _check_request(clip, options):
    """SmplIkError for a VideoClip or VideoOptions no video can meet."""
    if int(clip.step) < 1:
        raise SmplIkError(f"step {clip.step}: it must be 1 or more (every step-th frame is used)")
    if int(clip.frame_start) < 0:
        raise SmplIkError(f"frame_start {clip.frame_start}: frames are counted from 0")
    if clip.frame_end is not None and int(clip.frame_end) <= int(clip.frame_start):
        raise SmplIkError(f"the frame range {clip.frame_start}-{clip.frame_end} is empty (frame_end is not included)")
    if int(clip.person) < 0:
        raise SmplIkError(f"person {clip.person}: people are counted from 0 (the largest)")
    if options.height_m is not None and not MIN_HEIGHT_M <= options.height_m <= MAX_HEIGHT_M:
        raise SmplIkError(f"height {options.height_m:g} m: a person's height is between {MIN_HEIGHT_M:g} and "
                          f"{MAX_HEIGHT_M:g} metres")


def video_steps(path, clip=VideoClip(), body=None, betas=None, options=VideoOptions()):
    """Generator: pose_from_video one frame at a time. Yields (done, total) after each frame
    read (total is the file's frame count over the range, an estimate: the last yield has
    done == total), and returns the VideoMotion (StopIteration's value). Closing it early
    (generator.close()) stops at once and releases the video and the detector. Arguments and
    errors as pose_from_video's."""
    started = time.perf_counter()
    _check_request(clip, options)
    if body is None:
        body = load_body_model()
    betas = np.zeros(10) if betas is None else np.asarray(betas, dtype=np.float64).reshape(-1)
    rest = body.rest_joints(betas[:body.shapedirs.shape[-1]])
    reader = VideoReader(path)
    name = reader.path.name
    tracker = None
    try:
        check_image_size(reader.width or 16, reader.height or 16, what=name)
        start, step, frame_end = int(clip.frame_start), int(clip.step), clip.frame_end
        end = reader.count if frame_end is None or (reader.count and frame_end > reader.count) else int(frame_end)
        total = max(len(range(start, end, step)), 1) if end else 1
        if start and not reader.seek(start):
            raise SmplIkError(f"{name}: frame_start {start} is past the video's last frame")
        tracker = PersonTracker(reader.width, reader.height, clip.person, options.temporal, options.smooth)
        camera = _camera(reader.width, reader.height, options)
        fits = ClipFits()
        shaping = options.temporal and (options.fit_shape or options.height_m is not None)
        previous = None
        frame = start
        bgr = reader.read()
        while bgr is not None and (frame_end is None or frame < frame_end):
            if not fits.frames and (bgr.shape[1], bgr.shape[0]) != (reader.width, reader.height):
                reader.width, reader.height = bgr.shape[1], bgr.shape[0]   # the header was wrong
                camera = _camera(reader.width, reader.height, options)
            detection = tracker(bgr, name, frame, frame / reader.fps)
            fitted = None
            if detection is not None:
                warm = (previous.local_rot, previous.trans) if options.temporal and previous is not None else None
                try:
                    fitted = fit_to_image(detection, rest, camera, body=body, betas=betas, options=FitOptions(
                        min_visibility=options.min_visibility, start=warm,
                        **({"iterations": WARM_ITERATIONS} if warm else {})))
                except SmplIkError:
                    fitted = None
            fits.frames.append(frame)
            fits.found.append(fitted is not None)
            fits.local_rot.append(None if fitted is None else fitted.local_rot)
            fits.trans.append(None if fitted is None else fitted.trans)
            if fitted is not None:
                previous = fitted
                if shaping:
                    fits.fitted.append((len(fits.frames) - 1, detection, fitted))
            yield len(fits.frames), (2 if shaping else 1) * max(total, len(fits.frames))
            frame += step
            bgr = None if frame_end is not None and frame >= frame_end else reader.read(step - 1)
        if not fits.frames:
            raise SmplIkError(f"{name}: the video has no frames" if start == 0 else
                              f"{name}: no frames from frame {start} on (the video has {reader.count})")
        if not any(fits.found):
            raise SmplIkError(f"{name}: nobody found in any of its {len(fits.frames)} frames (the detector needs "
                              "one person's body, most of it in the frame)")
        fps = reader.fps / step
        notes = [reader.fps_note] if reader.fps_note else []
        if shaping:
            betas, rest = yield from _refit_with_shape(fits, camera, body, betas, options, notes)
        motion = _finish(fits, rest, fps, options, name, notes)
        return VideoMotion(local_rot=motion[0], trans=motion[1], joints=motion[2], betas=betas.copy(), fps=fps,
                           frames=np.array(fits.frames), contact=motion[3], camera=camera, notes=tuple(notes),
                           found=np.array(fits.found), up=motion[4], floor=motion[5], video_fps=reader.fps,
                           seconds=time.perf_counter() - started)
    finally:
        if tracker is not None:
            tracker.close()
        reader.close()


def _refit_with_shape(fits, camera, body, betas, options, notes):
    """VideoOptions.fit_shape's second pass over ClipFits `fits` (a generator yielding progress
    as video_steps does, after its frames): the person's shape over the clip (clip_shape), then
    each fitted frame refitted with it from its first fit (WARM_ITERATIONS steps), in place in
    fits.local_rot and fits.trans. Returns (betas, rest joints); a frame that fails to refit
    keeps its first fit."""
    count = len(fits.frames)
    shape, note = clip_shape([f for _, _, f in fits.fitted], [d for _, d, _ in fits.fitted], camera, body, betas,
                             options.height_m)
    if note:
        notes.append(note)
    rest = body.rest_joints(shape)
    for done, (index, detection, first) in enumerate(fits.fitted, start=1):
        if not note:
            try:
                again = fit_to_image(detection, rest, camera, body=body, betas=shape, options=FitOptions(
                    min_visibility=options.min_visibility, start=(first.local_rot, first.trans),
                    iterations=WARM_ITERATIONS))
                fits.local_rot[index], fits.trans[index] = again.local_rot, again.trans
            except SmplIkError:
                pass
        yield count + round(done * count / len(fits.fitted)), 2 * count
    return shape, rest


def pose_from_video(path, clip=VideoClip(), body=None, betas=None, options=VideoOptions(), progress=None):
    """A body's motion from a video file of a person; returns a VideoMotion.

    clip: a VideoClip, the frames and the person. body (a BodyModel, default the open body) and
    betas (10,) the body fitted. options: VideoOptions. progress: optional callable(done,
    total) called after each frame; returning False cancels: VideoCancelled is raised and
    nothing is returned (or left behind: the video and the detector are released).

    Each frame: the person's keypoints (models.photo.tracking: the landmarker tracking, One Euro
    filtered), the body fitted through the camera (models.photo.fit.fit_to_image, warm-started
    from the last frame's fit); then over the clip the fitted poses smoothed (a Gaussian of
    SMOOTH_SIGMA_S), the feet in contact found (low and slow) and held where they rest
    (models.photo.contacts). Frames the person is not found on carry the nearest fitted pose,
    and a note names them.
    SmplIkError: not a video (or a still image), no frames, nobody found, the person asked for
    beyond those on the first frame with people, a bad range, step or height."""
    steps = video_steps(path, clip, body, betas, options)
    try:
        while True:
            done, total = next(steps)
            if progress is not None and progress(done, total) is False:
                raise VideoCancelled(f"{Path(path).name}: cancelled after {done} of {total} frames")
    except StopIteration as finished:
        return finished.value
    finally:
        steps.close()


def _filled(values, found):
    """(T, ...) array of per-frame values (None where not found): each missing frame takes the
    nearest earlier fitted one (the first fitted one before that)."""
    first = next(v for v, f in zip(values, found) if f)
    out, last = [], first
    for v, f in zip(values, found):
        last = v if f else last
        out.append(last)
    return np.array(out)


def smooth_depth(trans, rest, sigma):
    """Root translations (T, 3) whose pelvis keeps its ray through the camera (its place in the
    image) while its distance along the camera's axis is smoothed (local_linear, sigma frames):
    a monocular fit's depth wanders by tens of centimetres over a few frames where its image
    position does not."""
    trans = np.asarray(trans, dtype=np.float64)
    pelvis = trans + np.asarray(rest, dtype=np.float64)[0]
    depth = -pelvis[:, 2]
    if len(trans) < 3 or np.any(depth <= 0):
        return trans
    smoothed = local_linear(depth, sigma)
    return trans + pelvis * (smoothed / depth - 1.0)[:, None]


def _finish(fits, rest, fps, options, name, notes):
    """(local_rot, trans, joints, contact, up, floor) of the clip's ClipFits `fits`: missing
    frames filled (and named in `notes`), smoothed, contacts found, feet locked, as `options`
    say."""
    frames, found = fits.frames, fits.found
    missing = [f for f, ok in zip(frames, found) if not ok]
    if missing:
        notes.append(f"{name}: the person was not found on {len(missing)} of {len(frames)} frames "
                     f"({frame_ranges(missing, frames[1] - frames[0] if len(frames) > 1 else 1)}): they carry "
                     "the nearest pose before them")
    local_rot, trans = _filled(fits.local_rot, found), _filled(fits.trans, found)
    if options.temporal and options.smooth:
        local_rot, trans = smooth_poses(local_rot, trans, SMOOTH_SIGMA_S * fps)
        trans = smooth_depth(trans, rest, DEPTH_SIGMA_S * fps)
    joints = forward_kinematics(local_rot, rest, PARENTS, trans).positions
    first = clip_up(local_rot, trans, rest)
    contact, _ = foot_contacts(joints, fps, first)
    up, floor = floor_of(joints, contact, first)
    if options.temporal and options.lock_feet and contact.any():
        local_rot, trans = lock_feet(local_rot, trans, rest, contact)
        joints = forward_kinematics(local_rot, rest, PARENTS, trans).positions
    return local_rot, trans, joints, contact, up, floor


def video_scene(motion, rest):
    """The VideoScene of a VideoMotion for a body with rest joints `rest` (24, 3): turned by
    the shortest rotation that makes the floor's up the scene's +Y, moved so the first frame's
    pelvis stands above the origin and the floor lies at the rest pose's lowest ankle or foot
    joint height."""
    rest = np.asarray(rest, dtype=np.float64)
    turn = shortest_arc(np.asarray(motion.up, dtype=np.float64), np.array([0.0, 1.0, 0.0]))
    pelvis = (rest[0] + motion.trans) @ turn.T          # (T, 3): the root turns about the rest pelvis
    feet = [j for pair in FOOT_INDICES_BY_SIDE for j in pair]
    shift = -np.array([pelvis[0, 0], motion.floor - rest[feet, 1].min(), pelvis[0, 2]])
    local = np.array(motion.local_rot, dtype=np.float64)
    local[:, 0] = turn @ local[:, 0]
    return VideoScene(local_rot=local, trans=pelvis + shift - rest[0], camera_rotation=turn, camera_position=shift)

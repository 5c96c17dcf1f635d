"""A body's motion from a video of a person: the landmarker (models/photo/blazepose.py) tracks the
person from frame to frame, each frame's keypoints are filtered (One Euro) and the body fitted
to them through the camera, warm-started from the frame before; the fitted poses are smoothed, the feet found where they
rest on the floor and held there (no skating). Plain numpy and OpenCV; the Blender operator
(addon/photo/video.py) and scripts/video_to_smpl.py call `pose_from_video` or `video_steps`.

Frames: everything is in the camera's frame (models/photo/camera.py: the camera at the origin
looking down -Z, +Y up in the picture, +X right); `video_scene` levels it for a scene (the
floor the feet stand on horizontal, Y up).
"""
import glob
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.rotations import shortest_arc, unit
from ..core.skeleton import JOINT_INDEX, PARENTS
from .camera import camera_from_focal, camera_from_fov, check_image_size, default_camera
from .detect import Detection, box_iou, detect_people, detection_of, grey_out, new_landmarker
from .fit import fit_to_image, standing_up
from .image_size import image_size_from_header
from .runtime import require_packages

VIDEO_SUFFIXES = (".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm", ".mpg", ".mpeg", ".wmv", ".flv")
DEFAULT_FPS = 30.0         # a video whose file states no frame rate
DETECT_LONG_SIDE = 640     # frames are scaled down to this many pixels along their longer side for
                           # the landmarker (it looks at 256 pixels of the person anyway); fits use full pixels
WARM_ITERATIONS = 3        # descent steps of a frame's fit warm-started from the frame before
SAME_PERSON = 0.3          # a new detection overlapping the last box by less is someone else
# One Euro filter on the keypoints (image positions over the box diagonal, 3D landmarks in
# metres): the cutoff (Hz) is ONE_EURO_MIN_CUTOFF at rest, rising by ONE_EURO_BETA per unit/s
ONE_EURO_MIN_CUTOFF = 1.5
ONE_EURO_BETA = 20.0
ONE_EURO_D_CUTOFF = 1.0
SMOOTH_SIGMA_S = 0.05      # seconds: the Gaussian over the fitted rotations and root (1.5 frames at 30 fps)
# seconds: the Gaussian weights of the local straight line the root's distance from the camera
# is smoothed by (6 frames at 30 fps; smooth_depth). The distance is what one frame decides
# least: on the held-out varied clips it wandered 0.55 m and back over 8 frames of a walk
# toward the camera. 0.2 was chosen before measuring; against no such smoothing the width
# hardly matters (camera-frame acceleration in mm/frame^2: varied 11.99 -> 10.38 / 10.17 /
# 9.73 at 0.1 / 0.2 / 0.3 s; m21 boxing 12.91 -> 11.31 / 10.97 / 10.95 / 10.73 at 0.1 / 0.2 /
# 0.3 / 0.5 s; joint errors within 0.3 mm)
DEPTH_SIGMA_S = 0.2
# A foot is in contact where it is low and slow: within CONTACT_HEIGHT of the other foot and
# moving across the line of sight less than CONTACT_SPEED
CONTACT_HEIGHT = 0.08      # metres above the other foot (each foot's lowest joint, ankle or ball)
CONTACT_SPEED = 0.6        # m/s across the line of sight: a fitted planted foot wobbles up to ~0.5, a swinging one 1.4-4
FLOOR_SPREAD = 0.15        # metres (RMS): contact points spread this far fix the floor's tilt
FLOOR_FLAT = 0.25          # ... where they lie this flat: RMS off their plane over their lesser spread along it
FLOOR_PERCENTILE = 5       # the floor: this percentile of the lowest foot joint's height
LOCK_TOLERANCE = 1e-3      # metres: a contact foot further from its lock is moved there by SMPL-IK
LOCK_ITERATIONS = 4        # refinement steps a frame: the feet are millimetres off after the root moved
FEET = (("left", JOINT_INDEX["left_ankle"], JOINT_INDEX["left_foot"]),
        ("right", JOINT_INDEX["right_ankle"], JOINT_INDEX["right_foot"]))
FREE_PINS = ("pelvis", "head", "left_wrist", "right_wrist")   # held softly while a foot is locked


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


def video_path(path):
    """The Path of a video file; SmplIkError when none is given, there is no such file or it
    is a still image."""
    if not str(path).strip():
        raise SmplIkError("no video was given: choose a video file (the file path is empty)")
    p = Path(path)
    if not p.is_file():
        raise SmplIkError(f"{p}: no such file")
    try:
        still = image_size_from_header(p)
    except OSError as exc:
        raise SmplIkError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    if still is not None:
        raise SmplIkError(f"{p.name} is a still image, not a video: use Pose from Photo for it")
    return p


def find_video_files(inputs):
    """(found, missing) for command-line `inputs`: each a video file (taken whatever its
    suffix), a folder (searched recursively for VIDEO_SUFFIXES in any case) or a glob. found:
    ((path, path relative to its input), ...); missing: ((input, why), ...)."""
    found, missing = [], []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.suffix.lower() in VIDEO_SUFFIXES and f.is_file())
            found += [(f, f.relative_to(p)) for f in files]
            if not files:
                missing.append((str(item), "folder has no video files"))
        elif p.is_file():
            found.append((p, Path(p.name)))
        elif any(ch in str(item) for ch in "*?["):
            files = sorted(Path(f) for f in glob.glob(str(item), recursive=True) if Path(f).is_file())
            found += [(f, Path(f.name)) for f in files]
            if not files:
                missing.append((str(item), "pattern matches no files"))
        else:
            missing.append((str(item), "no such file or folder"))
    return tuple(found), tuple(missing)


class _Reader:
    """A video opened with OpenCV: width, height, fps, count (frames as the file states, maybe
    0 or approximate); read(skip) the next frame as (H, W, 3) BGR after skipping `skip`."""

    def __init__(self, path):
        require_packages("pose from a video")
        import cv2

        self.cv2 = cv2
        self.path = video_path(path)
        self.capture = cv2.VideoCapture(str(self.path))
        if not self.capture.isOpened():
            self.capture.release()
            raise SmplIkError(f"{self.path.name}: not a video OpenCV can read (not a video file, or one with no frames)")
        self.width = int(self.capture.get(cv2.CAP_PROP_FRAME_WIDTH))
        self.height = int(self.capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
        fps = float(self.capture.get(cv2.CAP_PROP_FPS) or 0.0)
        self.fps_note = None
        if not (math.isfinite(fps) and 1.0 <= fps <= 1000.0):
            self.fps_note = f"{self.path.name} states no frame rate: taken as {DEFAULT_FPS:g} fps"
            fps = DEFAULT_FPS
        self.fps = fps
        self.count = max(int(self.capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0), 0)

    def seek(self, frame):
        """Skip to source frame `frame` (decoding the frames before it: seeking by time is not
        frame-exact in every container)."""
        for _ in range(frame):
            if not self.capture.grab():
                return False
        return True

    def read(self, skip=0):
        for _ in range(skip):
            if not self.capture.grab():
                return None
        ok, frame = self.capture.read()
        return frame if ok and frame is not None and frame.size else None

    def close(self):
        self.capture.release()


class OneEuro:
    """The One Euro filter (Casiez et al. 2012) on arrays of one shape: a low-pass filter whose
    cutoff rises with the signal's speed, so a still signal is smoothed hard and a moving one
    follows with little lag. Times in seconds."""

    def __init__(self, min_cutoff=ONE_EURO_MIN_CUTOFF, beta=ONE_EURO_BETA, d_cutoff=ONE_EURO_D_CUTOFF):
        self.min_cutoff, self.beta, self.d_cutoff = min_cutoff, beta, d_cutoff
        self.value = self.speed = self.time = None

    @staticmethod
    def _alpha(cutoff, dt):
        tau = 1.0 / (2 * np.pi * cutoff)
        return 1.0 / (1.0 + tau / dt)

    def __call__(self, value, time):
        value = np.asarray(value, dtype=np.float64)
        if self.value is None or time <= self.time:
            self.value, self.speed, self.time = value.copy(), np.zeros_like(value), time
            return value
        dt = time - self.time
        speed = (value - self.value) / dt
        self.speed = self.speed + self._alpha(self.d_cutoff, dt) * (speed - self.speed)
        cutoff = self.min_cutoff + self.beta * np.abs(self.speed)
        self.value = self.value + self._alpha(cutoff, dt) * (value - self.value)
        self.time = time
        return self.value


def _scaled(detection, factor):
    """A Detection found on an image scaled by `factor`, in the full image's pixels."""
    return Detection(world=detection.world, image_xy=detection.image_xy / factor,
                     visibility=detection.visibility, bbox=tuple(v / factor for v in detection.bbox))


def frame_ranges(frames, step=1):
    """'3-5, 9' for source frames [3, 4, 5, 9] (sorted); frames `step` apart make one run."""
    runs = []
    for f in frames:
        if runs and f == runs[-1][1] + step:
            runs[-1][1] = f
        else:
            runs.append([f, f])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _ordinal(n):
    """'1st', '2nd', '3rd', '4th', ... '11th', '21st'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class _Tracker:
    """The person followed through a video: the landmarker in tracking mode on frames scaled down to
    DETECT_LONG_SIDE. The person is chosen (largest first, `person` from 0) on the first frame
    with people; whenever tracking starts or is lost, that frame is searched for people in
    static mode and everyone but the person followed (the one overlapping their last box) is
    greyed out, so the tracker takes them up again and nobody else."""

    def __init__(self, width, height, person, temporal, smooth):
        self.factor = min(1.0, DETECT_LONG_SIDE / max(width, height))
        self.size = (max(int(round(width * self.factor)), 1), max(int(round(height * self.factor)), 1))
        self.person, self.temporal = int(person), temporal
        self.pose = new_landmarker(tracking=True, what="pose from a video") if temporal else None
        self.last = None            # the last found Detection (full pixels)
        self.tracking = False
        self.filter = OneEuro() if temporal and smooth else None

    def close(self):
        self.pose = None

    def _people(self, rgb, name, frame):
        people = [_scaled(d, self.factor) for d in detect_people(rgb, max_people=max(3, self.person + 2), passes=1,
                                                                   tiles=False)]
        if self.last is None and people and self.person >= len(people):
            found = "only 1 person" if len(people) == 1 else f"only {len(people)} people"
            raise SmplIkError(f"{name}: the first frame with people (frame {frame}) shows {found}, so there is "
                              f"no {_ordinal(self.person + 1)} largest person to follow")
        return people

    def __call__(self, bgr, name, frame, time):
        """The person's Detection on one frame (full pixels), or None where they are not found."""
        import cv2

        small = cv2.resize(bgr, self.size, interpolation=cv2.INTER_AREA) if self.factor < 1.0 else bgr
        rgb = np.ascontiguousarray(cv2.cvtColor(small, cv2.COLOR_BGR2RGB))
        width, height = bgr.shape[1], bgr.shape[0]
        found = None
        if not self.temporal:
            people = self._people(rgb, name, frame)
            found = people[self.person] if self.person < len(people) else None
        elif self.tracking:
            found = detection_of(self.pose(rgb), width, height)
            if found is not None and box_iou(found.bbox, self.last.bbox) < SAME_PERSON ** 2:
                found = None   # it jumped to someone else
            self.tracking = found is not None
        if self.temporal and found is None:   # tracking starts, or was lost: search this frame
            people = self._people(rgb, name, frame)
            chosen = None
            if self.last is None:
                chosen = people[self.person] if people else None
            elif people:
                best = max(people, key=lambda d: box_iou(d.bbox, self.last.bbox))
                chosen = best if box_iou(best.bbox, self.last.bbox) >= SAME_PERSON else None
            found = None
            if chosen is not None:
                for other in people:
                    if other is not chosen:
                        grey_out(rgb, tuple(v * self.factor for v in other.bbox))
                tracked = detection_of(self.pose(rgb), width, height)
                self.tracking = tracked is not None and box_iou(tracked.bbox, chosen.bbox) >= SAME_PERSON
                found = tracked if self.tracking else chosen
        if found is None:
            return None
        self.last = found
        if self.filter is not None:
            x0, y0, x1, y1 = found.bbox
            diagonal = max(float(np.hypot(x1 - x0, y1 - y0)), 1.0)
            packed = np.concatenate([found.image_xy.ravel() / diagonal, found.world.ravel()])
            packed = self.filter(packed, time)
            n = found.image_xy.size
            found = Detection(world=packed[n:].reshape(-1, 3), image_xy=packed[:n].reshape(-1, 2) * diagonal,
                              visibility=found.visibility, bbox=found.bbox)
        return found


def _camera(width, height, options):
    """The video's Camera: options.focal_px, else options.fov_deg, else the default field of
    view (a video has no EXIF)."""
    if options.focal_px is not None:
        return camera_from_focal(width, height, options.focal_px)
    if options.fov_deg is not None:
        return camera_from_fov(width, height, options.fov_deg)
    return default_camera(width, height)


def video_steps(path, frame_start=0, frame_end=None, step=1, person=0, body=None, betas=None,
                options=VideoOptions()):
    """Generator: pose_from_video one frame at a time. Yields (done, total) after each frame
    read (total is the file's frame count over the range, an estimate: the last yield has
    done == total), and returns the VideoMotion (StopIteration's value). Closing it early
    (generator.close()) stops at once and releases the video and the detector."""
    import time as clock

    started = clock.perf_counter()
    if int(step) < 1:
        raise SmplIkError(f"step {step}: it must be 1 or more (every step-th frame is used)")
    if int(frame_start) < 0:
        raise SmplIkError(f"frame_start {frame_start}: frames are counted from 0")
    if frame_end is not None and int(frame_end) <= int(frame_start):
        raise SmplIkError(f"the frame range {frame_start}-{frame_end} is empty (frame_end is not included)")
    if int(person) < 0:
        raise SmplIkError(f"person {person}: people are counted from 0 (the largest)")
    if options.height_m is not None and not MIN_HEIGHT_M <= options.height_m <= MAX_HEIGHT_M:
        raise SmplIkError(f"height {options.height_m:g} m: a person's height is between {MIN_HEIGHT_M:g} and "
                          f"{MAX_HEIGHT_M:g} metres")
    if body is None:
        from ..body.model import load_body_model
        body = load_body_model()
    betas = np.zeros(10) if betas is None else np.asarray(betas, dtype=np.float64).reshape(-1)
    rest = body.rest_joints(betas[:body.shapedirs.shape[-1]])
    reader = _Reader(path)
    name = reader.path.name
    tracker = None
    try:
        check_image_size(reader.width or 16, reader.height or 16, what=name)
        start, step = int(frame_start), int(step)
        end = reader.count if frame_end is None or (reader.count and frame_end > reader.count) else int(frame_end)
        total = max(len(range(start, end, step)), 1) if end else 1
        if start and not reader.seek(start):
            raise SmplIkError(f"{name}: frame_start {start} is past the video's last frame")
        tracker = _Tracker(reader.width, reader.height, person, options.temporal, options.smooth)
        camera = _camera(reader.width, reader.height, options)
        frames, locals_, transes, found = [], [], [], []
        fitted_frames = []   # (index, detection, fit) of each frame fitted, for fit_shape
        shaping = options.temporal and (options.fit_shape or options.height_m is not None)
        previous = None
        frame = start
        bgr = reader.read()
        while bgr is not None and (frame_end is None or frame < frame_end):
            if not frames and (bgr.shape[1], bgr.shape[0]) != (reader.width, reader.height):
                reader.width, reader.height = bgr.shape[1], bgr.shape[0]   # the header was wrong
                camera = _camera(reader.width, reader.height, options)
            detection = tracker(bgr, name, frame, frame / reader.fps)
            fitted = None
            if detection is not None:
                warm = (previous.local_rot, previous.trans) if options.temporal and previous is not None else None
                try:
                    fitted = fit_to_image(detection, rest, camera, body=body, betas=betas,
                                          min_visibility=options.min_visibility, start=warm,
                                          **({"iterations": WARM_ITERATIONS} if warm else {}))
                except SmplIkError:
                    fitted = None
            frames.append(frame)
            found.append(fitted is not None)
            locals_.append(None if fitted is None else fitted.local_rot)
            transes.append(None if fitted is None else fitted.trans)
            if fitted is not None:
                previous = fitted
                if shaping:
                    fitted_frames.append((len(frames) - 1, detection, fitted))
            yield len(frames), (2 if shaping else 1) * max(total, len(frames))
            frame += step
            bgr = None if frame_end is not None and frame >= frame_end else reader.read(step - 1)
        if not frames:
            raise SmplIkError(f"{name}: the video has no frames" if start == 0 else
                              f"{name}: no frames from frame {start} on (the video has {reader.count})")
        if not any(found):
            raise SmplIkError(f"{name}: nobody found in any of its {len(frames)} frames (the detector needs "
                              "one person's body, most of it in the frame)")
        fps = reader.fps / step
        notes = [reader.fps_note] if reader.fps_note else []
        if shaping:
            betas, rest = yield from _refit_with_shape(fitted_frames, locals_, transes, camera, body, betas,
                                                       options, len(frames), notes)
        motion = _finish(frames, locals_, transes, found, rest, fps, options, name, notes)
        return VideoMotion(local_rot=motion[0], trans=motion[1], joints=motion[2], betas=betas.copy(), fps=fps,
                           frames=np.array(frames), contact=motion[3], camera=camera, notes=tuple(notes),
                           found=np.array(found), up=motion[4], floor=motion[5], video_fps=reader.fps,
                           seconds=clock.perf_counter() - started)
    finally:
        if tracker is not None:
            tracker.close()
        reader.close()


def _refit_with_shape(fitted_frames, locals_, transes, camera, body, betas, options, count, notes):
    """VideoOptions.fit_shape's second pass (a generator yielding progress as video_steps does,
    after its `count` frames): the person's shape over the clip (clip_shape), then each fitted
    frame refitted with it from its first fit (WARM_ITERATIONS steps), in place in locals_ and
    transes. Returns (betas, rest joints); a frame that fails to refit keeps its first fit."""
    from .shape import clip_shape

    shape, note = clip_shape([f for _, _, f in fitted_frames], [d for _, d, _ in fitted_frames], camera, body, betas,
                             options.height_m)
    if note:
        notes.append(note)
    rest = body.rest_joints(shape)
    for done, (index, detection, first) in enumerate(fitted_frames, start=1):
        if not note:
            try:
                again = fit_to_image(detection, rest, camera, body=body, betas=shape, min_visibility=options.min_visibility,
                                     start=(first.local_rot, first.trans), iterations=WARM_ITERATIONS)
                locals_[index], transes[index] = again.local_rot, again.trans
            except SmplIkError:
                pass
        yield count + round(done * count / len(fitted_frames)), 2 * count
    return shape, rest


def pose_from_video(path, frame_start=0, frame_end=None, step=1, person=0, body=None, betas=None,
                    options=VideoOptions(), progress=None):
    """A body's motion from a video file of a person; returns a VideoMotion.

    Source frames frame_start, frame_start + step, ... up to frame_end (not included; None:
    the video's end), counted from 0. person: which person, counted from 0, largest first on
    the first frame with people (then followed). body (a BodyModel, default the open body) and
    betas (10,) the body fitted. options: VideoOptions. progress: optional callable(done,
    total) called after each frame; returning False cancels: VideoCancelled is raised and
    nothing is returned (or left behind: the video and the detector are released).

    Each frame: the person's keypoints (the landmarker tracking, One Euro filtered), the body fitted
    through the camera (models/photo/fit.py fit_to_image, warm-started from the last frame's
    fit); then over the clip the fitted poses smoothed (a Gaussian of SMOOTH_SIGMA_S), the feet
    in contact found (low and slow) and held where they rest (`lock_feet`). Frames the person
    is not found on carry the nearest fitted pose, and a note names them.
    SmplIkError: not a video (or a still image), no frames, nobody found, the person asked for
    beyond those on the first frame with people, a bad range or step."""
    steps = video_steps(path, frame_start, frame_end, step, person, body, betas, options)
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


def _up(local_rot, trans, rest):
    """(3,) unit: the floor's up in the camera's frame, the mean over the clip (local_rot (T, 24,
    3, 3), trans (T, 3) on rest joints (24, 3)) of each frame's up as photo_scene takes it
    (models.photo.fit.standing_up: from the feet to the centre of mass, along the shins when
    seated)."""
    up = standing_up(local_rot, trans, rest).sum(axis=0)
    return unit(up) if np.linalg.norm(up) > 1e-9 else np.array([0.0, 1.0, 0.0])


def _lateral_speed(points, fps):
    """(T,) m/s: how fast points (T, 3) in the camera's frame move across the line of sight,
    their image motion at their own depth (d(x/-z, y/-z)/dt times -z). A monocular fit's depth
    wobbles by centimetres a frame where its image position does not, so a planted foot is
    slow by this measure; a point less than 10 cm in front of the camera takes its 3D speed."""
    if len(points) < 2:
        return np.zeros(len(points))
    depth = -points[:, 2]
    if np.any(depth < 0.1):
        return np.linalg.norm(np.gradient(points, axis=0), axis=1) * fps
    seen = points[:, :2] / depth[:, None]
    return np.linalg.norm(np.gradient(seen, axis=0), axis=1) * depth * fps


def _floor_up(points, up):
    """The floor's up from the foot points (N, 3) that rest on it and a first guess `up` (3,):
    the normal of the plane through them where they spread both ways (FLOOR_SPREAD) and lie
    flat (off the plane less than FLOOR_FLAT of their lesser spread along it), `up` itself
    where they spread both ways but not flat (uneven ground, or contacts found wrong: no one
    floor), `up` turned square to their line where they spread one way, `up` itself where
    they do not."""
    if len(points) < 10:
        return up
    centred = points - points.mean(axis=0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    spread = sv / np.sqrt(len(points))
    if spread[1] > FLOOR_SPREAD:
        if spread[2] > FLOOR_FLAT * spread[1]:
            return up
        normal = vt[2]
        return normal if normal @ up > 0 else -normal
    if spread[0] > FLOOR_SPREAD:
        return unit(up - (up @ vt[0]) * vt[0])
    return up


def foot_contacts(joints, fps, up):
    """(contact (T, 2) bool, floor height along `up`) of joints (T, 24, 3) in the camera's
    frame at `fps`: a foot touches where its lowest joint (ankle or ball) is within
    CONTACT_HEIGHT of the other foot's (or below it) and its middle moves across the line of
    sight slower than CONTACT_SPEED (_lateral_speed: heights and speeds along the line of sight
    are what a monocular fit gets wrong); the floor is the FLOOR_PERCENTILE percentile of the
    lower foot's height. A single frame off contact between two in contact counts as in
    contact (a flicker)."""
    heights = joints @ up
    low = np.stack([np.minimum(heights[:, a], heights[:, b]) for _, a, b in FEET], axis=1)   # (T, 2)
    floor = float(np.percentile(low.min(axis=1), FLOOR_PERCENTILE))
    contact = np.zeros(low.shape, dtype=bool)
    for s, (_, a, b) in enumerate(FEET):
        speed = _lateral_speed((joints[:, a] + joints[:, b]) / 2, fps)
        contact[:, s] = (low[:, s] - low.min(axis=1) < CONTACT_HEIGHT) & (speed < CONTACT_SPEED)
        flicker = ~contact[1:-1, s] & contact[:-2, s] & contact[2:, s]
        contact[1:-1, s] |= flicker
    return contact, floor


def floor_of(joints, contact, up):
    """(up, floor height along it) of the floor the feet in `contact` (T, 2) rest on, joints
    (T, 24, 3) in the camera's frame, from the first guess `up` (_floor_up over the lower
    joint of each foot in contact)."""
    rows = []
    for s, (_, a, b) in enumerate(FEET):
        pair = joints[contact[:, s]][:, [a, b]]                     # (N, 2, 3)
        lower = np.argmin(pair @ up, axis=1)
        rows.append(pair[np.arange(len(pair)), lower])
    points = np.concatenate(rows) if rows else np.zeros((0, 3))
    up = _floor_up(points, up)
    heights = joints @ up
    low = np.minimum.reduce([np.minimum(heights[:, a], heights[:, b]) for _, a, b in FEET])
    return up, float(np.percentile(low, FLOOR_PERCENTILE))


def _runs(flags):
    """[(start, stop)] of the runs of True in a (T,) bool array (stop not included)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(int), [0]])))
    return list(zip(edges[0::2], edges[1::2]))


def lock_feet(local_rot, trans, rest, contact):
    """Feet held where they rest: for each run of frames a foot is in contact (contact (T, 2)),
    its ankle and ball are held at their mean positions over the run. First the root moves
    (the mean of the contact feet's offsets; between contacts it moves as the offsets blend,
    so the body never jumps), then on each frame where a contact foot is still more than
    LOCK_TOLERANCE off (two feet in contact that moved apart, the blend's edges) SMPL-IK's
    refinement pins that foot's ankle and ball there, the pelvis, head and wrists held softly
    where they were. local_rot (T, 24, 3, 3), trans (T, 3), rest (24, 3); returns the new
    (local_rot, trans)."""
    from ..ik.effectors import Effector, EffectorKind
    from ..ik.refine import RefineOptions, refine_pose
    from ..motion.temporal import gaussian_kernel

    local_rot, trans = np.array(local_rot, dtype=np.float64), np.array(trans, dtype=np.float64)
    positions = forward_kinematics(local_rot, rest, PARENTS, trans).positions
    count = len(trans)
    locks = np.full((count, 2, 2, 3), np.nan)   # frame, foot, (ankle, ball), xyz
    for s, (_, a, b) in enumerate(FEET):
        for lo, hi in _runs(contact[:, s]):
            locks[lo:hi, s] = positions[lo:hi][:, [a, b]].mean(axis=0)
    if not contact.any():
        return local_rot, trans
    offsets = np.stack([locks[:, s, 0] - positions[:, a] for s, (_, a, _) in enumerate(FEET)], axis=1)   # (T, 2, 3)
    weight = contact.astype(np.float64)
    touching = weight.sum(axis=1) > 0
    shift = np.zeros((count, 3))
    shift[touching] = np.nansum(offsets[touching] * weight[touching, :, None], axis=1) / weight[touching].sum(1)[:, None]
    index = np.arange(count)
    for k in range(3):   # between contacts the shift blends from one to the next
        shift[:, k] = np.interp(index, index[touching], shift[touching, k])
    if count > 2:
        kernel = gaussian_kernel(1.0)
        r = len(kernel) // 2
        padded = np.concatenate([np.repeat(shift[:1], r, 0), shift, np.repeat(shift[-1:], r, 0)])
        shift = sum(w * padded[i:i + count] for i, w in enumerate(kernel))
    trans = trans + shift
    positions = positions + shift[:, None]
    options = RefineOptions(balance=False, self_collision=False, iterations=LOCK_ITERATIONS)
    for t in np.flatnonzero(touching):
        feet = [s for s in range(2) if contact[t, s]]
        off = max(np.linalg.norm(positions[t, [FEET[s][1], FEET[s][2]]] - locks[t, s], axis=1).max() for s in feet)
        if off <= LOCK_TOLERANCE:
            continue
        effectors = [Effector(j, EffectorKind.POSITION, tuple(locks[t, s, n]))
                     for s in feet for n, j in enumerate(FEET[s][1:])]
        effectors += [Effector(name, EffectorKind.POSITION, tuple(positions[t, JOINT_INDEX[name]]), soft=True,
                               weight=0.5, tolerance=1.0) for name in FREE_PINS]
        refined = refine_pose(local_rot[t], trans[t], rest, effectors, options)
        local_rot[t], trans[t] = refined.local_rot, refined.trans
    return local_rot, trans


def smooth_depth(trans, rest, sigma):
    """Root translations (T, 3) whose pelvis keeps its ray through the camera (its place in the
    image) while its distance along the camera's axis is smoothed (local_linear, sigma frames):
    a monocular fit's depth wanders by tens of centimetres over a few frames where its image
    position does not."""
    from ..motion.temporal import local_linear

    trans = np.asarray(trans, dtype=np.float64)
    pelvis = trans + np.asarray(rest, dtype=np.float64)[0]
    depth = -pelvis[:, 2]
    if len(trans) < 3 or np.any(depth <= 0):
        return trans
    smoothed = local_linear(depth, sigma)
    return trans + pelvis * (smoothed / depth - 1.0)[:, None]


def _finish(frames, locals_, transes, found, rest, fps, options, name, notes):
    """(local_rot, trans, joints, contact, up, floor) of the clip: missing frames filled (and
    named in `notes`), smoothed, contacts found, feet locked, as `options` say."""
    from ..motion.temporal import smooth_poses

    missing = [f for f, ok in zip(frames, found) if not ok]
    if missing:
        notes.append(f"{name}: the person was not found on {len(missing)} of {len(frames)} frames "
                     f"({frame_ranges(missing, frames[1] - frames[0] if len(frames) > 1 else 1)}): they carry the nearest pose before them")
    local_rot, trans = _filled(locals_, found), _filled(transes, found)
    if options.temporal and options.smooth:
        local_rot, trans = smooth_poses(local_rot, trans, SMOOTH_SIGMA_S * fps)
        trans = smooth_depth(trans, rest, DEPTH_SIGMA_S * fps)
    joints = forward_kinematics(local_rot, rest, PARENTS, trans).positions
    first = _up(local_rot, trans, rest)
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
    feet = [j for _, a, b in FEET for j in (a, b)]
    shift = -np.array([pelvis[0, 0], motion.floor - rest[feet, 1].min(), pelvis[0, 2]])
    local = np.array(motion.local_rot, dtype=np.float64)
    local[:, 0] = turn @ local[:, 0]
    return VideoScene(local_rot=local, trans=pelvis + shift - rest[0], camera_rotation=turn, camera_position=shift)


def skate_mm_per_frame(joints, contact):
    """How far the feet slide while in contact: the mean distance, in millimetres, a foot's
    ankle and ball move from one frame to the next where the foot is in contact on both
    (joints (T, 24, 3), contact (T, 2)); NaN when no foot is in contact twice running."""
    moves = []
    for s, (_, a, b) in enumerate(FEET):
        both = contact[1:, s] & contact[:-1, s]
        for j in (a, b):
            moves.append(np.linalg.norm(np.diff(joints[:, j], axis=0), axis=1)[both])
    moves = np.concatenate(moves)
    return float(moves.mean() * 1000) if len(moves) else float("nan")


def acceleration_mm(joints):
    """The joints' mean acceleration, millimetres per frame squared (joints (T, 24, 3)): how
    much the motion jitters (a steady motion has little)."""
    if len(joints) < 3:
        return float("nan")
    return float(np.linalg.norm(np.diff(joints, n=2, axis=0), axis=-1).mean() * 1000)


# --- one video file to one motion file (scripts/video_to_smpl.py, locally or on dask) ----------

@dataclass(frozen=True)
class VideoJob:
    """One video to turn into an AMASS-style .npz at `output`: the frames, person and options
    of pose_from_video; body a model file ('' the open body); overwrite an existing output."""

    source: str
    output: str
    frame_start: int = 0
    frame_end: int | None = None
    step: int = 1
    person: int = 0
    body: str = ""
    options: VideoOptions = VideoOptions()
    overwrite: bool = False


def video_record(motion, scene):
    """What a video's motion file holds beside the motion (write_motion_npz's extras): the
    camera (camera_rotation (3, 3) and camera_position (3,), the scene's from the camera's
    frame; focal_px, image_size (width, height)), source_frames (T,), contact (T, 2) and found
    (T,) as in VideoMotion, and video_fps."""
    return {"camera_rotation": scene.camera_rotation, "camera_position": scene.camera_position,
            "focal_px": np.float64(motion.camera.focal_px),
            "image_size": np.array([motion.camera.width, motion.camera.height], np.int64),
            "source_frames": np.asarray(motion.frames, np.int64), "contact": np.asarray(motion.contact, bool),
            "found": np.asarray(motion.found, bool), "video_fps": np.float64(motion.video_fps)}


def run_video_job(job):
    """Turn one video into a motion file (models.motion.amass.write_motion_npz, atomically):
    the motion levelled by video_scene (SMPL's frame, Y up, the floor under the feet), with
    video_record beside it. Never raises: returns a models.motion.batch.JobResult (skipped when
    the output exists and not job.overwrite; failed with the error's message)."""
    import time as clock

    from ..body.model import load_body_model
    from ..core.rotations import matrix_to_axis_angle
    from ..motion.amass import MotionFile, write_motion_npz
    from ..motion.batch import JobResult, body_name, failed_job

    started = clock.perf_counter()
    try:
        out = Path(job.output)
        if out.exists() and not job.overwrite:
            return JobResult(source=job.source, output=job.output, ok=False,
                             skipped=f"{out} exists; pass --overwrite to replace it",
                             seconds=clock.perf_counter() - started)
        body = load_body_model(job.body or None)
        motion = pose_from_video(job.source, job.frame_start, job.frame_end, job.step, job.person, body=body,
                                 options=job.options)
        scene = video_scene(motion, body.rest_joints(motion.betas))
        write_motion_npz(out, MotionFile(poses=matrix_to_axis_angle(scene.local_rot), trans=scene.trans,
                                         betas=motion.betas, gender=body.gender, fps=motion.fps,
                                         body_model=body_name(job.body), up_axis="Y"),
                         extras=video_record(motion, scene))
        return JobResult(source=job.source, output=str(out), ok=True, frames=len(motion.frames), fps=motion.fps,
                         seconds=clock.perf_counter() - started, notes=motion.notes)
    except Exception as exc:  # noqa: BLE001 (a job never raises)
        return failed_job(job, exc, started)

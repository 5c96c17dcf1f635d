"""People in a photo: MediaPipe's BlazePose models (models/photo/blazepose.py, run by LiteRT, an
optional package that the per-platform builds bundle) find them, one at a time.

Frames. The landmark model's world landmarks are metres with the origin between the hips, in
the camera's axes: x to the image's right, y down the image, z away from the camera (a
smaller z is closer to the camera). A person facing the camera has their left side on the
image's right (+x) and their front toward the camera (-z). SMPL's frame is +X the person's
left, +Y up, +Z the person's front. So (X, Y, Z) = (x, -y, -z): a half turn about x, a proper
rotation (no mirror), which puts the camera on SMPL's +Z axis looking along -Z. A person facing
the camera comes out facing +Z, and the solved body's root rotation is the person's turn
relative to the camera. Checked on real photos: for people walking toward the camera, the
nose comes out in front of the ears (+Z) and the left shoulder on +X. The model does not level
the camera: a camera tilted down makes people lean back by the same angle.
"""
import functools
import threading
from dataclasses import dataclass

import numpy as np

from ..core.errors import SmplIkError
from .blazepose import NUM_LANDMARKS, PoseLandmarker
from .runtime import require_packages

# MediaPipe world landmarks -> SMPL frame (see the module docstring).
MEDIAPIPE_TO_SMPL = np.diag([1.0, -1.0, -1.0])
BBOX_MARGIN = 0.1       # each side, as a fraction of the box, when greying out a found person
GREY = 128
# Each person found is looked at again: their crop (CROP_MARGIN of the box a side), the crop
# mirrored and the whole photo mirrored; each keypoint is the median of the passes that found
# the same person (a box overlapping the first by SAME_PERSON_IOU).
PASSES = 4               # looks at each person (docs/training_log.md, "Detector: looking again")
CROP_MARGIN = 0.25
SAME_PERSON_IOU = 0.5
STRIPS = (1 / 2, 1 / 3)  # upright strips searched after the whole photo, as shares of its width
TILES = 3                # quarters a side searched after the strips (detect_people)
TILE_MIN_VISIBILITY = 0.5
TORSO = (11, 12, 23, 24)  # MediaPipe's shoulders and hips
KNEES = (25, 26)
# MediaPipe's landmark numbers with left and right exchanged (what a mirrored photo shows).
MIRRORED = np.arange(NUM_LANDMARKS)
for _left, _right in [(1, 4), (2, 5), (3, 6), (7, 8), (9, 10)] + [(i, i + 1) for i in range(11, NUM_LANDMARKS, 2)]:
    MIRRORED[_left], MIRRORED[_right] = _right, _left


@dataclass(frozen=True, eq=False)
class Detection:
    """One person in a photo.

    world: (33, 3) MediaPipe's world landmarks in SMPL's frame (metres, hip-centred, Y up,
    +Z toward the camera); image_xy: (33, 2) pixels (x right, y down; may lie outside the
    image for parts out of frame); visibility: (33,) in [0, 1]; bbox: (x0, y0, x1, y1) pixels,
    the landmarks' extent clipped to the image.
    """

    world: np.ndarray
    image_xy: np.ndarray
    visibility: np.ndarray
    bbox: tuple

    @property
    def area(self):
        """Bounding-box area in square pixels."""
        x0, y0, x1, y1 = self.bbox
        return max(x1 - x0, 0.0) * max(y1 - y0, 0.0)


def new_landmarker(tracking=False, what="pose from a photo"):
    """A new PoseLandmarker. tracking: it follows one person from frame to frame (call it with
    one video's frames in order); otherwise each image is searched afresh. SmplIkError when
    the detector's packages or model files are missing or damaged."""
    return PoseLandmarker(tracking=tracking, what=what)


@functools.lru_cache(maxsize=1)
def _landmarker():
    """The one PoseLandmarker for photos."""
    return new_landmarker()


def detection_of(landmarks, width, height):
    """The Detection of PoseLandmarks `landmarks` (or None) found in an image of `width` x
    `height` pixels (or in a copy of it scaled to any size), or None."""
    if landmarks is None:
        return None
    xy = landmarks.xy * (width, height)
    return Detection(world=mediapipe_to_smpl(landmarks.world), image_xy=xy,
                     visibility=np.array(landmarks.visibility, dtype=np.float64), bbox=_box_of(xy, width, height))


_POSE_LOCK = threading.Lock()   # one landmarker: one image at a time


def mediapipe_to_smpl(points):
    """(..., 3) MediaPipe world landmarks (x right, y down, z away from the camera) ->
    SMPL's frame (X the person's left when facing the camera, Y up, Z toward the camera)."""
    return np.asarray(points, dtype=np.float64) @ MEDIAPIPE_TO_SMPL.T


def _check_rgb(rgb):
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise SmplIkError(f"a photo must be an (H, W, 3) uint8 RGB array; got shape "
                          f"{rgb.shape} and dtype {rgb.dtype}")
    if min(rgb.shape[:2]) < 2:
        raise SmplIkError(f"the photo is too small ({rgb.shape[1]}x{rgb.shape[0]} pixels)")
    return rgb


def box_iou(a, b):
    """Intersection over union of two boxes (x0, y0, x1, y1)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(w, 0.0) * max(h, 0.0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _overlap(a, b):
    """Fraction of box a covered by box b."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    area = (a[2] - a[0]) * (a[3] - a[1])
    return max(w, 0) * max(h, 0) / area if area > 0 else 1.0


def grey_out(image, bbox):
    """Paint a person's box (x0, y0, x1, y1), enlarged by BBOX_MARGIN a side and clipped to
    the image, grey in `image` (H, W, 3), in place; returns the painted box in whole pixels."""
    height, width = image.shape[:2]
    lo, hi = np.array(bbox[:2], dtype=np.float64), np.array(bbox[2:], dtype=np.float64)
    margin = BBOX_MARGIN * (hi - lo)
    g0 = np.clip(np.floor(lo - margin), 0, (width, height)).astype(int)
    g1 = np.clip(np.ceil(hi + margin), 0, (width, height)).astype(int)
    image[g0[1]:g1[1], g0[0]:g1[0]] = GREY
    return (*g0, *g1)


def detect_people(rgb, max_people=3, passes=PASSES, tiles=True, landmarker=None):
    """People in a photo, largest bounding box first ([] when nobody is found).

    rgb: (H, W, 3) uint8. The landmarker finds one person per pass; each found
    person's box (enlarged by BBOX_MARGIN a side) is painted grey and the photo searched again,
    up to max_people passes. A pass that lands mostly on an already greyed box ends the search.
    passes (1 to PASSES): how many looks each person's keypoints are the median of (see
    PASSES; 1: MediaPipe's first answer as it is). tiles: then search parts of the photo
    (search_windows: upright strips, then quarters): MediaPipe's person detector sees the whole
    photo shrunk small and finds one person in a crowd at best, so a person small in the photo,
    or beside one already found, is often missed. A person found in a part counts only when
    both looks at their crop find them again and they are seen down to the knees (`whole`):
    a part of a photo shows MediaPipe people in clutter and pieces of people (a man cut off
    at the waist, with another's arm for his), with landmarks anywhere. landmarker: what finds
    one person's PoseLandmarks in an image (None: the shared PoseLandmarker). Returns a list of
    Detection.
    """
    rgb = _check_rgb(rgb)
    if max_people < 1:
        return []
    pose = landmarker or _landmarker()
    height, width = rgb.shape[:2]
    image = np.array(rgb, copy=True, order="C")
    found, greyed = [], []
    with _POSE_LOCK:
        for _ in range(int(max_people)):
            found_now = detection_of(pose(image), width, height)
            if found_now is None or any(_overlap(found_now.bbox, g) > 0.5 for g in greyed):
                break
            found.append(_looked_again(pose, image, found_now, passes)[0])
            greyed.append(grey_out(image, found_now.bbox))
        if tiles:
            for window in search_windows(width, height):
                if len(found) >= max_people:
                    break
                found_now = look(pose, image, window)
                if found_now is None or any(_overlap(found_now.bbox, g) > 0.5 for g in greyed):
                    continue
                fused, confirmed = _looked_again(pose, image, found_now, PASSES)
                if confirmed[0] and confirmed[1] and whole(fused):
                    found.append(fused if passes > 1 else found_now)
                    greyed.append(grey_out(image, found_now.bbox))
    return sorted(found, key=lambda d: d.area, reverse=True)


def whole(detection):
    """Whether a person found in a part of a photo is seen down to the knees: each shoulder
    and hip seen (visibility TILE_MIN_VISIBILITY) and the knees on average (one may be
    half hidden, as by the other leg of a person bent over)."""
    vis = detection.visibility
    return bool(vis[list(TORSO)].min() >= TILE_MIN_VISIBILITY and vis[list(KNEES)].mean() >= TILE_MIN_VISIBILITY)


def search_windows(width, height):
    """The parts (x0, y0, x1, y1) of a photo searched after the whole: upright strips the
    photo's height, half and a third of its width (overlapping by half), where standing and
    sitting people fit whole; then quarters, half its width and height, TILES a side
    (overlapping by half), for people small in a wide shot."""
    out = []
    for share in STRIPS:
        w = max(int(round(width * share)), 2)
        xs = np.linspace(0, width - w, int(round(2 / share)) - 1).round().astype(int)
        out += [(int(x), 0, int(x) + w, height) for x in xs]
    w, h = max(width // 2, 2), max(height // 2, 2)
    xs = np.linspace(0, width - w, TILES).round().astype(int)
    ys = np.linspace(0, height - h, TILES).round().astype(int)
    return out + [(int(x), int(y), int(x) + w, int(y) + h) for y in ys for x in xs]


def _box_of(xy, width, height):
    """(x0, y0, x1, y1) the extent of pixels xy (N, 2), clipped to the image."""
    lo, hi = np.clip(xy.min(0), 0, (width, height)), np.clip(xy.max(0), 0, (width, height))
    return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])


def look(pose, image, window=None, mirror=False):
    """One landmarker pass over the part `window` (x0, y0, x1, y1 whole pixels; None: all) of
    `image`, mirrored left to right when `mirror`: the Detection in the whole photo's pixels
    and the person's own left and right (mirrored back), or None when nobody is found."""
    height, width = image.shape[:2]
    c0, r0, c1, r1 = (0, 0, width, height) if window is None else window
    part = image[r0:r1, c0:c1]
    d = detection_of(pose(np.ascontiguousarray(part[:, ::-1] if mirror else part)), c1 - c0, r1 - r0)
    if d is None:
        return None
    xy, world, vis = d.image_xy, d.world, d.visibility
    if mirror:
        xy = np.column_stack([(c1 - c0) - xy[:, 0], xy[:, 1]])[MIRRORED]
        world, vis = (world * [-1.0, 1.0, 1.0])[MIRRORED], vis[MIRRORED]
    xy = xy + (c0, r0)
    return Detection(world=world, image_xy=xy, visibility=vis, bbox=_box_of(xy, width, height))


def _looked_again(pose, image, first, passes):
    """(`first` (a Detection in `image`) with each landmark the median of it and up to
    passes - 1 more looks (see PASSES) that find the same person, which of those looks did
    (a tuple of bool))."""
    height, width = image.shape[:2]
    x0, y0, x1, y1 = first.bbox
    mx, my = CROP_MARGIN * (x1 - x0) + 1, CROP_MARGIN * (y1 - y0) + 1
    crop = (int(max(0, np.floor(x0 - mx))), int(max(0, np.floor(y0 - my))),
            int(min(width, np.ceil(x1 + mx))), int(min(height, np.ceil(y1 + my))))
    seen, confirmed = [first], []
    for window, mirror in [(crop, False), (crop, True), (None, True)][:max(int(passes) - 1, 0)]:
        d = look(pose, image, window, mirror)
        confirmed.append(d is not None and box_iou(d.bbox, first.bbox) >= SAME_PERSON_IOU)
        if confirmed[-1]:
            seen.append(d)
    if len(seen) == 1:
        return first, tuple(confirmed)
    xy = np.median([d.image_xy for d in seen], axis=0)
    return Detection(world=np.median([d.world for d in seen], axis=0), image_xy=xy,
                     visibility=np.median([d.visibility for d in seen], axis=0),
                     bbox=_box_of(xy, width, height)), tuple(confirmed)


def read_image(path):
    """(H, W, 3) uint8 RGB array of an image file, read with OpenCV."""
    require_packages("reading a photo")
    import cv2

    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise SmplIkError(f"{path}: not a readable image file")
    return np.ascontiguousarray(bgr[..., ::-1])

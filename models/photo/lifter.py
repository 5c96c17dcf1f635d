"""A learned 2D-to-3D lifter: a person's 3D joints from their 2D keypoints alone, in numpy.

MediaPipe's own 3D landmarks are where its depth comes from, and its depth is the weak part of
a photo's pose (arms worst). This network learns depth from pose instead: trained on motion
capture (the trainers' clips on the three open bodies) seen through random cameras, it answers
from the keypoints a photo shows where in depth each joint most likely is.

Input (`features`): the keypoints of `KEYPOINT_LANDMARKS` (the MediaPipe landmarks the photo
fit uses, models.photo.keypoints.KEYPOINTS) as rays through the camera, x / -z and y / -z (so the
focal length and the image size drop out), each less the seen keypoints' mean ray and over
their spread (so the person's distance drops out), times a seen (1) / not seen (0) flag, then
the flags, then the mean ray itself (how far off the camera's axis the person stands, which
turns the view). Output: the 24 SMPL joints (metres, in the camera's frame: x right, y up,
+z toward the camera) less the pelvis, for a body of the training bodies' sizes; the fit
keeps only their directions and depths relative to each other.

Architecture `photo-lifter-v1`: Linear(in, width) and ReLU, `blocks` residual blocks of two
Linear(width, width) with ReLU, Linear(width, 72). Weights: models/ik/weights/photo_lifter.npz
(scripts/train_lifter.py), its record beside it.
"""
import functools
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.skeleton import MIRROR, NUM_JOINTS
from ..ik.nn import WEIGHTS_DIR, linear, load_weights
from .detect import MIRRORED
from .keypoints import KEYPOINTS

ARCH = "photo-lifter-v1"
DEFAULT_LIFTER_WEIGHTS = WEIGHTS_DIR / "photo_lifter.npz"
# MediaPipe landmark numbers read, in order: the photo fit's keypoints.
KEYPOINT_LANDMARKS = tuple(landmark for landmark, _, _ in KEYPOINTS)
NUM_KEYPOINTS = len(KEYPOINT_LANDMARKS)
# KEYPOINT_MIRROR[k]: the keypoint on the other side of the body (itself on the midline).
KEYPOINT_MIRROR = tuple(KEYPOINT_LANDMARKS.index(int(MIRRORED[lm])) for lm in KEYPOINT_LANDMARKS)
INPUT_DIM = 3 * NUM_KEYPOINTS + 2
MIN_SEEN = 4          # fewer seen keypoints than this: nothing to lift
# A keypoint MediaPipe is at least this sure of counts as seen (docs/training_log.md, "Lifter: unsure keypoints")
SEEN_VISIBILITY = 0.05


def features(rays, seen):
    """(..., INPUT_DIM) network input from rays (..., K, 2) (x / -z, y / -z of each keypoint)
    and seen (..., K) flags (1 seen, 0 not; a ray not seen is ignored)."""
    rays = np.asarray(rays, dtype=np.float64)
    seen = np.asarray(seen, dtype=np.float64)
    rays = np.where(seen[..., None] > 0, rays, 0.0)
    count = np.maximum(seen.sum(-1, keepdims=True), 1.0)
    centre = (rays * seen[..., None]).sum(-2) / count
    offset = (rays - centre[..., None, :]) * seen[..., None]
    spread = np.sqrt((offset ** 2).sum((-1, -2)) / count[..., 0])
    normed = offset / np.maximum(spread, 1e-9)[..., None, None]
    flat = normed.reshape(normed.shape[:-2] + (-1,))
    return np.concatenate([flat, seen, centre], axis=-1)


def mirrored(x):
    """(..., INPUT_DIM) the features of the picture mirrored left-right about its principal
    point: each keypoint takes its mirror's place, with x negated."""
    x = np.asarray(x, dtype=np.float64)
    k = NUM_KEYPOINTS
    flip = np.array([-1.0, 1.0])
    rays = x[..., :2 * k].reshape(x.shape[:-1] + (k, 2))[..., KEYPOINT_MIRROR, :] * flip
    return np.concatenate([rays.reshape(x.shape[:-1] + (2 * k,)), x[..., 2 * k:3 * k][..., KEYPOINT_MIRROR],
                           x[..., 3 * k:] * flip], axis=-1)


def expected_shapes(cfg):
    w, blocks = cfg["width"], cfg["blocks"]
    shapes = {"fc_in.weight": (w, INPUT_DIM), "fc_in.bias": (w,), "out.weight": (3 * NUM_JOINTS, w),
              "out.bias": (3 * NUM_JOINTS,)}
    for b in range(blocks):
        for k in (1, 2):
            shapes[f"block{b}.fc{k}.weight"] = (w, w)
            shapes[f"block{b}.fc{k}.bias"] = (w,)
    return shapes


class PhotoLifter:
    """The numpy network. `PhotoLifter.load(path)` checks the file; `__call__(features)` ->
    (B, 24, 3) joints less the pelvis, camera frame, metres. With `mirror` (the default) the
    answer is averaged with the mirrored picture's answer mirrored back, so a mirrored picture
    gets exactly the mirrored joints (docs/training_log.md, "Lifter: mirrored average")."""

    def __init__(self, params, config, mirror=True):
        self.config = config
        self.blocks = int(config["blocks"])
        self.p = params
        self.mirror = mirror

    @classmethod
    def load(cls, path=DEFAULT_LIFTER_WEIGHTS, mirror=True):
        return cls(*load_weights(Path(path), ARCH, expected_shapes), mirror=mirror)

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float64).reshape(-1, INPUT_DIM)
        if not self.mirror:
            return self.network(x)
        both = self.network(np.concatenate([x, mirrored(x)]))    # one pass over the two pictures
        back = both[len(x):, list(MIRROR)] * np.array([-1.0, 1.0, 1.0])
        return 0.5 * (both[:len(x)] + back)

    def network(self, x):
        """The network's own answer (B, 24, 3) for features (B, INPUT_DIM)."""
        x = np.asarray(x, dtype=np.float32).reshape(-1, INPUT_DIM)
        h = np.maximum(linear(x, self.p, "fc_in"), 0.0)
        for b in range(self.blocks):
            inner = np.maximum(linear(h, self.p, f"block{b}.fc1"), 0.0)
            h = h + np.maximum(linear(inner, self.p, f"block{b}.fc2"), 0.0)
        return linear(h, self.p, "out").reshape(len(x), NUM_JOINTS, 3).astype(np.float64)


@functools.lru_cache(maxsize=2)
def load_lifter(path=DEFAULT_LIFTER_WEIGHTS):
    """The shipped (or a given) lifter, loaded once."""
    return PhotoLifter.load(path)


def lift_detection(detection, camera, lifter=None, min_visibility=SEEN_VISIBILITY):
    """(24, 3) a detected person's joints less their pelvis, camera frame, metres, from their
    2D keypoints through `camera` (keypoints with visibility >= min_visibility). SmplIkError
    when fewer than MIN_SEEN keypoints are seen."""
    landmarks = list(KEYPOINT_LANDMARKS)
    xy = np.asarray(detection.image_xy, dtype=np.float64)[landmarks]
    seen = (np.asarray(detection.visibility, dtype=np.float64)[landmarks] >= min_visibility) & np.isfinite(xy).all(1)
    if seen.sum() < MIN_SEEN:
        raise SmplIkError(f"cannot lift this person: only {int(seen.sum())} keypoints were seen "
                          f"(at least {MIN_SEEN} are needed)")
    lifter = load_lifter() if lifter is None else lifter
    return lifter(features(camera.rays(np.where(seen[:, None], xy, 0.0)), seen.astype(np.float64)))[0]

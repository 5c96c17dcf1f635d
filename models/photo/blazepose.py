"""One person's 33 body landmarks in an image: MediaPipe's BlazePose models (a person detector,
then a landmark model on the rotated square around the person it found), run by LiteRT with
the pre- and post-processing of MediaPipe's legacy Pose graph written here in numpy. In tracking
mode (video) each frame's square comes from the landmarks of the frame before, and the detector
runs only when the person was lost."""
from dataclasses import dataclass

import numpy as np

from .runtime import require_packages, shared_model
from .ssd import (AnchorSpec, Decoding, aligned_rect, anchor_centers, crop, decode, full_image_rect,
                  refine_with_heatmap, rotate_xy, to_image, unletterbox, weighted_nms)

DETECTOR = "pose_detection.tflite"
LANDMARK_MODEL = "pose_landmark_full.tflite"
DETECTOR_SIZE = 224
ANCHORS = AnchorSpec(input_size=DETECTOR_SIZE, strides=(8, 16, 32, 32, 32))
DECODING = Decoding(num_keypoints=4, min_score=0.5, nms_iou=0.3)
LANDMARK_SIZE = 256
NUM_LANDMARKS = 33          # the pose's landmarks; the model gives 39 (two after them place the next square)
NUM_OUTPUTS = 39
ALIGN = (33, 34)            # landmarks that place the square on the next frame: hips' centre, size point
ROI_SCALE = 1.25            # the square's side over twice the centre-to-size-point distance
MIN_PRESENCE = 0.5          # the landmark model's person score a pose needs


@dataclass(frozen=True)
class PoseLandmarks:
    """One person's landmarks in an image. xy: (33, 2) normalized to the image (x right, y
    down; outside [0, 1] for parts out of frame); depth: (33,) relative depth on the scale of
    x (smaller is nearer the camera); visibility, presence: (33,) in [0, 1]; world: (33, 3)
    metres, origin between the hips, in the camera's axes (x right, y down, z away from it);
    score: the landmark model's person score; rect: the ssd.Rect the model looked at; align:
    (2, 2) normalized points that place the square on the next frame."""

    xy: np.ndarray
    depth: np.ndarray
    visibility: np.ndarray
    presence: np.ndarray
    world: np.ndarray
    score: float
    rect: object
    align: np.ndarray


def next_square(landmarks, width, height):
    """The ssd.Rect that PoseLandmarks found in a width x height image ask the landmark model to
    look at next (the person's square as their landmarks place it)."""
    return aligned_rect(landmarks.align[0], landmarks.align[1], width, height, ROI_SCALE)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


class PoseLandmarker:
    """Finds one person's PoseLandmarks in (H, W, 3) uint8 RGB images: call it with an image;
    None when nobody is found (the landmark model's person score at most MIN_PRESENCE).
    tracking: frames of one video in order (each square from the frame before; the detector
    runs again only when the person is lost). Not for two threads at once."""

    def __init__(self, tracking=False, what="pose from a photo"):
        require_packages(what)
        self.detector = shared_model(DETECTOR)
        self.landmarks = shared_model(LANDMARK_MODEL)
        self.anchors = anchor_centers(ANCHORS)
        self.tracking = tracking
        self.next_rect = None

    def __call__(self, rgb):
        height, width = rgb.shape[:2]
        rect = self.next_rect if self.tracking and self.next_rect is not None else self.find(rgb)
        found = None if rect is None else self.landmarks_in(rgb, rect)
        if found is not None and found.score <= MIN_PRESENCE:
            found = None
        if self.tracking:
            self.next_rect = None if found is None else next_square(found, width, height)
        return found

    def find(self, rgb):
        """The square the best-scored person found by the detector asks for (an ssd.Rect), or
        None when the detector finds nobody."""
        height, width = rgb.shape[:2]
        tensor = crop(rgb, full_image_rect(width, height), DETECTOR_SIZE, (-1.0, 1.0), border_zero=True)
        with self.detector.lock:
            outputs = self.detector.run(tensor[None])
        boxes = next(o for o in outputs if o.shape[-1] == 4 + 2 * DECODING.num_keypoints)
        scores = next(o for o in outputs if o.shape[-1] == 1)
        found = weighted_nms(decode(boxes[0], scores[0], self.anchors, DETECTOR_SIZE, DECODING), DECODING.nms_iou)
        if not found:
            return None
        keypoints = unletterbox(found[0].keypoints, width, height)
        return aligned_rect(keypoints[0], keypoints[1], width, height, ROI_SCALE)

    def landmarks_in(self, rgb, rect):
        """The PoseLandmarks the landmark model finds in `rect` (an ssd.Rect) of the image,
        whatever its person score."""
        tensor = crop(rgb, rect, LANDMARK_SIZE, (0.0, 1.0), border_zero=False)
        with self.landmarks.lock:
            outputs = self.landmarks.run(tensor[None])
        by_size = {o.size: o for o in outputs}
        raw = by_size[NUM_OUTPUTS * 5].reshape(NUM_OUTPUTS, 5).astype(np.float64)
        score = float(by_size[1].ravel()[0])
        heatmap = next(o for o in outputs if o.ndim == 4 and o.shape[-1] == NUM_OUTPUTS)[0]
        world = by_size[NUM_OUTPUTS * 3].reshape(NUM_OUTPUTS, 3)[:NUM_LANDMARKS]
        xy = refine_with_heatmap(raw[:, :2] / LANDMARK_SIZE, heatmap)
        xy = to_image(xy, rect)
        return PoseLandmarks(xy=xy[:NUM_LANDMARKS], depth=raw[:NUM_LANDMARKS, 2] / LANDMARK_SIZE * rect.size[0],
                             visibility=_sigmoid(raw[:NUM_LANDMARKS, 3]), presence=_sigmoid(raw[:NUM_LANDMARKS, 4]),
                             world=rotate_xy(world, rect.rotation), score=score, rect=rect, align=xy[list(ALIGN)])

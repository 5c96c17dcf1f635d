"""Single-shot detectors and rotated regions of interest, the way MediaPipe's pose and hand
pipelines use them: anchors, box and keypoint decoding, weighted non-maximum suppression, the
rotated square a detection or a set of landmarks asks the landmark model to look at, the crop
of that square as a model's input, and the model's output put back into the image.

Coordinates are normalized to the image ([0, 1] across its width and height, y down) unless a
name says pixels. A Rect is a rotated rectangle in normalized coordinates; its rotation turns
the image's axes to the rectangle's (radians, positive clockwise on screen, as MediaPipe's).
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AnchorSpec:
    """SSD anchors of a detector (MediaPipe's SsdAnchorsCalculator with fixed anchor sizes):
    input_size pixels square; strides one per layer (layers of one stride share a grid); each
    layer puts `per_layer` anchors on each cell of its grid."""

    input_size: int
    strides: tuple
    per_layer: int = 2


@dataclass(frozen=True)
class Decoding:
    """How a detector's raw outputs decode: num_keypoints (x, y) pairs after the box (centre x,
    centre y, width, height), all in input pixels relative to the anchor's centre; scores
    clipped to +-score_clip before the sigmoid; min_score: candidates below it are dropped;
    nms_iou: candidates overlapping a better one by more are merged into it."""

    num_keypoints: int
    min_score: float
    nms_iou: float = 0.3
    score_clip: float = 100.0


@dataclass(frozen=True)
class Candidate:
    """One detection: score in [0, 1]; box (x_min, y_min, x_max, y_max) and keypoints (K, 2),
    normalized to the image."""

    score: float
    box: np.ndarray
    keypoints: np.ndarray


@dataclass(frozen=True)
class Rect:
    """A rotated rectangle: centre (x, y) and size (width, height) normalized to the image,
    rotation in radians (positive turns the rectangle clockwise on screen)."""

    center: tuple
    size: tuple
    rotation: float

    def corners_px(self, width, height):
        """(4, 2) the rectangle's corners in pixels: bottom-left, top-left, top-right,
        bottom-right as the rectangle sees them (its own up is the image's up at rotation 0)."""
        cx, cy = self.center[0] * width, self.center[1] * height
        w, h = self.size[0] * width, self.size[1] * height
        c, s = np.cos(self.rotation), np.sin(self.rotation)
        local = np.array([(-w / 2, h / 2), (-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2)])
        return np.column_stack([cx + c * local[:, 0] - s * local[:, 1], cy + s * local[:, 0] + c * local[:, 1]])


def anchor_centers(spec):
    """(N, 2) the anchors' centres in [0, 1] of the detector's input, in the order its outputs
    list them: layer by layer (layers of one stride together), row by row, `per_layer`
    anchors per layer on each cell."""
    out = []
    strides = list(spec.strides)
    layer = 0
    while layer < len(strides):
        stride, repeats = strides[layer], 0
        while layer < len(strides) and strides[layer] == stride:
            repeats += 1
            layer += 1
        cells = int(np.ceil(spec.input_size / stride))
        ys, xs = np.meshgrid((np.arange(cells) + 0.5) / cells, (np.arange(cells) + 0.5) / cells, indexing="ij")
        grid = np.column_stack([xs.ravel(), ys.ravel()])
        out.append(np.repeat(grid, repeats * spec.per_layer, axis=0))
    return np.concatenate(out)


def decode(raw_boxes, raw_scores, anchors, input_size, decoding):
    """Candidates above decoding.min_score from one image's detector outputs: raw_boxes
    (N, 4 + 2K), raw_scores (N,) or (N, 1), anchors (N, 2) from anchor_centers. Coordinates
    come out normalized to the detector's input square."""
    raw_boxes = np.asarray(raw_boxes, dtype=np.float64).reshape(len(anchors), -1)
    logits = np.clip(np.asarray(raw_scores, dtype=np.float64).reshape(-1), -decoding.score_clip, decoding.score_clip)
    scores = 1.0 / (1.0 + np.exp(-logits))
    keep = np.flatnonzero(scores >= decoding.min_score)
    out = []
    for i in keep:
        r = raw_boxes[i] / input_size
        cx, cy = r[0] + anchors[i, 0], r[1] + anchors[i, 1]
        w, h = r[2], r[3]
        keypoints = r[4:4 + 2 * decoding.num_keypoints].reshape(-1, 2) + anchors[i]
        out.append(Candidate(float(scores[i]), np.array([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]), keypoints))
    return out


def _iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def weighted_nms(candidates, iou_threshold):
    """Candidates merged where they overlap, best score first: each kept one's box and
    keypoints are the score-weighted mean of every remaining candidate that overlaps it by
    more than iou_threshold (itself included); its score stays its own."""
    remaining = sorted(candidates, key=lambda c: c.score, reverse=True)
    out = []
    while remaining:
        best = remaining[0]
        group = [c for c in remaining if _iou(c.box, best.box) > iou_threshold]
        remaining = [c for c in remaining if _iou(c.box, best.box) <= iou_threshold]
        weights = np.array([c.score for c in group])
        box = np.einsum("n,nk->k", weights, np.array([c.box for c in group])) / weights.sum()
        keypoints = np.einsum("n,nkd->kd", weights, np.array([c.keypoints for c in group])) / weights.sum()
        out.append(Candidate(best.score, box, keypoints))
    return out


def letterbox(width, height):
    """(left, top) padding, each side, as a fraction of the square input, when a width x height
    image is fitted into a square keeping its aspect ratio."""
    if width >= height:
        return 0.0, (1.0 - height / width) / 2
    return (1.0 - width / height) / 2, 0.0


def unletterbox(points, width, height):
    """Points (..., 2) normalized to the letterboxed square -> normalized to the image."""
    left, top = letterbox(width, height)
    return (np.asarray(points, dtype=np.float64) - (left, top)) / (1 - 2 * left, 1 - 2 * top)


def aligned_rect(center, end, width, height, scale, target_angle=np.pi / 2):
    """The square region a detector's two alignment keypoints ask for (MediaPipe's
    AlignmentPointsRectsCalculator, then RectTransformationCalculator with square_long):
    centred on `center`, 2 x |end - center| a side in pixels times `scale`, turned so that
    `end` is straight above `center` (target_angle from the image's +x axis, y up).
    center, end: normalized (x, y) in an image of width x height pixels. Returns a Rect."""
    x0, y0 = center[0] * width, center[1] * height
    x1, y1 = end[0] * width, end[1] * height
    side = 2.0 * float(np.hypot(x1 - x0, y1 - y0)) * scale
    rotation = target_angle - np.arctan2(-(y1 - y0), x1 - x0)
    rotation = rotation - 2 * np.pi * np.floor((rotation + np.pi) / (2 * np.pi))
    return Rect(center=(float(center[0]), float(center[1])), size=(side / width, side / height),
                rotation=float(rotation))


def crop(rgb, rect, size, value_range, border_zero):
    """The model input for `rect` of an (H, W, 3) uint8 image: (size, size, 3) float32 with
    values mapped from [0, 255] to value_range (lo, hi), bilinear, the rect's own up as the
    crop's up. Outside the image: black (border_zero) or the nearest edge pixel repeated."""
    import cv2

    height, width = rgb.shape[:2]
    source = rect.corners_px(width, height).astype(np.float32)
    target = np.array([(0, size), (0, 0), (size, 0), (size, size)], dtype=np.float32)
    matrix = cv2.getPerspectiveTransform(source, target)
    border = cv2.BORDER_CONSTANT if border_zero else cv2.BORDER_REPLICATE
    warped = cv2.warpPerspective(rgb, matrix, (size, size), flags=cv2.INTER_LINEAR, borderMode=border, borderValue=0)
    lo, hi = value_range
    return warped.astype(np.float32) * np.float32((hi - lo) / 255.0) + np.float32(lo)


def full_image_rect(width, height):
    """The Rect of a whole width x height image, padded to a square (the letterbox)."""
    side = max(width, height)
    return Rect(center=(0.5, 0.5), size=(side / width, side / height), rotation=0.0)


def to_image(points, rect):
    """Points (..., 2) normalized to a crop of `rect` -> normalized to the image."""
    p = np.asarray(points, dtype=np.float64) - 0.5
    c, s = np.cos(rect.rotation), np.sin(rect.rotation)
    x = (c * p[..., 0] - s * p[..., 1]) * rect.size[0] + rect.center[0]
    y = (s * p[..., 0] + c * p[..., 1]) * rect.size[1] + rect.center[1]
    return np.stack([x, y], axis=-1)


def rotate_xy(points, rotation):
    """Points (..., 3) with x and y turned by `rotation` (radians, as a Rect's) and z kept:
    a model's 3D output in the crop's axes -> the image's."""
    p = np.asarray(points, dtype=np.float64)
    c, s = np.cos(rotation), np.sin(rotation)
    return np.stack([c * p[..., 0] - s * p[..., 1], s * p[..., 0] + c * p[..., 1], p[..., 2]], axis=-1)


def refine_with_heatmap(points, heatmap, kernel=7, min_confidence=0.5):
    """Points (K, 2) normalized to a crop, moved to the sigmoid-weighted mean of their
    heatmap's (h, w, K) cells in a kernel x kernel window around them (the window cut at the
    heatmap's edges), where that window's strongest cell reaches min_confidence (MediaPipe's
    RefineLandmarksFromHeatmapCalculator, its edge cases included)."""
    out = np.array(points, dtype=np.float64)
    rows, cols, count = heatmap.shape
    half = (kernel - 1) // 2
    col = np.trunc(out[:, 0] * cols).astype(int)        # truncated toward zero, as MediaPipe's
    row = np.trunc(out[:, 1] * rows).astype(int)
    inside = (col >= 0) & (col < cols) & (row >= 0)
    offsets = np.arange(-half, half + 1)
    r = np.clip(row, 0, rows + half)[:, None] + offsets          # (K, kernel) window rows
    c = np.clip(col, 0, cols - 1)[:, None] + offsets
    padded = np.pad(heatmap.astype(np.float64), ((half, 2 * half + 1), (half, half), (0, 0)), constant_values=-np.inf)
    logits = padded[r[:, :, None] + half, c[:, None, :] + half, np.arange(count)[:, None, None]]   # (K, k, k)
    conf = 1.0 / (1.0 + np.exp(-logits))                         # 0 outside the heatmap
    total = conf.sum(axis=(1, 2))
    refine = inside & (conf.max(axis=(1, 2)) >= min_confidence) & (total > 0)
    safe = np.where(total > 0, total, 1.0)
    x = np.einsum("kij,kj->k", conf, c.astype(np.float64)) / safe / cols
    y = np.einsum("kij,ki->k", conf, r.astype(np.float64)) / safe / rows
    out[refine] = np.column_stack([x, y])[refine]
    return out

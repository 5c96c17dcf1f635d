"""The detector benchmark: the LiteRT detector against MediaPipe 0.10.21's legacy Pose on the same photos and video."""
import numpy as np

from models.body.model import load_body_model
from models.core.errors import SmplIkError
from models.core.files import atomic_path
from models.photo.blazepose import PoseLandmarker, PoseLandmarks
from models.photo.detect import box_iou, detect_people, read_image
from models.photo.tracking import DETECT_LONG_SIDE

from .photo_labels import read_labels
from .photo_run import MAX_PEOPLE, PhotoSetup, run_frames
from .photo_score import method_summary
from .timing import timed

SAME_PERSON_IOU = 0.5    # two detectors' boxes this much overlapping are the same person
NAMES = ("legacy", "litert")


class LegacyLandmarker:
    """MediaPipe 0.10.21's legacy Pose solution (model complexity 1, no smoothing) giving
    PoseLandmarks, as the detector before this one called it."""

    def __init__(self, tracking=False):
        import mediapipe as mp

        self.pose = mp.solutions.pose.Pose(static_image_mode=not tracking, model_complexity=1,
                                           smooth_landmarks=False)

    def __call__(self, rgb):
        result = self.pose.process(rgb)
        if result.pose_landmarks is None or result.pose_world_landmarks is None:
            return None
        marks = result.pose_landmarks.landmark
        return PoseLandmarks(xy=np.array([(p.x, p.y) for p in marks]), depth=np.array([p.z for p in marks]),
                             visibility=np.array([p.visibility for p in marks]),
                             presence=np.array([p.presence for p in marks]),
                             world=np.array([(p.x, p.y, p.z) for p in result.pose_world_landmarks.landmark]),
                             score=1.0, rect=None, align=None)


def matched_people(old, new):
    """[(old Detection, new Detection or None)] greedily by box IoU, and the new ones unmatched."""
    pairs, free = [], list(new)
    for person in old:
        best = max(free, key=lambda d: box_iou(d.bbox, person.bbox), default=None)
        if best is not None and box_iou(best.bbox, person.bbox) >= SAME_PERSON_IOU:
            free.remove(best)
            pairs.append((person, best))
        else:
            pairs.append((person, None))
    return pairs, free


def relative_gap(old_xy, new_xy, bbox):
    """Median keypoint distance between two detections over the first's box diagonal."""
    diagonal = float(np.hypot(bbox[2] - bbox[0], bbox[3] - bbox[1]))
    return float(np.median(np.linalg.norm(np.asarray(old_xy) - np.asarray(new_xy), axis=1))) / max(diagonal, 1.0)


def compare_photos(paths, landmarkers):
    """The photos section (scripts/benchmark_detector.py --help) and the per-photo timings."""
    per_photo, gaps, seconds = [], [], {n: [] for n in NAMES}
    for path in paths:
        rgb = read_image(path)
        found = {n: detect_people(rgb, max_people=MAX_PEOPLE, landmarker=landmarkers[n]) for n in NAMES}
        for n in NAMES:
            seconds[n].append(timed(lambda: detect_people(rgb, max_people=3, landmarker=landmarkers[n]))[1])
        pairs, extra = matched_people(found["legacy"], found["litert"])
        person_gaps = [relative_gap(o.image_xy, m.image_xy, o.bbox) for o, m in pairs if m is not None]
        gaps += person_gaps
        per_photo.append({"image": path.name, "legacy": len(found["legacy"]), "litert": len(found["litert"]),
                          "missed": sum(m is None for _, m in pairs), "extra": len(extra),
                          "keypoints_rel": person_gaps})
    summary = {"photos": len(per_photo), **{f"people_{n}": sum(p[n] for p in per_photo) for n in NAMES},
               "missed": sum(p["missed"] for p in per_photo), "extra": sum(p["extra"] for p in per_photo),
               "keypoints_rel_median": float(np.median(gaps)) if gaps else None,
               "keypoints_rel_p90": float(np.percentile(gaps, 90)) if gaps else None,
               "keypoints_rel_max": float(np.max(gaps)) if gaps else None, "per_photo": per_photo}
    return summary, seconds


def compare_video(path, frames):
    """Per-frame seconds of each tracker on a video's first `frames` frames and their keypoints'
    agreement ({name: [seconds]}, [relative gaps], frames where only one found the person, frames
    read). Raises SmplIkError when no frame can be read."""
    import cv2

    capture = cv2.VideoCapture(str(path))
    images = []
    while len(images) < frames:
        ok, bgr = capture.read()
        if not ok:
            break
        factor = min(1.0, DETECT_LONG_SIDE / max(bgr.shape[:2]))
        if factor < 1.0:
            bgr = cv2.resize(bgr, (round(bgr.shape[1] * factor), round(bgr.shape[0] * factor)),
                             interpolation=cv2.INTER_AREA)
        images.append(np.ascontiguousarray(bgr[..., ::-1]))
    capture.release()
    if not images:
        raise SmplIkError(f"{path}: no frames read")
    trackers = {"legacy": LegacyLandmarker(tracking=True), "litert": PoseLandmarker(tracking=True)}
    seconds, gaps, disagree = {n: [] for n in NAMES}, [], 0
    for rgb in images:
        out = {}
        for n in NAMES:
            out[n], dt = timed(lambda: trackers[n](rgb))
            seconds[n].append(dt)
        if (out["legacy"] is None) != (out["litert"] is None):
            disagree += 1
        elif out["legacy"] is not None:
            size = np.array(rgb.shape[1::-1], dtype=np.float64)
            old, new = out["legacy"].xy * size, out["litert"].xy * size
            lo, hi = old.min(0), old.max(0)
            gaps.append(relative_gap(old, new, (*lo, *hi)))
    return seconds, gaps, disagree, len(images)


def compare_sets(folders, landmarkers):
    """The sets section: per labelled folder and detector (landmarkers: {name: landmarker}),
    the photo benchmark's frames, people found, pck2d_gt of the fit and of the keypoints, and
    the fit's MPJPE and PA-MPJPE."""
    body = load_body_model()
    out = {}
    for folder in folders:
        frames = read_labels(folder)
        out[folder.name] = {}
        for n in NAMES:
            per_frame = run_frames(frames, PhotoSetup.of(body, landmarker=landmarkers[n]))
            fit, own = method_summary(per_frame, "fit"), method_summary(per_frame, "mediapipe_raw")
            out[folder.name][n] = {"frames": len(per_frame), "found": sum(f["found"] for f in per_frame),
                                   "pck2d_gt_fit": fit.get("pck2d_gt"), "pck2d_gt_keypoints": own.get("pck2d_gt"),
                                   "mpjpe_mm_fit": fit.get("mpjpe_mm"), "pa_mpjpe_mm_fit": fit.get("pa_mpjpe_mm")}
    return out


def write_reference(path, photos):
    """The legacy detector's single-pass landmarks of each photo (scripts/benchmark_detector.py --help)."""
    legacy = LegacyLandmarker()
    names, xy, world, visibility = [], [], [], []
    for photo in photos:
        found = legacy(read_image(photo))
        if found is None:
            continue
        names.append(f"{photo.parent.name}/{photo.name}")
        xy.append(found.xy), world.append(found.world), visibility.append(found.visibility)
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, images=np.array(names), xy=np.array(xy), world=np.array(world),
                            visibility=np.array(visibility))
    return len(names)


def median_ms(seconds):
    """The median of `seconds` in milliseconds, rounded to 0.01."""
    return round(1000 * float(np.median(seconds)), 2)

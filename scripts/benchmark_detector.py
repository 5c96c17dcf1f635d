"""Benchmark the photo detector (models/photo/blazepose.py, MediaPipe's models on LiteRT) against
the one it replaced, MediaPipe 0.10.21's legacy Pose solution, in one run on the same images.

    python scripts/benchmark_detector.py --json OUT [--data DIR ...] [--photos IMAGE ...]
        [--video FILE] [--frames N] [--reference OUT.npz]

Needs mediapipe 0.10.21, which installs on Python 3.11 only, beside the photo packages:
    python3.11 -m venv /tmp/legacy && /tmp/legacy/bin/pip install -r requirements-py311.txt
    /tmp/legacy/bin/pip install --no-deps -r requirements-photo.txt mediapipe==0.10.21 absl-py \\
        attrs flatbuffers "protobuf<5" matplotlib contourpy cycler fonttools kiwisolver \\
        packaging pillow pyparsing python-dateutil
Both detectors run the same images in the same process, one after the other per image.

- sets: for each --data folder (labelled photos, laid out as scripts/benchmark_photo.py reads
  them), benchmark_photo's run with each detector: people found, the share of labelled joints
  within 0.1 of the box diagonal (pck2d_gt) for the fit and for the detector's own keypoints,
  and the fit's MPJPE and PA-MPJPE where the labels have 3D.
- photos: every image of the sets and --photos, searched as Pose from Photo's All People
  searches (detect_people, up to 10 people): people found by each, matched by box IoU >= 0.5;
  for each matched person the median over the 33 keypoints of their distance between the two
  detectors, over the legacy person's box diagonal (keypoints_rel: the median over people,
  and p90, max).
- speed: seconds per photo for Pose from Photo's search of one person (detect_people with
  up to 3 people), median over the photos; seconds per video frame for the tracker on --video
  (--frames frames, scaled as models/photo/video.py scales them), median; and the keypoints'
  agreement over those frames.
--reference writes the legacy detector's single-pass landmarks of every photo (image file
names relative to their folder's parent) for tests/core/test_blazepose.py.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import benchmark_photo as bp  # noqa: E402
from models.body.model import load_body_model  # noqa: E402
from models.core.files import atomic_path, write_json  # noqa: E402
from models.photo.blazepose import PoseLandmarker, PoseLandmarks  # noqa: E402
from models.photo.detect import box_iou, detect_people, read_image  # noqa: E402
from models.photo.video import DETECT_LONG_SIDE  # noqa: E402

SAME_PERSON_IOU = 0.5
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


def timed(call):
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start


def compare_photos(paths, landmarkers):
    """The photos section (see the module docstring) and the per-photo timings."""
    per_photo, gaps, seconds = [], [], {n: [] for n in NAMES}
    for path in paths:
        rgb = read_image(path)
        found = {n: detect_people(rgb, max_people=bp.MAX_PEOPLE, landmarker=landmarkers[n]) for n in NAMES}
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
    agreement ({name: [seconds]}, [relative gaps], frames where only one found the person)."""
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
        raise SystemExit(f"{path}: no frames read")
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
    body = load_body_model()
    rest = body.rest_joints(np.zeros(10))
    offsets = bp.head_offsets(body, rest)
    out = {}
    for folder in folders:
        frames = bp.read_labels(folder)
        out[folder.name] = {}
        for n in NAMES:
            per_frame = bp.run_frames(frames, body, rest, offsets, landmarker=landmarkers[n])
            fit, own = bp.summary(per_frame, "fit"), bp.summary(per_frame, "mediapipe_raw")
            out[folder.name][n] = {"frames": len(per_frame), "found": sum(f["found"] for f in per_frame),
                                   "pck2d_gt_fit": fit.get("pck2d_gt"), "pck2d_gt_keypoints": own.get("pck2d_gt"),
                                   "mpjpe_mm_fit": fit.get("mpjpe_mm"), "pa_mpjpe_mm_fit": fit.get("pa_mpjpe_mm")}
    return out


def write_reference(path, photos):
    """The legacy detector's single-pass landmarks of each photo (see the module docstring)."""
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


def median_ms(values):
    return round(1000 * float(np.median(values)), 2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--data", type=Path, nargs="*", default=[], help="labelled photo folders")
    ap.add_argument("--photos", type=Path, nargs="*", default=[], help="more photos")
    ap.add_argument("--video", type=Path, default=None, help="a video for the tracker's speed and agreement")
    ap.add_argument("--frames", type=int, default=120, help="frames of --video (default 120)")
    ap.add_argument("--reference", type=Path, default=None, help="write the legacy landmarks of the photos here")
    args = ap.parse_args(argv)
    try:
        landmarkers = {"legacy": LegacyLandmarker(), "litert": PoseLandmarker()}
    except ImportError:
        raise SystemExit("this benchmark needs mediapipe 0.10.21 (see --help)") from None
    photos = list(args.photos)
    for folder in args.data:
        photos += sorted({f.image for f in bp.read_labels(folder)})
    report = {"data": [str(d) for d in args.data], "sets": compare_sets(args.data, landmarkers)}
    report["photos"], seconds = compare_photos(photos, landmarkers)
    report["speed"] = {"photo_ms": {n: median_ms(seconds[n]) for n in NAMES}, "photos": len(photos)}
    report["speed"]["photo_ratio"] = round(float(np.median(seconds["litert"]) / np.median(seconds["legacy"])), 3)
    if args.video is not None:
        frame_s, gaps, disagree, count = compare_video(args.video, args.frames)
        report["speed"].update(video=str(args.video), frames=count,
                               frame_ms={n: median_ms(frame_s[n]) for n in NAMES},
                               frame_ratio=round(float(np.median(frame_s["litert"]) / np.median(frame_s["legacy"])), 3))
        report["video"] = {"frames": count, "found_by_one_only": disagree,
                           "keypoints_rel_median": float(np.median(gaps)) if gaps else None,
                           "keypoints_rel_p90": float(np.percentile(gaps, 90)) if gaps else None}
    report = bp.rounded(report)
    for name, figures in report["sets"].items():
        print(f"{name}:")
        for n in NAMES:
            print(f"  {n:7}" + "  ".join(f"{k} {v}" for k, v in figures[n].items()))
    p = report["photos"]
    print(f"photos {p['photos']}: people legacy {p['people_legacy']}, litert {p['people_litert']}, missed "
          f"{p['missed']}, extra {p['extra']}; keypoints apart (of the box diagonal) median "
          f"{p['keypoints_rel_median']}, p90 {p['keypoints_rel_p90']}, max {p['keypoints_rel_max']}")
    print(f"speed: {report['speed']}")
    if "video" in report:
        print(f"video: {report['video']}")
    if args.reference is not None:
        print(f"wrote {write_reference(args.reference, photos)} photos' landmarks to {args.reference}")
    write_json(args.json, report)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

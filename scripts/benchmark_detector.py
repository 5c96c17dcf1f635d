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
  them), the photo benchmark's run (benchmarks/photo_run.py) with each detector: people found,
  the share of labelled joints within 0.1 of the box diagonal (pck2d_gt) for the fit and for
  the detector's own keypoints, and the fit's MPJPE and PA-MPJPE where the labels have 3D.
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
from pathlib import Path

import numpy as np

from benchmarks.detector import (NAMES, LegacyLandmarker, compare_photos, compare_sets, compare_video, median_ms,
                                 write_reference)
from benchmarks.photo_labels import read_labels
from benchmarks.report import rounded
from models.core.errors import SmplIkError
from models.core.files import write_json
from models.photo.blazepose import PoseLandmarker


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
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
    try:
        for folder in args.data:
            photos += sorted({f.image for f in read_labels(folder)})
        sets = compare_sets(args.data, landmarkers)
    except SmplIkError as exc:
        raise SystemExit(str(exc)) from None
    report = {"data": [str(d) for d in args.data], "sets": sets}
    report["photos"], seconds = compare_photos(photos, landmarkers)
    report["speed"] = {"photo_ms": {n: median_ms(seconds[n]) for n in NAMES}, "photos": len(photos)}
    report["speed"]["photo_ratio"] = round(float(np.median(seconds["litert"]) / np.median(seconds["legacy"])), 3)
    if args.video is not None:
        try:
            frame_s, gaps, disagree, count = compare_video(args.video, args.frames)
        except SmplIkError as exc:
            raise SystemExit(str(exc)) from None
        report["speed"].update(video=str(args.video), frames=count,
                               frame_ms={n: median_ms(frame_s[n]) for n in NAMES},
                               frame_ratio=round(float(np.median(frame_s["litert"]) / np.median(frame_s["legacy"])), 3))
        report["video"] = {"frames": count, "found_by_one_only": disagree,
                           "keypoints_rel_median": float(np.median(gaps)) if gaps else None,
                           "keypoints_rel_p90": float(np.percentile(gaps, 90)) if gaps else None}
    report = rounded(report)
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

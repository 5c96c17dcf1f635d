"""Benchmark pose from a photo against labelled frames: the camera-matched fit, today's lift,
the lifter alone and MediaPipe's own 3D landmarks, in one run over the same frames.

    python scripts/benchmark_photo.py --data DIR --json OUT [--max-frames N]

DIR holds images and their labels in one of the layouts ../shared/data/images/labelled/README.md
describes:
  labels.json     (the 3dhp/ set) per frame `image`, `joints_3d_camera_m` (OpenCV camera axes:
                  x right, y down, z forward; optional), `joints_2d_px`, `visible_3d` /
                  `visible_2d` (all visible when absent) and the person's box `bbox_center_px`,
                  `bbox_scale_200px` (a square, 200 x scale pixels a side), with the joints named
                  in `joint_names` in any order; names this script does not use are ignored;
                  optionally `up_camera`, the floor's up (3 numbers, the same axes as the joints)
  keypoints.json  2D labels only: COCO's format (the coco/ set; one frame per annotated person
                  with any keypoint labelled, hidden ones (v = 1) counted as placed, the box
                  COCO's `bbox`) or MPII's list (the mpii/ set; the box as labels.json's, from
                  `center` and `scale`)
A frame is one labelled person. The labels' camera intrinsics are never used: the fit gets the
camera a user would get, models.photo.camera.camera_for_image (default_camera where that is
not there yet). --max-frames N takes N frames spread evenly over the file's order (all).

Each image is read with OpenCV and its people found by the detector (models.photo.detect, up to
MAX_PEOPLE (benchmarks/photo_run.py) as Pose from Photo's All People looks for); each labelled person is matched to one
detection, pairs taken by the largest intersection over union of their boxes first, found
when that is at least MIN_IOU. A frame without one counts in `frames` but not in `found`;
every figure is over the found frames.

Methods (all in the camera's axes: +X right, +Y up, +Z toward the camera; the labels' OpenCV
coordinates (x, y, z) become (x, -y, -z)):
  fit            models.photo.fit.fit_to_image(detection, rest, camera, body): the body fitted
                 to the 2D keypoints through the camera (skipped, with the reason, when it
                 fails on every found frame for one reason)
  lift           models.photo.start.pose_from_detection: today's pose, MediaPipe's 3D directions
                 on the body (its joints by forward kinematics; it stands at the origin)
  lifter         models.photo.lifter.lift_detection: the joints the lifter answers from the 2D
                 keypoints alone, through the same camera (no head points: no head figure)
  mediapipe_raw  MediaPipe's world landmarks as SMPL joints (models.photo.targets.smpl_targets: the
                 limb joints are the landmarks, the neck comes from the shoulders and hips);
                 in 2D its keypoints themselves (no neck: MediaPipe has none), the detector's
                 own figure beside the fit's
The body is the open neutral body at zero betas.

Joints compared: shoulders, elbows, wrists, knees, ankles and the neck (SMPL's neck joint
against the labelled neck). The dataset's hips sit wider and higher than SMPL's, so they are
not compared; both sides are aligned on the midpoint of their hips instead (the labelled hips
against SMPL's hip joints), which is what "pelvis-aligned" means here. Only joints visible in
the labels (visible_3d, or visible_2d for the 2D figure) count. Figures per method:
  mpjpe_mm       mean distance of the compared joints after aligning the hip midpoints (mm)
  pa_mpjpe_mm    the same after the best similarity transform of the compared joints (mm)
  limb_deg       mean angle between the method's and the labels' upper arms (shoulder->elbow),
                 forearms (elbow->wrist), thighs (hip->knee) and shins (knee->ankle), both
                 sides, in the camera's axes with no alignment (every method is turned as the
                 camera sees the person); limb_deg_by_limb splits it by limb. Thighs start at
                 the hips, so the labelled hips' offset enters them (a few degrees)
  pck2d_gt       (fit, lift) fraction of the compared joints whose projection lies within 0.1
                 of the labels' box diagonal (side x sqrt 2) of their labelled 2D place. The fit
                 is projected through its own camera; the lift, which stands at the origin,
                 through the fit's camera after moving its pelvis onto the fit's pelvis (no
                 figure without a fit); err2d_px beside it, their mean distance in pixels
                 (the labels' box is padded, in 3DHP about 1.2 times the joints' extent, so PCK@0.1
                 is lenient; COCO's boxes are tight, so there it is strict)
  overlay_mp     (fit) the issue's overlay figure: the share of MediaPipe's keypoints of the
                 limbs and hips (models.photo.keypoints.DIRECT) that it marks visible (VISIBLE) lying
                 within OVERLAY of the detection's box diagonal of the fitted joint's projection
  head_deg       (fit, lift) angle between the head's forward direction and the labels'.
                 Forward is built the same way on both sides from the points the labels have:
                 with a nose and both ears, from the ears' midpoint to the nose ("face"); else,
                 with the head top, neck and both shoulders, cross(left - right shoulder,
                 head top - neck) ("crown": perpendicular to the head's axis, level with the
                 shoulders, so it sees the head bow, lift and tilt, not turn left or right). On
                 SMPL the head top is the crown vertex (the rest mesh's highest point), the nose
                 and ears the open body's landmarks, each carried by the head joint's rotation.
                 The labels' `head` joint is not used: in 3DHP it lies on the neck->head-top
                 chain, 1-5 cm off the line, so the plane it makes with them is ill-defined.
                 mediapipe_raw has no head top, so no crown figure
  up_deg         (fit, where the labels have `up_camera`) angle between the floor's up as Pose
                 from Photo takes it from the person (models.photo.scene.photo_up: how the
                 camera's tilt is found) and the labelled up
Each figure is the mean over frames of the per-frame figure (frames where a method fails or a
figure cannot be measured are left out of that figure; `frames` per method counts the frames
it scored). Writes JSON {"frames": N, "found": M, "data": DIR, "camera": ..., "methods": {NAME:
{...}}, "per_frame": [...]} (with --lifter FILE also "lifter": FILE, the weights the fit and
the lifter row used) and prints a table.
"""
import os

os.environ["OMP_NUM_THREADS"] = "1"   # the machines these run on are shared
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse
from pathlib import Path

from benchmarks.photo_labels import read_labels, spread_frames
from benchmarks.photo_run import photo_report
from benchmarks.photo_score import FIGURES
from models.body.model import load_body_model
from models.core.errors import SmplIkError
from models.core.files import write_json
from models.photo.lifter import PhotoLifter


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="folder of images and labels.json (or keypoints.json)")
    ap.add_argument("--json", type=Path, required=True, help="JSON output")
    ap.add_argument("--max-frames", type=int, default=None, help="frames spread over the labels (default all)")
    ap.add_argument("--lifter", type=Path, default=None,
                    help="lifter weights (scripts/train_lifter.py) for the fit and the lifter rows "
                         "(default the shipped ones)")
    args = ap.parse_args(argv)
    lifter = None
    if args.lifter is not None:
        try:
            lifter = PhotoLifter.load(args.lifter)
        except SmplIkError as exc:
            raise SystemExit(str(exc))
    try:
        frames = spread_frames(read_labels(args.data), args.max_frames)
    except SmplIkError as exc:
        raise SystemExit(str(exc)) from None
    report = photo_report(frames, load_body_model(), args.data, lifter, args.lifter)
    print(f"{report['found']} of {report['frames']} labelled frames found in {args.data}")
    print(f"{'method':15}{'frames':>8}" + "".join(f"{c:>13}" for c in FIGURES))
    for name, r in report["methods"].items():
        cells = "".join(f"{r[c]:>13.3f}" if r.get(c) is not None else f"{'':>13}" for c in FIGURES)
        print(f"{name:15}{r['frames']:>8}{cells}" + (f"  ({r['skipped']})" if "skipped" in r else ""))
    write_json(args.json, report)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""Render motion capture as labelled photos for scripts/benchmark_photo.py: frames of BVH clips
on the open body (scripts/render_motion_video.py), each a PNG, with a labels.json laid out as
../shared/data/images/labelled/README.md says for the 3dhp/ set.

    python scripts/render_photo_set.py CLIP.bvh [CLIP.bvh ...] --out DIR [--frames 12]
        [--fps 2] [--start 30] [--resolution 1280 720] [--engine WORKBENCH|CYCLES|EEVEE]
        [--azimuth 30 [DEG ...]]

Each clip gives --frames pictures at about --fps from source frame --start (a few a second:
poses that differ), seen as render_motion_video sees them: the camera still, tilted down, from
three-quarters (--azimuth degrees to the body's left of its mean facing; with several, every
clip from each, the pictures then named <clip>_az<degrees>_<n>.png), with the lens
models.photo.camera.default_camera assumes for the picture's size. The labels per picture
(`image` its file name): `joints_3d_camera_m` and `joints_2d_px` of SMPL's 24 joints (their
names) and the open body's nose, left_ear, right_ear (its face landmarks) and head_top (the
rest mesh's highest vertex), in OpenCV's camera axes (x right, y down, z forward); the
person's box `bbox_center_px`, `bbox_scale_200px`: a square 1.2 times the labelled points'
larger extent, as 3DHP's boxes are; `up_camera` the floor's up (unit, the same axes). The
rendered videos are kept in DIR/clips (a rerun with the same options reuses them).
Every file is written whole or not at all, labels.json last. A clip that cannot be read or
rendered is named and left out; the exit status is then 1.

Measure with: python scripts/benchmark_photo.py --data DIR --json OUT
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from models.core.errors import SmplIkError  # noqa: E402
from models.core.files import atomic_path  # noqa: E402
from models.core.skeleton import JOINT_NAMES  # noqa: E402

HEAD_POINTS = {"nose": "nose", "left_ear": "lear", "right_ear": "rear"}   # label -> body landmark
BOX_PAD = 1.2
OPENCV = np.array([1.0, -1.0, -1.0])    # the camera's axes (+Y up, +Z back) <-> OpenCV's


def label_names():
    return list(JOINT_NAMES) + list(HEAD_POINTS) + ["head_top"]


def frame_labels(truth, t, body, crown):
    """(3D points (N, 3) in the camera's frame, their pixels (N, 2)) of frame t of a
    ClipTruth: the joints, then HEAD_POINTS and the crown vertex of the body posed."""
    verts = body.forward(truth.betas, rel_rotmats=truth.local_rot[t], trans=truth.trans[t]).vertices
    face = [body.landmarks[v] for v in HEAD_POINTS.values()]
    points = np.concatenate([truth.joints[t], verts[face + [crown]]])
    return points, truth.camera.project(points)


def render_set(clips, out, options, azimuths=None):
    """Render `clips` (paths) into the folder `out`, seen from each of `azimuths` (degrees;
    None: options.azimuth alone, the pictures named <clip>_<n>.png; several: each view's named
    <clip>_az<degrees>_<n>.png); returns (labels' frames, failures)."""
    from dataclasses import replace

    import cv2
    from render_motion_video import render_clip

    from models.body.model import load_body_model

    body = load_body_model()
    missing = [v for v in HEAD_POINTS.values() if v not in body.landmarks]
    if missing:
        raise SmplIkError(f"the open body has no {', '.join(missing)} landmark")
    crown = int(np.argmax(body.v_template[:, 1]))
    frames, failures = [], []
    views = [(clip, None) for clip in clips] if azimuths is None else \
        [(clip, float(a)) for clip in clips for a in azimuths]
    for clip, azimuth in views:
        clip = Path(clip)
        stem = clip.stem if azimuth is None else f"{clip.stem}_az{azimuth:g}"
        try:
            seen = options if azimuth is None else replace(options, azimuth=azimuth)
            truth = render_clip(clip, out / "clips" / f"{stem}.mp4", seen)
            video = cv2.VideoCapture(str(truth.video))
            try:
                for t in range(len(truth.frames)):
                    ok, image = video.read()
                    if not ok:
                        raise SmplIkError(f"{truth.video}: frame {t} cannot be read back")
                    points, pixels = frame_labels(truth, t, body, crown)
                    name = f"{stem}_{t:03d}.png"
                    with atomic_path(out / name) as partial:
                        if not cv2.imwrite(partial, image):
                            raise SmplIkError(f"{out / name}: cannot be written")
                    lo, hi = pixels.min(0), pixels.max(0)
                    frames.append({"image": name, "joints_3d_camera_m": (points * OPENCV).tolist(),
                                   "joints_2d_px": pixels.tolist(), "bbox_center_px": ((lo + hi) / 2).tolist(),
                                   "bbox_scale_200px": float(BOX_PAD * (hi - lo).max() / 200.0),
                                   "up_camera": (truth.up * OPENCV).tolist()})
            finally:
                video.release()
        except (SmplIkError, OSError, ValueError) as exc:
            failures.append(str(exc) if str(clip) in str(exc) else f"{clip}: {exc}")
    return frames, failures


def main(argv=None):
    from render_motion_video import AZIMUTH_DEG, ENGINES, RenderOptions

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("clips", nargs="+", type=Path, help="BVH clips")
    ap.add_argument("--out", type=Path, required=True, help="the folder to write (pictures, labels.json)")
    ap.add_argument("--frames", type=int, default=12, help="pictures of each clip (default 12)")
    ap.add_argument("--fps", type=float, default=2.0, help="about this many pictures a second of motion (default 2)")
    ap.add_argument("--start", type=int, default=30, help="first source frame (default 30)")
    ap.add_argument("--resolution", type=int, nargs=2, default=(1280, 720), metavar=("W", "H"))
    ap.add_argument("--engine", choices=sorted(ENGINES), default="WORKBENCH", help="render engine (default WORKBENCH)")
    ap.add_argument("--azimuth", type=float, nargs="+", default=[AZIMUTH_DEG], metavar="DEG",
                    help=f"degrees to the body's left of its mean facing the camera stands; several: every clip "
                         f"from each (default {AZIMUTH_DEG:g})")
    args = ap.parse_args(argv)
    options = RenderOptions(start=args.start, frames=args.frames, fps=args.fps,
                            resolution=tuple(args.resolution), engine=args.engine, azimuth=args.azimuth[0])
    frames, failures = render_set(args.clips, args.out, options, args.azimuth if len(args.azimuth) > 1 else None)
    for failure in failures:
        print(failure)
    if frames:
        with atomic_path(args.out / "labels.json") as partial:
            Path(partial).write_text(json.dumps({"joint_names": label_names(), "frames": frames}))
    print(f"{len(frames)} pictures of {len(args.clips) - len(failures)} of {len(args.clips)} clips -> {args.out}")
    return 1 if failures or not frames else 0


if __name__ == "__main__":
    sys.exit(main())

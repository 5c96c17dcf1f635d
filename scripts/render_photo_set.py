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

from benchmarks.photo_set import label_names, render_set
from benchmarks.render import AZIMUTH_DEG, ENGINES, RenderOptions
from models.core.files import atomic_path


def main(argv=None):
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

"""Turn sequences of 3D joint positions into SMPL motion: one .npz (or .bvh) per input file.

    python scripts/joints_to_smpl.py INPUT... --out DIR [options]

INPUT is a joint file (.npy, .npz, .csv or .json), a folder (searched recursively for them)
or a glob ("captures/**/*.npy"). The joints are SMPL's 24, Human3.6M's 17, COCO's 17 (3D),
MediaPipe's 33 world landmarks or OpenPose's BODY_25, named with --layout or found from the
joint count (17: COCO when joints 1-4 sit by joint 0 like eyes and ears by the nose, else
Human3.6M). Numbers are metres unless --units says otherwise; Y is up (MediaPipe: its own
y-down, image-style axes) unless --up-axis says otherwise. The body's shape is fitted to the
figure's bone lengths; all 24 SMPL joints are solved by IK-GAT (positions come back exact,
noisy ones corrected: --denoise), other layouts by SMPL-IK with a soft pin on each joint the
layout has, refined. A joint missing from a frame is NaN in the file (nan in a .csv, NaN or
null in a .json): SMPL-IK solves that frame from the joints it has, a gap of up to --fill-gaps
seconds pinned lightly on a curve through the frames either side; frames with no joint at all
move from the pose before them to the pose after (at an end: keep the nearest).

For X.npy it writes DIR/X.npz (folders keep their sub-folders) through the project's motion
writer (models.motion.amass.write_motion_npz: poses (T, 72), trans, betas, gender,
mocap_framerate, up_axis "Y", ...) with source, layout, method, height_m and joint_error_mm
(the mean distance in mm between the file's joints and the solved body's) beside them; or,
with --format bvh, DIR/X.bvh on SMPL's skeleton (centimetres). A figure whose height is
implausible (outside 0.8-2.6 m: a wrong unit), a joint count no layout has, infinite values
or none but NaN, an empty or unreadable file fail with a message naming the file; nothing is
half-written and the other files still run. Existing outputs are kept unless --overwrite (reported as
skipped). The exit status is 1 if any file failed. File formats: docs/motion_io.md.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

from models.body.model import load_body_model, open_body_name
from models.core.errors import SmplIkError
from models.core.files import find_files
from models.core.rotations import axis_angle_to_matrix
from models.ik.from_joints import DEFAULT_FPS, GAP_FILL_SECONDS, JointOptions, convert_joint_file
from models.motion.amass import write_motion_npz
from models.motion.joints import LAYOUTS, SUFFIXES, UP_AXES, layouts_described
from models.motion.bvh import write_smpl_bvh
from models.motion.units import LENGTH_UNITS, parse_unit


def outputs(args):
    """([(source, target)], [(input, error)]): what to convert, and inputs that named nothing
    or would write the same output as another."""
    search = find_files(args.inputs, SUFFIXES)
    out, pairs, failed, claimed = Path(args.out), [], list(search.missing), {}
    for found in search.found:
        target = out / found.relative.with_suffix("." + args.format)
        if target in claimed:
            failed.append((str(found.path), f"same output {target} as {claimed[target]}; rename one of them"))
            continue
        claimed[target] = found.path
        pairs.append((found.path, target))
    return pairs, failed


def convert(source, target, body, args):
    """Convert one file; returns the line to print (raises SmplIkError)."""
    options = JointOptions(layout=args.layout, units=args.units, up_axis=args.up_axis, fps=args.fps,
                           smooth=args.smooth, denoise={"auto": "auto", "on": True, "off": False}[args.denoise],
                           fill_gaps=args.fill_gaps)
    motion = convert_joint_file(source, body, options)
    if args.format == "npz":
        extras = {"source": np.array(Path(source).name), "layout": np.array(motion.layout.layout.name),
                  "method": np.array(motion.method), "height_m": np.float64(motion.height_m),
                  "joint_error_mm": np.float64(motion.error_mm)}
        write_motion_npz(target, motion.motion_file(body, open_body_name(args.body) or Path(args.body).name),
                         extras=extras)
    else:
        write_smpl_bvh(target, axis_angle_to_matrix(motion.poses), motion.trans, body.rest_joints(motion.betas),
                       motion.fps)
    return f"{len(motion.poses)} frames, {motion.describe()}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", metavar="INPUT", help=f"joint files ({', '.join(SUFFIXES)}), folders or globs")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--layout", default="auto", choices=("auto",) + tuple(LAYOUTS),
                    help=f"the files' joint layout: {layouts_described()}; default: from the joint count")
    ap.add_argument("--format", default="npz", choices=("npz", "bvh"),
                    help="npz: AMASS-style SMPL motion (default); bvh: SMPL's skeleton in centimetres")
    ap.add_argument("--smooth", type=float, default=0.0, metavar="SIGMA",
                    help="Gaussian smoothing of the solved rotations and translation, sigma in frames "
                         "(default 0: none)")
    ap.add_argument("--denoise", default="auto", choices=("auto", "on", "off"),
                    help="IK-GAT corrects the bone directions of noisy smpl24 files: auto (when bone lengths change "
                         "between frames), on, off (default auto)")
    ap.add_argument("--fill-gaps", type=float, default=GAP_FILL_SECONDS, metavar="SECONDS",
                    help="a joint missing (NaN) for at most this long between frames that show it is pinned lightly "
                         f"on a curve through them; 0: SMPL-IK alone fills every gap (default {GAP_FILL_SECONDS:g})")
    ap.add_argument("--units", default="m", help=f"the files' length unit: {', '.join(LENGTH_UNITS)} or metres per "
                                                 "unit (default m)")
    ap.add_argument("--up-axis", choices=tuple(UP_AXES), help="the files' up axis: Y, Z, or -Y (y down, image-style); "
                                                              "default: the layout's own (Y; MediaPipe -Y)")
    ap.add_argument("--fps", type=float, help=f"frame rate of files that do not give one (default {DEFAULT_FPS:g})")
    ap.add_argument("--body", default="", help="SMPL/SMPL-H/SMPL-X model file (default: the open body)")
    ap.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    args = ap.parse_args(argv)
    try:
        parse_unit(args.units)
    except SmplIkError as exc:
        ap.error(str(exc))
    if args.smooth < 0:
        ap.error("--smooth must be 0 or more frames")
    if not args.fill_gaps >= 0:
        ap.error("--fill-gaps must be 0 or more seconds")
    if args.fps is not None and not args.fps > 0:
        ap.error("--fps must be positive")
    try:
        body = load_body_model(args.body or None)
    except SmplIkError as exc:
        ap.error(str(exc))

    pairs, failed = outputs(args)
    total = len(pairs) + len(failed)
    for item, error in failed:
        print(f"FAILED {item}: {error}")
    done = skipped = 0
    for source, target in pairs:
        if target.exists() and not args.overwrite:
            print(f"skipped {source}: {target} exists; pass --overwrite to replace it")
            skipped += 1
            continue
        start = time.perf_counter()
        try:
            line = convert(source, target, body, args)
        except SmplIkError as exc:
            print(f"FAILED {source}: {exc}")
            failed.append((str(source), str(exc)))
            continue
        print(f"ok {source} -> {target} ({time.perf_counter() - start:.1f} s): {line}")
        done += 1
    print(f"{done} of {total} files converted"
          + (f", {skipped} skipped (their outputs exist)" if skipped else "")
          + (f", {len(failed)} failed" if failed else ""))
    return 1 if failed or not (done or skipped) else 0


if __name__ == "__main__":
    sys.exit(main())

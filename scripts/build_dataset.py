"""Retarget a folder of BVH motion capture into one SMPL training file for the learned IK.

    python scripts/build_dataset.py ../shared/data/mocap/cmu_train --out data/cmu_train.npz \\
        [--fps 30] [--source-fps 'salsa_*=60'] [--skip-first 1] [--jobs 2]

The file holds, for N kept frames of C clips:
  poses (N, 72) axis-angle, SMPL joint order;  trans (N, 3) metres;  clip (N,) clip index;
  frame (N,) frame index in its source file;  betas (C, 10) each clip's fitted shape;
  clips (C,) source file names (relative to the folder);  fps (C,) kept frame rate;
  source_fps (C,);  limb_error_deg (C,);  body_model.
--source-fps gives the frame rate of clips whose header states a wrong one (fps and
source_fps follow it; --fps then down-samples from it). Clips that fail are reported and left
out; the exit status is 1 if any failed.
"""
import argparse
import sys
from pathlib import Path

from models.core.errors import SmplIkError
from models.motion.batch import build_dataset, save_npz_atomically
from models.motion.rates import RULES_HELP, rate_rules


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="folder of .bvh files (searched recursively)")
    ap.add_argument("--out", required=True, help="output .npz")
    ap.add_argument("--body", default="", help="body model file (default: the open body)")
    ap.add_argument("--mapping", default="", help="JSON mapping overrides for every clip")
    ap.add_argument("--fps", type=float, help="down-sample to about this frame rate")
    ap.add_argument("--source-fps", action="append", metavar="[PATTERN=]RATE", help=RULES_HELP)
    ap.add_argument("--skip-first", type=int, default=0,
                    help="drop this many frames at each clip's start (CMU clips: 1, a reference pose)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes (default 1)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing output")
    args = ap.parse_args(argv)

    if Path(args.out).exists() and not args.overwrite:
        ap.error(f"{args.out} exists; pass --overwrite to replace it")
    try:
        rates = rate_rules(args.source_fps)
    except SmplIkError as exc:
        ap.error(f"--source-fps {exc}")
    try:
        data = build_dataset(args.folder, args.body, args.mapping, args.fps, args.skip_first, args.jobs,
                             source_fps=rates)
    except SmplIkError as exc:
        ap.error(str(exc))
    for line in data.messages():   # clips left out, and kept ones whose implausible body deserves a look
        print(line, file=sys.stderr)
    if not data.arrays:
        print("no clip could be retargeted", file=sys.stderr)
        return 1
    try:
        save_npz_atomically(args.out, overwrite=args.overwrite, **data.arrays)
    except SmplIkError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(data.summary(args.out))
    return 0 if not data.failed else 1


if __name__ == "__main__":
    sys.exit(main())

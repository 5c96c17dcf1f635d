"""Retarget a folder of BVH motion capture into one SMPL training file for the learned IK.

    python scripts/build_dataset.py ../shared/data/mocap/cmu_train --out data/cmu_train.npz \\
        [--fps 30] [--skip-first 1] [--jobs 2]

The file holds, for N kept frames of C clips:
  poses (N, 72) axis-angle, SMPL joint order;  trans (N, 3) metres;  clip (N,) clip index;
  frame (N,) frame index in its source file;  betas (C, 10) each clip's fitted shape;
  clips (C,) source file names (relative to the folder);  fps (C,) kept frame rate;
  source_fps (C,);  limb_error_deg (C,);  body_model.
Clips that fail are reported and left out; the exit status is 1 if any failed.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.motion.batch import RetargetJob, body_name, dataset_clip, save_npz_atomically  # noqa: E402
from models.core.errors import SmplIkError  # noqa: E402


def _clip(args):
    job, fps, skip = args
    return dataset_clip(job, fps, skip)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="folder of .bvh files (searched recursively)")
    ap.add_argument("--out", required=True, help="output .npz")
    ap.add_argument("--body", default="", help="body model file (default: the open body)")
    ap.add_argument("--mapping", default="", help="JSON mapping overrides for every clip")
    ap.add_argument("--fps", type=float, help="down-sample to about this frame rate")
    ap.add_argument("--skip-first", type=int, default=0,
                    help="drop this many frames at each clip's start (CMU clips: 1, a reference pose)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes (default 1)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing output")
    args = ap.parse_args(argv)

    folder = Path(args.folder)
    files = sorted(f for f in folder.rglob("*") if f.suffix.lower() == ".bvh" and f.is_file())
    if not files:
        ap.error(f"{folder}: no .bvh files")
    if Path(args.out).exists() and not args.overwrite:
        ap.error(f"{args.out} exists; pass --overwrite to replace it")
    jobs = [(RetargetJob(source=str(f), output="", body=args.body, mapping=args.mapping), args.fps,
             args.skip_first) for f in files]
    if args.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs) as pool:
            clips = list(pool.map(_clip, jobs))
    else:
        clips = [_clip(j) for j in jobs]

    good = [(f, c) for f, c in zip(files, clips) if "error" not in c and len(c["frame"])]
    for f, c in zip(files, clips):
        if "error" in c:
            print(f"FAILED {f}: {c['error']}", file=sys.stderr)
        elif c["warnings"]:   # kept, but an implausible body deserves a look
            print(f"WARNING {f}: {'; '.join(c['warnings'])}", file=sys.stderr)
    if not good:
        print("no clip could be retargeted", file=sys.stderr)
        return 1
    arrays = {
        "poses": np.concatenate([c["poses"] for _, c in good]),
        "trans": np.concatenate([c["trans"] for _, c in good]),
        "clip": np.concatenate([np.full(len(c["frame"]), i, np.int32) for i, (_, c) in enumerate(good)]),
        "frame": np.concatenate([c["frame"] for _, c in good]),
        "betas": np.stack([c["betas"] for _, c in good]),
        "clips": np.array([str(f.relative_to(folder)) for f, _ in good]),
        "fps": np.array([c["fps"] for _, c in good]),
        "source_fps": np.array([c["source_fps"] for _, c in good]),
        "limb_error_deg": np.array([c["limb_error_deg"] for _, c in good], np.float32),
        "body_model": np.array(body_name(args.body)),
    }
    try:
        save_npz_atomically(args.out, overwrite=args.overwrite, **arrays)
    except SmplIkError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{args.out}: {len(arrays['poses'])} frames from {len(good)} of {len(files)} clips, "
          f"mean limb-direction error {arrays['limb_error_deg'].mean():.2f} deg")
    return 0 if len(good) == len(files) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark joint files with gaps: how near the converted body comes to joints the file lacks.

    python scripts/benchmark_joint_files.py [BVH or folder...] [--frames 240] [--lengths 3,6,12,24]
        [--json docs/figures/benchmark_joint_files.json]

Defaults to the clips every network was held out from (VALIDATION_LOCOMOTION and
VALIDATION_VARIED in models/training/clips.py, from ../shared/data/mocap/cmu_train and
cmu_varied). Each clip is retargeted onto the open body and taken at 30 fps (its first
--frames frames); its 24 SMPL joints make a joint file. Seeded gaps (NaN) are cut into it, of
--lengths frames (default 3, 6, 12 and 24: 0.1-0.8 s), one gap per two gap lengths of the clip:
- `joint`: one joint at a time, any of the 24;
- `limb_end`: a wrist with its hand, or an ankle with its foot (the ends a detector or a
  marker set loses most often);
- `frame`: every joint (the person lost altogether).
Each file is converted by models.ik.from_joints as shipped (`shipped`: gaps of up to
GAP_FILL_SECONDS pinned on a curve, SMPL-IK solving the frames) and with fill_gaps 0
(`smplik_alone`; frames lost whole are then blended from the pose before to the pose after);
`linear` fills the missing positions by straight lines between the frames
either side, with no body (what a curve editor's linear fill gives). Figures: mean distance
(mm) from the truth of the missing joints (`*_mm`) and of those the file gives (`given_mm`,
shipped), and the conversion's frames per second; and, for the files without gaps, the error
and speed of IK-GAT alone. One BLAS thread. Writes the JSON atomically and prints a summary.
"""
import os

os.environ["OMP_NUM_THREADS"] = "1"   # one core, as promised by the figures
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse
from pathlib import Path

from benchmarks.data import CLIP_FPS, clip_joints, held_out_clips
from benchmarks.joint_files import LENGTHS, complete_figures, gap_figures
from models.body.model import load_body_model
from models.core.files import write_json
from models.ik.from_joints import GAP_FILL_SECONDS
from models.motion.bvh import find_bvh_files


def print_entry(kind, length, group, entry):
    print(f"{kind:8s} {length:2d} frames {group:10s} missing: shipped {entry['shipped_mm']:6.1f} mm, "
          f"SMPL-IK alone {entry['smplik_alone_mm']:6.1f}, linear {entry['linear_mm']:6.1f}; "
          f"given {entry['given_mm']:.1f} mm; {entry['frames_per_s']:.0f} frames/s", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", metavar="BVH", help="BVH files or folders (default: the held-out clips)")
    ap.add_argument("--frames", type=int, default=240, help="frames of each clip at 30 fps (default 240)")
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)),
                    help="gap lengths in frames, comma separated (default %(default)s)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    try:
        lengths = [int(n) for n in args.lengths.split(",")]
    except ValueError:
        ap.error(f"--lengths must be whole numbers of frames, comma separated, not {args.lengths!r}")
    if min(lengths) < 1:
        ap.error("--lengths must be 1 frame or more")
    if args.frames < 4 * max(lengths):
        ap.error(f"--frames must be at least 4 times the longest gap ({4 * max(lengths)})")
    if args.inputs:
        search = find_bvh_files(args.inputs)
        if search.missing:
            ap.error("; ".join(f"{p}: {why}" for p, why in search.missing))
        groups = {"given": [f.path for f in search.found]}
    else:
        groups = held_out_clips()
        absent = [str(c) for clips in groups.values() for c in clips if not c.is_file()]
        if absent:
            raise SystemExit(f"held-out clips not found: {', '.join(absent)} (give BVH files or folders instead)")
    body = load_body_model()
    truths = {g: [clip_joints(p, body, args.frames) for p in paths] for g, paths in groups.items()}
    complete = complete_figures(truths, body)
    figures = gap_figures(truths, body, lengths, print_entry)
    for group, entry in complete.items():
        print(f"no gaps, {group}: {entry['error_mm']:.3f} mm, {entry['frames_per_s']:.0f} frames/s")
    if args.json:
        write_json(args.json, {
            "clips": {g: [Path(p).name for p in paths] for g, paths in groups.items()},
            "frames_per_clip": args.frames, "fps": CLIP_FPS, "gap_lengths_frames": lengths,
            "gap_fill_seconds": GAP_FILL_SECONDS, "blas_threads": os.environ["OPENBLAS_NUM_THREADS"],
            "complete": complete, "gaps": figures})
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

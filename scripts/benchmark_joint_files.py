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

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core, as promised by the figures

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.body.model import load_body_model  # noqa: E402
from models.core.files import write_json  # noqa: E402
from models.core.kinematics import forward_kinematics  # noqa: E402
from models.core.rotations import axis_angle_to_matrix  # noqa: E402
from models.core.skeleton import JOINT_INDEX, PARENTS  # noqa: E402
from models.ik.from_joints import GAP_FILL_SECONDS, JointOptions, joints_to_smpl  # noqa: E402
from models.motion.bvh import find_bvh_files, read_bvh  # noqa: E402
from models.motion.joints import JointFile  # noqa: E402
from models.motion.retarget import retarget  # noqa: E402
from models.training.clips import VALIDATION_LOCOMOTION, VALIDATION_VARIED  # noqa: E402

MOCAP = ROOT.parent / "shared" / "data" / "mocap"
FPS = 30.0
LENGTHS = (3, 6, 12, 24)
KINDS = ("joint", "limb_end", "frame")
SEEDS = {"joint": 1, "limb_end": 0, "frame": 2}   # each kind's gaps, seeded with the clip and the length
LIMB_ENDS = [[JOINT_INDEX[a], JOINT_INDEX[b]] for a, b in (("left_wrist", "left_hand"), ("right_wrist", "right_hand"),
                                                          ("left_ankle", "left_foot"), ("right_ankle", "right_foot"))]


def default_clips():
    return ([MOCAP / "cmu_train" / n for n in VALIDATION_LOCOMOTION]
            + [MOCAP / "cmu_varied" / n for n in VALIDATION_VARIED])


def clip_joints(path, body, frames):
    """The clip's 24 SMPL joints (T, 3) on the open body at 30 fps, its first `frames`."""
    motion = retarget(read_bvh(path), body)
    step = max(1, int(round(motion.fps / FPS)))
    rot = axis_angle_to_matrix(motion.poses[::step][:frames])
    rest = np.broadcast_to(body.rest_joints(motion.betas), rot.shape[:2] + (3,))
    return forward_kinematics(rot, rest, PARENTS, motion.trans[::step][:frames]).positions


def cut_gaps(truth, kind, length, rng):
    """(joints with NaN gaps, (T, 24) mask of the missing)."""
    gaps = truth.copy()
    missing = np.zeros(truth.shape[:2], bool)
    for _ in range(max(1, len(truth) // (2 * length))):
        joints = ([int(rng.integers(24))] if kind == "joint" else list(range(24)) if kind == "frame"
                  else LIMB_ENDS[int(rng.integers(len(LIMB_ENDS)))])
        start = int(rng.integers(1, len(truth) - length - 1))   # a frame on either side shows the joints
        missing[start:start + length, joints] = True
    gaps[missing] = np.nan
    return gaps, missing


def linear_fill(gaps, missing):
    """The missing positions on straight lines between the frames either side of each gap."""
    out = gaps.copy()
    frames = np.arange(len(gaps))
    for j in range(gaps.shape[1]):
        shown = ~missing[:, j]
        if not shown.all():
            for c in range(3):
                out[~shown, j, c] = np.interp(frames[~shown], frames[shown], gaps[shown, j, c])
    return out


def convert(gaps, body, fill):
    start = time.perf_counter()
    solved = joints_to_smpl(JointFile("gaps.npy", gaps, fps=FPS), body, JointOptions(fill_gaps=fill))
    seconds = time.perf_counter() - start
    posed = body.forward(solved.betas, pose_rotvecs=solved.poses, trans=solved.trans).posed_joints
    return posed, len(gaps) / seconds


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
        clips = default_clips()
        absent = [str(c) for c in clips if not c.is_file()]
        if absent:
            raise SystemExit(f"held-out clips not found: {', '.join(absent)} (give BVH files or folders instead)")
        groups = {"locomotion": clips[:len(VALIDATION_LOCOMOTION)], "varied": clips[len(VALIDATION_LOCOMOTION):]}
    body = load_body_model()
    truths = {g: [clip_joints(p, body, args.frames) for p in paths] for g, paths in groups.items()}

    complete = {}
    for group, clips in truths.items():
        errors, rates = [], []
        for truth in clips:
            posed, rate = convert(truth, body, GAP_FILL_SECONDS)
            errors.append(np.linalg.norm(posed - truth, axis=-1).mean())
            rates.append(rate)
        complete[group] = {"error_mm": round(1e3 * float(np.mean(errors)), 3),
                           "frames_per_s": round(float(np.median(rates)), 1)}

    figures = {}
    for kind in KINDS:
        for length in lengths:
            for group, clips in truths.items():
                sums = {"shipped": [], "smplik_alone": [], "linear": [], "given": []}
                rates = []
                for c, truth in enumerate(clips):
                    rng = np.random.default_rng([c, length, SEEDS[kind]])
                    gaps, missing = cut_gaps(truth, kind, length, rng)
                    shipped, rate = convert(gaps, body, GAP_FILL_SECONDS)
                    alone, _ = convert(gaps, body, 0.0)
                    error = lambda posed: np.linalg.norm(posed - truth, axis=-1)   # noqa: E731
                    sums["shipped"].append(error(shipped)[missing])
                    sums["smplik_alone"].append(error(alone)[missing])
                    sums["linear"].append(error(linear_fill(gaps, missing))[missing])
                    sums["given"].append(error(shipped)[~missing])
                    rates.append(rate)
                entry = {f"{k}_mm": round(1e3 * float(np.concatenate(v).mean()), 1) for k, v in sums.items()}
                entry["frames_per_s"] = round(float(np.median(rates)), 1)
                figures.setdefault(kind, {}).setdefault(str(length), {})[group] = entry
                print(f"{kind:8s} {length:2d} frames {group:10s} missing: shipped {entry['shipped_mm']:6.1f} mm, "
                      f"SMPL-IK alone {entry['smplik_alone_mm']:6.1f}, linear {entry['linear_mm']:6.1f}; "
                      f"given {entry['given_mm']:.1f} mm; {entry['frames_per_s']:.0f} frames/s", flush=True)
    for group, entry in complete.items():
        print(f"no gaps, {group}: {entry['error_mm']:.3f} mm, {entry['frames_per_s']:.0f} frames/s")
    if args.json:
        write_json(args.json, {
            "clips": {g: [Path(p).name for p in paths] for g, paths in groups.items()},
            "frames_per_clip": args.frames, "fps": FPS, "gap_lengths_frames": lengths,
            "gap_fill_seconds": GAP_FILL_SECONDS, "blas_threads": os.environ["OPENBLAS_NUM_THREADS"],
            "complete": complete, "gaps": figures})
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""The joint-file benchmark: seeded gaps cut into true joints, filled by the shipped conversion,
by SMPL-IK alone and by straight lines."""
import time

import numpy as np

from models.core.skeleton import JOINT_INDEX
from models.ik.from_joints import GAP_FILL_SECONDS, JointOptions, joints_to_smpl
from models.motion.joints import JointFile

from .data import CLIP_FPS

LENGTHS = (3, 6, 12, 24)    # gap lengths in frames by default (0.1-0.8 s at CLIP_FPS)
KINDS = ("joint", "limb_end", "frame")
SEEDS = {"joint": 1, "limb_end": 0, "frame": 2}   # each kind's gaps, seeded with the clip and the length
LIMB_ENDS = [[JOINT_INDEX[a], JOINT_INDEX[b]] for a, b in (("left_wrist", "left_hand"), ("right_wrist", "right_hand"),
                                                          ("left_ankle", "left_foot"), ("right_ankle", "right_foot"))]


def cut_gaps(truth, kind, length, rng):
    """(joints (T, 24, 3) with NaN gaps, (T, 24) mask of the missing): one gap of `length`
    frames per two gap lengths of the clip, at places drawn with rng, of one of KINDS: one
    joint, one LIMB_ENDS pair, or every joint; a frame either side of each gap shows the joints."""
    gaps = truth.copy()
    missing = np.zeros(truth.shape[:2], bool)
    for _ in range(max(1, len(truth) // (2 * length))):
        joints = ([int(rng.integers(24))] if kind == "joint" else list(range(24)) if kind == "frame"
                  else LIMB_ENDS[int(rng.integers(len(LIMB_ENDS)))])
        start = int(rng.integers(1, len(truth) - length - 1))
        missing[start:start + length, joints] = True
    gaps[missing] = np.nan
    return gaps, missing


def linear_fill(gaps, missing):
    """gaps (T, 24, 3) with the `missing` (T, 24) positions on straight lines between the frames
    either side of each gap."""
    out = gaps.copy()
    frames = np.arange(len(gaps))
    for j in range(gaps.shape[1]):
        shown = ~missing[:, j]
        if not shown.all():
            for c in range(3):
                out[~shown, j, c] = np.interp(frames[~shown], frames[shown], gaps[shown, j, c])
    return out


def convert(gaps, body, fill):
    """(posed joints (T, 24, 3) of models.ik.from_joints' conversion of joints (T, 24, 3) at
    CLIP_FPS with fill_gaps `fill` seconds, its frames per second)."""
    start = time.perf_counter()
    solved = joints_to_smpl(JointFile("gaps.npy", gaps, fps=CLIP_FPS), body, JointOptions(fill_gaps=fill))
    seconds = time.perf_counter() - start
    posed = body.forward(solved.betas, pose_rotvecs=solved.poses, trans=solved.trans).posed_joints
    return posed, len(gaps) / seconds


def complete_figures(truths, body):
    """{group: {"error_mm", "frames_per_s"}}: the shipped conversion of each group's files
    without gaps (truths: {group: [joints (T, 24, 3)]}), mean error and median rate."""
    complete = {}
    for group, clips in truths.items():
        errors, rates = [], []
        for truth in clips:
            posed, rate = convert(truth, body, GAP_FILL_SECONDS)
            errors.append(np.linalg.norm(posed - truth, axis=-1).mean())
            rates.append(rate)
        complete[group] = {"error_mm": round(1e3 * float(np.mean(errors)), 3),
                           "frames_per_s": round(float(np.median(rates)), 1)}
    return complete


def gap_figures(truths, body, lengths, on_entry=None):
    """{kind: {length: {group: {"shipped_mm", "smplik_alone_mm", "linear_mm", "given_mm",
    "frames_per_s"}}}} over KINDS and `lengths` (frames) on truths ({group: [joints (T, 24, 3)]}):
    the mean distance (mm) from the truth of the missing joints by each fill, of the given
    ones (shipped), and the shipped conversion's median rate; on_entry(kind, length, group,
    entry) is called as each entry is made."""
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
                    sums["shipped"].append(np.linalg.norm(shipped - truth, axis=-1)[missing])
                    sums["smplik_alone"].append(np.linalg.norm(alone - truth, axis=-1)[missing])
                    sums["linear"].append(np.linalg.norm(linear_fill(gaps, missing) - truth, axis=-1)[missing])
                    sums["given"].append(np.linalg.norm(shipped - truth, axis=-1)[~missing])
                    rates.append(rate)
                entry = {f"{k}_mm": round(1e3 * float(np.concatenate(v).mean()), 1) for k, v in sums.items()}
                entry["frames_per_s"] = round(float(np.median(rates)), 1)
                figures.setdefault(kind, {}).setdefault(str(length), {})[group] = entry
                if on_entry is not None:
                    on_entry(kind, length, group, entry)
    return figures

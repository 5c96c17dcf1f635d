"""Data the benchmarks measure on: clip lists (trained, held out) and true SMPL poses retargeted from mocap."""
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import PARENTS
from models.ik.nn import WEIGHTS_DIR
from models.motion.bvh import find_bvh_files, read_bvh
from models.motion.retarget import retarget
from models.training.clips import VALIDATION_LOCOMOTION, VALIDATION_VARIED

ROOT = Path(__file__).resolve().parents[1]
MOCAP = ROOT.parent / "shared" / "data" / "mocap"    # the shared mocap clips beside the clone
RETARGET_FOLDERS = tuple(MOCAP / name for name in ("cmu_train", "m21", "cmu_varied", "aclstm"))
CLIP_FPS = 30.0     # the rate joint-file clips are taken at


def trained_clips(weights_dir):
    """Names (file names, no folder) of the clips any network in `weights_dir` was trained on,
    from the `train_clips` of every *.json training record there; an empty set when none."""
    return {Path(c).name for record in sorted(Path(weights_dir).glob("*.json"))
            for c in json.loads(record.read_text()).get("train_clips", [])}


def display_path(path):
    """A path as a report names it: relative to the project when inside it (the shipped weights
    read models/ik/weights from any clone), else as given."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class GroundTruth:
    """True SMPL poses of mocap frames: local_rot (N, 24, 3, 3), rest (N, 24, 3) rest joints
    and positions (N, 24, 3) posed joints in metres, SMPL's Y-up world; clips: the sorted names
    of the clips the frames came from; skipped: (clip name, reason) of the clips that could not
    be retargeted."""

    local_rot: np.ndarray
    rest: np.ndarray
    positions: np.ndarray
    clips: list
    skipped: tuple = ()


def ground_truth(folder, max_frames, held_out_only, body, seed=0, weights_dir=WEIGHTS_DIR):
    """GroundTruth of the BVH clips in `folder` retargeted onto `body` (each clip's frame 0, often a
    reference pose, left out); held_out_only: only the clips no network in `weights_dir` was
    trained on; max_frames: that many frames drawn without replacement (generator `seed`), kept
    in order (0 or None: all). Raises SmplIkError when there is no clip to use."""
    files = [f.path for f in find_bvh_files([folder]).found]
    if held_out_only:
        trained = trained_clips(weights_dir)
        files = [f for f in files if f.name not in trained]
    if not files:
        raise SmplIkError(f"{folder}: no BVH clips to benchmark on")
    rots, rests, poss, names, skipped = [], [], [], [], []
    for f in files:
        try:
            r = retarget(read_bvh(f), body)
        except SmplIkError as exc:
            skipped.append((f.name, str(exc)))
            continue
        rot = axis_angle_to_matrix(r.poses)[1:]
        rest = body.rest_joints(r.betas)
        pos = forward_kinematics(rot, rest, PARENTS, r.trans[1:]).positions
        rots.append(rot)
        rests.append(np.broadcast_to(rest, pos.shape))
        poss.append(pos)
        names += [f.name] * len(rot)
    rot, rest, pos = (np.concatenate(x) for x in (rots, rests, poss))
    if max_frames and max_frames < len(rot):
        idx = np.sort(np.random.default_rng(seed).choice(len(rot), max_frames, replace=False))
        rot, rest, pos = rot[idx], rest[idx], pos[idx]
        names = [names[i] for i in idx]
    return GroundTruth(rot, rest, pos, sorted(set(names)), tuple(skipped))


def held_out_clips():
    """{"locomotion": paths, "varied": paths} of the clips every network was held out from
    (models.training.clips' VALIDATION_LOCOMOTION in cmu_train, VALIDATION_VARIED in cmu_varied)."""
    return {"locomotion": [MOCAP / "cmu_train" / n for n in VALIDATION_LOCOMOTION],
            "varied": [MOCAP / "cmu_varied" / n for n in VALIDATION_VARIED]}


def clip_joints(path, body, frames):
    """The BVH clip's 24 SMPL joints (T, 24, 3), metres, retargeted onto `body` and taken at
    CLIP_FPS (every k-th frame), its first `frames`."""
    motion = retarget(read_bvh(path), body)
    step = max(1, int(round(motion.fps / CLIP_FPS)))
    rot = axis_angle_to_matrix(motion.poses[::step][:frames])
    rest = np.broadcast_to(body.rest_joints(motion.betas), rot.shape[:2] + (3,))
    return forward_kinematics(rot, rest, PARENTS, motion.trans[::step][:frames]).positions

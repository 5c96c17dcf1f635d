"""Training poses for the learned-IK trainers: the data file built from retargeted motion
capture (`ensure_data`), and its poses split into training and validation by whole clips.

Training data is the file `scripts/build_dataset.py` (models.motion.batch.build_dataset)
writes from retargeted motion capture; `ensure_data` builds the default one on first use.
"""
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..body.model import GENDERS, OPEN_PREFIX, load_body_model, open_body_path
from ..core.errors import SmplIkError
from ..core.npz import read_npz
from ..core.skeleton import NUM_JOINTS
from ..motion.batch import build_dataset, save_npz_atomically
from .clips import VALIDATION_CLIPS

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT / "out" / "training_smpl.npz"   # the trainers' --data default
_MOCAP = ROOT.parent / "shared" / "data" / "mocap"
# What it is built from: folder, frames dropped at each clip's start (CMU's own files begin with
# a reference pose; the varied set's converted files do not).
MOCAP_SOURCES = ((_MOCAP / "cmu_train", 1), (_MOCAP / "cmu_varied", 0))


@dataclass
class PoseData:
    """Training or validation poses: every frame's pose, the clip it comes from, and each
    clip's name, with the data file's SHA-256."""

    poses: torch.Tensor      # (N, 24, 3) axis-angle
    clip: np.ndarray         # (N,)
    clips: list
    sha256: str
    weight: torch.Tensor = None   # (N,) chance of each frame being drawn; None: all alike
    rest: torch.Tensor = None     # (C, 24, 3) the rest joints each clip was retargeted onto; None: unknown


def ensure_data(path):
    """`path`, after building it from MOCAP_SOURCES (60 fps, two processes; merge_datasets)
    when it is DEFAULT_DATA and missing; SmplIkError when a source is not here or gives no
    clip. Logs what the build says and what it wrote."""
    if Path(path).exists() or Path(path) != DEFAULT_DATA:
        return path
    parts = []
    for folder, skip in MOCAP_SOURCES:
        if not folder.is_dir():
            raise SmplIkError(f"no training data: {path} is missing and {folder} is not here")
        data = build_dataset(folder, fps=60, skip_first=skip, workers=2)
        for line in data.messages():
            log.info("%s", line)
        if not data.arrays:
            raise SmplIkError(f"no training data: no clip of {folder} could be retargeted")
        parts.append((folder.name, data.arrays))
    save_npz_atomically(path, **merge_datasets(parts))
    log.info("%s: %s", path, ", ".join(f"{len(a['poses'])} frames of {len(a['clips'])} clips from {name}"
                                       for name, a in parts))
    return path


def merge_datasets(parts):
    """One training set from several build_dataset sets [(name, arrays)]: clips become
    'name/clip', clip indices are offset, and `source` (C,) names each clip's set."""
    out, offset = {}, 0
    for name, arrays in parts:
        shifted = dict(arrays, clip=arrays["clip"] + offset, clips=np.array([f"{name}/{c}" for c in arrays["clips"]]),
                       source=np.array([name] * len(arrays["clips"])))
        offset += len(arrays["clips"])
        for key, value in shifted.items():
            if key != "body_model":
                out.setdefault(key, []).append(value)
    merged = {k: np.concatenate(v) for k, v in out.items()}
    merged["body_model"] = parts[0][1]["body_model"]
    return merged


def load_pose_data(path, validation=VALIDATION_CLIPS):
    """(train, validation) PoseData from a build_dataset file, split by whole clips. A merged
    file (merge_datasets) draws each source an equal share of the training frames."""
    path = Path(path)
    if not path.is_file():
        raise SmplIkError(f"{path}: training data not found (make it with scripts/build_dataset.py)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    d = read_npz(path, ("poses", "clip", "clips", "source", "body_model", "betas"), "training data file")
    missing = [k for k in ("poses", "clip", "clips") if k not in d]
    if missing:
        raise SmplIkError(f"{path}: not a training data file (no {', '.join(missing)}; make it with "
                          "scripts/build_dataset.py)")
    poses = d["poses"].reshape(-1, NUM_JOINTS, 3).astype(np.float32)
    clip = d["clip"]
    clips = [str(c) for c in d["clips"]]
    source = d.get("source")
    rest = _clip_rest(d)
    names = [Path(c).name for c in clips]
    held = np.array([n in validation for n in names])
    is_val = held[clip]
    if not is_val.any():  # data without the named clips (e.g. a test set): hold out every 8th clip
        held = np.arange(len(clips)) % 8 == 7
        is_val = held[clip]

    def make(m):
        weight = None
        if source is not None:   # each source the same share, split among its frames
            kinds, which, counts = np.unique(source[clip[m]], return_inverse=True, return_counts=True)
            weight = torch.from_numpy(1.0 / (counts[which] * len(kinds)))
        return PoseData(torch.from_numpy(poses[m]), clip[m], clips, digest, weight, rest)
    return make(~is_val), make(is_val)


def _clip_rest(d):
    """(C, 24, 3) float32 rest joints of the body each clip of a build_dataset file was fitted
    on (its `betas` on its `body_model`), or None when the file does not say (a user's body)."""
    name = str(d["body_model"]) if "body_model" in d else ""
    gender = name[len(OPEN_PREFIX):] if name.startswith(OPEN_PREFIX) else None
    if "betas" not in d or gender not in GENDERS:
        return None
    body = load_body_model(open_body_path(gender))
    return torch.from_numpy(body.rest_joints(d["betas"].astype(np.float64)).astype(np.float32))


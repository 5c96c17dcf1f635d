"""AMASS-style SMPL motion files (`.npz`): read one into checked arrays in SMPL's layout.

The keys are AMASS's, which `scripts/retarget.py` also writes: `poses` (T, 72 | 156 | 165)
axis-angle values per frame, root first (SMPL, SMPL-H, SMPL-X: all three start with the same
22 body joints), `trans` (T, 3) metres, `betas` (B,) of any length, `gender`, and
`mocap_framerate` or `mocap_frame_rate`. Only `poses` is required. Bad or damaged files raise
SmplIkError naming the file and the array at fault.
"""
from dataclasses import dataclass

import numpy as np

from ..body.model import read_npz
from ..core.errors import SmplIkError
from ..core.skeleton import JOINT_NAMES, NUM_BODY_JOINTS_SHARED, NUM_JOINTS

POSE_VALUES = {72: "smpl", 156: "smplh", 165: "smplx"}   # pose values per frame -> body kind
GENDERS = ("neutral", "male", "female")
FRAME_RATE_KEYS = ("mocap_framerate", "mocap_frame_rate")
KEYS = ("poses", "trans", "betas", "gender") + FRAME_RATE_KEYS


@dataclass(frozen=True)
class MotionFile:
    """An AMASS-style motion: poses (T, 24, 3) axis-angle in SMPL's joint order (SMPL-H / SMPL-X
    finger, jaw and eye rotations are not kept: SMPL's hand joints are zero for them); trans
    (T, 3) metres; betas (B,) as stored (empty when absent); gender (None when absent); fps
    (None when absent); kind: 'smpl', 'smplh' or 'smplx' from the pose width; notes: what was
    absent and assumed."""

    path: str
    poses: np.ndarray
    trans: np.ndarray
    betas: np.ndarray
    gender: object
    fps: object
    kind: str
    notes: tuple

    @property
    def num_frames(self):
        return self.poses.shape[0]


def _numeric(path, key, value):
    """`value` as float64, or SmplIkError when it holds no numbers (strings, complex)."""
    if value.dtype.kind not in "biuf":
        raise SmplIkError(f"{path}: array '{key}' holds {value.dtype} values, not numbers")
    return value.astype(np.float64)


def _first_bad(path, key, values, what):
    bad = ~np.isfinite(values)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SmplIkError(f"{path}: array '{key}' has {values[where]} at {what(where)}")


def _text(path, key, value):
    if value.shape != () or value.dtype.kind not in "US":
        raise SmplIkError(f"{path}: array '{key}' should be one string, found {value.dtype} of shape {value.shape}")
    item = value.item()
    if isinstance(item, bytes):
        try:
            item = item.decode("utf-8")
        except UnicodeDecodeError:
            raise SmplIkError(f"{path}: array '{key}' is not text") from None
    return item.strip()


def read_motion_npz(path):
    """Read an AMASS-style `.npz` motion into a MotionFile. Raises SmplIkError naming the
    file and the array at fault (shape, NaN values with their frame, unknown gender)."""
    path_text = str(path)
    arrays = read_npz(path, KEYS, "motion file")
    notes = []
    if "poses" not in arrays:
        raise SmplIkError(f"{path_text}: no 'poses' array; an AMASS-style motion has poses of shape "
                          "(frames, 72), (frames, 156) or (frames, 165)")
    poses = _numeric(path_text, "poses", arrays["poses"])
    if poses.ndim == 3 and poses.shape[2] == 3:
        poses = poses.reshape(poses.shape[0], 3 * poses.shape[1])
    if poses.ndim != 2 or poses.shape[1] not in POSE_VALUES:
        raise SmplIkError(f"{path_text}: array 'poses' has shape {arrays['poses'].shape}; expected "
                          "(frames, 72) for SMPL, (frames, 156) for SMPL-H or (frames, 165) for SMPL-X "
                          "axis-angle values")
    if poses.shape[0] == 0:
        raise SmplIkError(f"{path_text}: array 'poses' has no frames")
    kind = POSE_VALUES[poses.shape[1]]
    joints = poses.shape[1] // 3
    named = NUM_JOINTS if kind == "smpl" else NUM_BODY_JOINTS_SHARED   # joints SMPL names

    def joint(where):
        j = where[1] // 3
        return f"frame {where[0]}, joint {j} ({JOINT_NAMES[j] if j < named else kind + ' hand or face'})"

    _first_bad(path_text, "poses", poses, joint)
    body = np.zeros((poses.shape[0], NUM_JOINTS, 3))
    body[:, :named] = poses.reshape(-1, joints, 3)[:, :named]
    if kind != "smpl":
        notes.append(f"{kind} file: finger, jaw and eye rotations are not kept (SMPL's hand joints are zero)")

    frames = poses.shape[0]
    if "trans" in arrays:
        trans = _numeric(path_text, "trans", arrays["trans"])
        if trans.shape != (frames, 3):
            raise SmplIkError(f"{path_text}: array 'trans' has shape {trans.shape}; expected ({frames}, 3), "
                              "one root position per frame of 'poses'")
        _first_bad(path_text, "trans", trans, lambda w: f"frame {w[0]}")
    else:
        trans = np.zeros((frames, 3))
        notes.append("no 'trans': the root stays at the origin")

    if "betas" in arrays:
        betas = _numeric(path_text, "betas", arrays["betas"])
        if betas.ndim == 2 and betas.shape[0] == 1:
            betas = betas[0]
        if betas.ndim != 1:
            raise SmplIkError(f"{path_text}: array 'betas' has shape {arrays['betas'].shape}; expected (B,)")
        _first_bad(path_text, "betas", betas, lambda w: f"beta {w[0]}")
    else:
        betas = np.zeros(0)
        notes.append("no 'betas': the body's mean shape")

    gender = None
    if "gender" in arrays:
        gender = _text(path_text, "gender", arrays["gender"]).lower()
        if gender not in GENDERS:
            raise SmplIkError(f"{path_text}: array 'gender' is {gender!r}; expected one of {', '.join(GENDERS)}")
    else:
        notes.append("no 'gender'")

    fps = None
    key = next((k for k in FRAME_RATE_KEYS if k in arrays), None)
    if key is not None:
        rate = _numeric(path_text, key, arrays[key])
        if rate.size != 1 or not np.isfinite(rate).all() or float(rate.reshape(-1)[0]) <= 0:
            raise SmplIkError(f"{path_text}: array '{key}' should be one positive number of frames per "
                              f"second, found {rate.reshape(-1)[:3].tolist()} (shape {rate.shape})")
        fps = float(rate.reshape(-1)[0])
    else:
        notes.append("no 'mocap_framerate': the frame rate is not known")
    return MotionFile(path=path_text, poses=body, trans=trans, betas=betas, gender=gender, fps=fps,
                      kind=kind, notes=tuple(notes))

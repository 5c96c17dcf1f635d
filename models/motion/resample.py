"""Motion from one frame rate to another: rotations slerped, translations lerped, frames that
fall on a source frame copied exactly (120 to 30 fps keeps every 4th frame bit for bit)."""
from dataclasses import dataclass

import numpy as np

from ..core.errors import SmplIkError

# A target time within this many source frames of a source frame is that frame: rates such
# as 120 -> 30 land on source frames exactly, and float rounding must not make them blends.
ON_FRAME = 1e-6


@dataclass(frozen=True)
class Timing:
    """Where each target frame falls among the source frames: between source frames `index`
    and `index + 1`, at `weight` in [0, 1) from the first (0: exactly on it)."""

    index: np.ndarray   # (K,) int
    weight: np.ndarray  # (K,) float64

    @property
    def num_frames(self):
        return len(self.index)


def resample_timing(num_frames, source_fps, target_fps):
    """The target frames of a motion of `num_frames` frames at `source_fps` played at
    `target_fps` (both frames per second, > 0): target frame k is at time k / target_fps,
    for every such time up to the source's last frame, (num_frames - 1) / source_fps."""
    for name, fps in (("source", source_fps), ("target", target_fps)):
        if not (np.isfinite(fps) and fps > 0):
            raise SmplIkError(f"the {name} frame rate must be a positive number of frames per second, got {fps}")
    if num_frames < 1:
        raise SmplIkError("a motion needs at least one frame to resample")
    ratio = float(source_fps) / float(target_fps)          # source frames per target frame
    count = int(np.floor((num_frames - 1) / ratio + ON_FRAME)) + 1
    at = np.arange(count) * ratio                          # target times, in source frames
    nearest = np.rint(at)
    at = np.where(np.abs(at - nearest) < ON_FRAME, nearest, at)
    index = np.minimum(np.floor(at).astype(np.int64), num_frames - 1)
    weight = at - index
    return Timing(index=index, weight=np.where(index == num_frames - 1, 0.0, weight))


def quat_slerp(q0, q1, weight):
    """Spherical interpolation of unit quaternions (..., 4) (w first) at weight (...) in
    [0, 1], along the shorter arc (q1 or -q1, the nearer). Weight 0 gives q0 exactly."""
    q0, q1 = np.asarray(q0, np.float64), np.asarray(q1, np.float64)
    w = np.asarray(weight, np.float64)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0, -q1, q1)
    dot = np.clip(np.abs(dot), 0.0, 1.0)
    angle = np.arccos(dot)
    sin = np.sin(angle)
    near = sin < 1e-8                                       # (nearly) the same rotation: lerp
    safe = np.where(near, 1.0, sin)
    a = np.where(near, 1.0 - w, np.sin((1.0 - w) * angle) / safe)
    b = np.where(near, w, np.sin(w * angle) / safe)
    out = a * q0 + b * q1
    out /= np.linalg.norm(out, axis=-1, keepdims=True)
    return np.where(w == 0.0, q0, out)


def resample_motion(quats, trans, timing):
    """Quaternions (T, J, 4) (w first, unit) and translations (T, 3) at the target frames of
    `timing` (a Timing): (K, J, 4) slerped and (K, 3) lerped; a target frame on a source
    frame is that frame's values exactly."""
    quats, trans = np.asarray(quats, np.float64), np.asarray(trans, np.float64)
    i0 = timing.index
    i1 = np.minimum(i0 + 1, len(quats) - 1)
    w = timing.weight
    out_q = quat_slerp(quats[i0], quats[i1], np.broadcast_to(w[:, None], quats[i0].shape[:-1]))
    out_t = np.where((w == 0.0)[:, None], trans[i0], (1.0 - w)[:, None] * trans[i0] + w[:, None] * trans[i1])
    return out_q, out_t


def continuous_quats(quats):
    """(T, ..., 4) quaternions with signs flipped so each is in the hemisphere of the one
    before it in time (the same rotations; curves through them take the short way)."""
    quats = np.array(quats, np.float64)
    if len(quats) < 2:
        return quats
    step = np.sign(np.sum(quats[1:] * quats[:-1], axis=-1))
    step[step == 0] = 1.0
    sign = np.concatenate([np.ones_like(step[:1]), np.cumprod(step, axis=0)])
    return quats * sign[..., None]

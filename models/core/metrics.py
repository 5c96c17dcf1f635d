"""How far estimated joints are from true ones: mean joint errors (aligned on a root, or after
the best similarity transform), angles between directions, the fraction of 2D points near
their true places, and over time the error in acceleration and how far feet slide while in
contact. Both sides in one frame and unit (metres, pixels); the benchmarks use them.
"""
import numpy as np


def aligned_error(p, g, p_origin=None, g_origin=None):
    """Root-aligned mean joint error of positions p (..., J, 3) against g (..., J, 3).

    Each side is moved so that its origin is at zero first: p_origin, g_origin (..., 3),
    joint 0 (the pelvis) by default. Returns (...,) in the positions' unit.
    """
    p, g = np.asarray(p, dtype=np.float64), np.asarray(g, dtype=np.float64)
    po = p[..., 0, :] if p_origin is None else np.asarray(p_origin, dtype=np.float64)
    go = g[..., 0, :] if g_origin is None else np.asarray(g_origin, dtype=np.float64)
    return np.linalg.norm((p - po[..., None, :]) - (g - go[..., None, :]), axis=-1).mean(-1)


def procrustes_error(p, g):
    """Mean joint error of p (..., J, 3) against g (..., J, 3) after the best similarity
    transform of p onto g (rotation, uniform scale, translation; no reflection), each pose on
    its own; (...,) in the positions' unit."""
    p, g = np.asarray(p, dtype=np.float64), np.asarray(g, dtype=np.float64)
    a, b = p - p.mean(-2, keepdims=True), g - g.mean(-2, keepdims=True)
    u, sv, vt = np.linalg.svd(np.swapaxes(b, -1, -2) @ a)
    d = np.sign(np.linalg.det(u @ vt))
    sv[..., -1] *= d
    u[..., :, -1] *= d[..., None]
    r = u @ vt
    scale = sv.sum(-1) / (a * a).sum((-1, -2))
    return np.linalg.norm(scale[..., None, None] * a @ np.swapaxes(r, -1, -2) - b, axis=-1).mean(-1)


def acceleration_error(p, g):
    """Mean over frames and joints of |second difference of p - second difference of g| for
    tracks p, g (T, J, 3) (or (T, 3)) sampled at one rate: in the positions' unit per frame
    squared. A frame with NaN in either (missing, or a gap between clips laid end to end)
    leaves out the three second differences it enters; NaN when none is left."""
    p, g = np.asarray(p, dtype=np.float64), np.asarray(g, dtype=np.float64)
    if len(p) < 3:
        return float("nan")
    error = np.linalg.norm(np.diff(p, n=2, axis=0) - np.diff(g, n=2, axis=0), axis=-1)
    error = error[np.isfinite(error)]
    return float(error.mean()) if error.size else float("nan")


def foot_skating(feet, contact, up=(0.0, 1.0, 0.0)):
    """How far feet slide while in contact: the mean horizontal distance (across `up` (3,);
    None: the whole distance) a foot point (feet (T, K, 3)) moves from one frame to the next
    where `contact` (T, K) bool says it is in contact on both; in the positions' unit per
    frame. NaN positions (missing frames) leave their steps out; NaN when no step is left."""
    feet = np.asarray(feet, dtype=np.float64)
    step = np.diff(feet, axis=0)
    if up is not None:
        up = np.asarray(up, dtype=np.float64) / np.linalg.norm(up)
        step = step - (step @ up)[..., None] * up
    both = np.asarray(contact, dtype=bool)
    moved = np.linalg.norm(step, axis=-1)[both[1:] & both[:-1]]
    moved = moved[np.isfinite(moved)]
    return float(moved.mean()) if moved.size else float("nan")


def angle_deg(a, b):
    """Angle (...,) in degrees between vectors a and b (..., 3); NaN where either is zero."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.sum(a * b, axis=-1) / (na * nb)
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


def pck(points, true_points, radius):
    """Fraction of points (..., K, 2) within `radius` (a number or (...,)) of true_points
    (..., K, 2), same unit (pixels); a NaN point (not projected) is a miss. Returns (...,)."""
    d = np.linalg.norm(np.asarray(points, dtype=np.float64) - np.asarray(true_points, dtype=np.float64), axis=-1)
    with np.errstate(invalid="ignore"):
        hit = d <= np.asarray(radius, dtype=np.float64)[..., None]
    return hit.mean(-1)

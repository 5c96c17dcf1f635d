"""How far estimated joints are from true ones: mean joint errors (aligned on a root, or after
the best similarity transform), angles between directions, and the fraction of 2D points near
their true places. Both sides in one frame and unit (metres, pixels); the benchmarks use them.
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
    """Mean joint error of p (J, 3) against g (J, 3) after the best similarity transform of p
    onto g (rotation, uniform scale, translation; no reflection), in the positions' unit."""
    p, g = np.asarray(p, dtype=np.float64), np.asarray(g, dtype=np.float64)
    a, b = p - p.mean(0), g - g.mean(0)
    u, sv, vt = np.linalg.svd(b.T @ a)
    d = np.sign(np.linalg.det(u @ vt))
    sv[-1] *= d
    u[:, -1] *= d
    r = u @ vt
    scale = sv.sum() / (a * a).sum()
    return np.linalg.norm(scale * a @ r.T - b, axis=-1).mean()


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

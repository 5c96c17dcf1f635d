"""Plane and segment geometry for balance and self-collision: convex hulls, a point's distance
from a convex polygon, and how deep two capsules overlap."""
from dataclasses import dataclass

import numpy as np


def convex_hull(points):
    """The convex hull of 2D points (K, 2): indices of its corners, counter-clockwise (Andrew's
    monotone chain; collinear points left out)."""
    order = np.lexsort((points[:, 1], points[:, 0]))

    def chain(indices):
        out = []
        for i in indices:
            while len(out) >= 2:
                a, b = points[out[-2]], points[out[-1]]
                if (b[0] - a[0]) * (points[i][1] - a[1]) - (b[1] - a[1]) * (points[i][0] - a[0]) > 1e-12:
                    break
                out.pop()
            out.append(int(i))
        return out

    lower, upper = chain(order), chain(order[::-1])
    return np.array(lower[:-1] + upper[:-1], dtype=np.int64)


@dataclass(frozen=True)
class Outside:
    """A point's signed distance from a convex polygon (positive outside, negative inside),
    where on the polygon it is nearest: on the edge from corner `a` to corner `b` (indices into
    the points the polygon was made of) at fraction t, and the outward unit normal there."""

    distance: float
    a: int
    b: int
    t: float
    normal: np.ndarray


def outside_polygon(point, corners, points):
    """Outside for a 2D point (2,) and a convex polygon: corners (H,) counter-clockwise indices
    into points (K, 2) (convex_hull); one or two corners (a polygon with no area) count as a
    segment."""
    a = points[corners]
    b = points[np.roll(corners, -1)]
    edge = b - a
    length2 = np.maximum((edge * edge).sum(1), 1e-18)
    t = np.clip(((point - a) * edge).sum(1) / length2, 0.0, 1.0)
    near = a + t[:, None] * edge
    gap = point - near
    dist = np.sqrt((gap * gap).sum(1))
    normal = np.stack([edge[:, 1], -edge[:, 0]], 1) / np.sqrt(length2)[:, None]   # outward for counter-clockwise
    side = ((point - a) * normal).sum(1)
    if len(corners) >= 3 and np.all(side <= 0):   # inside: the nearest edge's line
        e = int(np.argmax(side))
        t_line = float(((point - a[e]) * edge[e]).sum() / length2[e])
        return Outside(float(side[e]), int(corners[e]), int(np.roll(corners, -1)[e]), t_line, normal[e])
    e = int(np.argmin(dist))
    n = gap[e] / dist[e] if dist[e] > 1e-12 else normal[e]
    return Outside(float(dist[e]), int(corners[e]), int(np.roll(corners, -1)[e]), float(t[e]), n)


def closest_on_segments(p1, q1, p2, q2):
    """Closest points of segments p1-q1 and p2-q2 (..., 3): their fractions s, t (...,) along
    each (Ericson, Real-Time Collision Detection 5.1.9; a segment of no length is a point)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = (d1 * d1).sum(-1), (d2 * d2).sum(-1)
    b, c, f = (d1 * d2).sum(-1), (d1 * r).sum(-1), (d2 * r).sum(-1)
    a_, e_ = np.maximum(a, 1e-12), np.maximum(e, 1e-12)
    denom = a * e - b * b
    s = np.where(denom > 1e-12 * np.maximum(a * e, 1e-12),
                 np.clip((b * f - c * e) / np.maximum(denom, 1e-30), 0, 1), 0.0)
    t = (b * s + f) / e_
    s = np.where(t < 0, np.clip(-c / a_, 0, 1), np.where(t > 1, np.clip((b - c) / a_, 0, 1), s))
    t = np.clip(t, 0, 1)
    point1, point2 = a <= 1e-12, e <= 1e-12
    s = np.where(point1, 0.0, np.where(point2, np.clip(-c / a_, 0, 1), s))
    t = np.where(point2, 0.0, np.where(point1, np.clip(f / e_, 0, 1), t))
    return s, t


def pair_depths(ends, radius, pairs):
    """How deep (metres, >= 0) each pair (P, 2) of capsules with axis ends (..., C, 2, 3) and
    radii (C,) overlaps, (..., P), and the closest axis points of each pair (..., P, 3), the
    first capsule's then the second's."""
    a, b = ends[..., pairs[:, 0], :, :], ends[..., pairs[:, 1], :, :]
    s, t = closest_on_segments(a[..., 0, :], a[..., 1, :], b[..., 0, :], b[..., 1, :])
    pa = a[..., 0, :] + s[..., None] * (a[..., 1, :] - a[..., 0, :])
    pb = b[..., 0, :] + t[..., None] * (b[..., 1, :] - b[..., 0, :])
    gap = np.sqrt(((pa - pb) ** 2).sum(-1))
    return np.maximum(radius[pairs[:, 0]] + radius[pairs[:, 1]] - gap, 0.0), pa, pb

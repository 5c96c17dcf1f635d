"""Rotation conversions in numpy: axis-angle, matrix, quaternion (w first) and 6D.

Conventions: rotation matrices act on column vectors (v' = R v); quaternions are (w, x, y, z)
with w >= 0 on output; axis-angle is the rotation vector (unit axis times angle in radians,
angle in [0, pi]); 6D is the first two columns of the matrix, stored as
(r00, r10, r20, r01, r11, r21). Every function accepts any leading batch dimensions and keeps
the input's float dtype.
"""
import numpy as np

_EPS = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}
_LEVI_CIVITA = np.zeros((3, 3, 3))
_LEVI_CIVITA[0, 1, 2] = _LEVI_CIVITA[1, 2, 0] = _LEVI_CIVITA[2, 0, 1] = 1.0
_LEVI_CIVITA[0, 2, 1] = _LEVI_CIVITA[2, 1, 0] = _LEVI_CIVITA[1, 0, 2] = -1.0


def cross(a, b):
    """Cross product of (..., 3) vectors in one einsum (np.cross costs ten numpy calls)."""
    return np.einsum("ijk,...j,...k->...i", _LEVI_CIVITA.astype(np.result_type(a, b), copy=False), a, b)


def _float(x):
    x = np.asarray(x)
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float64)


def _eps(x):
    return _EPS[x.dtype]


def axis_angle_to_quat_wxyz(aa):
    """(..., 3) rotation vectors to (..., 4) unit quaternions (w, x, y, z)."""
    aa = _float(aa)
    angle = np.linalg.norm(aa, axis=-1, keepdims=True)
    half = 0.5 * angle
    small = angle < 1e-4
    # sin(a/2)/a with its Taylor series near zero, so tiny rotations stay exact.
    safe = np.where(small, 1.0, angle)
    k = np.where(small, 0.5 - angle**2 / 48.0, np.sin(half) / safe)
    return np.concatenate([np.cos(half), aa * k], axis=-1).astype(aa.dtype)


def quat_wxyz_to_axis_angle(q):
    """(..., 4) quaternions (w, x, y, z; need not be unit) to (..., 3) rotation vectors."""
    q = _float(q)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    q = np.where(q[..., :1] < 0, -q, q)  # shortest rotation: angle in [0, pi]
    xyz = q[..., 1:]
    s = np.linalg.norm(xyz, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    small = s < 1e-6
    k = np.where(small, 2.0 / np.maximum(q[..., :1], _eps(q)), angle / np.where(small, 1.0, s))
    return (xyz * k).astype(q.dtype)


def quat_wxyz_to_matrix(q):
    """(..., 4) quaternions (w, x, y, z; normalised here) to (..., 3, 3) rotation matrices."""
    q = _float(q)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    m = np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], axis=-1)
    return m.reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat_wxyz(m):
    """(..., 3, 3) rotation matrices to (..., 4) unit quaternions (w, x, y, z), w >= 0.

    Shepperd's method: pick the largest of the four squared components for stability.
    """
    m = _float(m)
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    tr = m00 + m11 + m22
    cand = np.stack([
        np.stack([1 + tr, m21 - m12, m02 - m20, m10 - m01], -1),
        np.stack([m21 - m12, 1 + m00 - m11 - m22, m01 + m10, m02 + m20], -1),
        np.stack([m02 - m20, m01 + m10, 1 - m00 + m11 - m22, m12 + m21], -1),
        np.stack([m10 - m01, m02 + m20, m12 + m21, 1 - m00 - m11 + m22], -1),
    ], axis=-2)  # (..., 4, 4): row i is 4*q_i*q scaled, best when q_i is largest
    best = np.argmax(np.stack([tr, m00, m11, m22], -1), axis=-1)
    q = np.take_along_axis(cand, best[..., None, None], axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


def axis_angle_to_matrix(aa):
    """(..., 3) rotation vectors to (..., 3, 3) rotation matrices."""
    return quat_wxyz_to_matrix(axis_angle_to_quat_wxyz(aa))


def matrix_to_axis_angle(m):
    """(..., 3, 3) rotation matrices to (..., 3) rotation vectors (angle in [0, pi]).

    Up to 120 degrees from the skew part (sin(angle) times the axis) and the trace (cos):
    five times faster than the quaternion, which takes the turns past that, where the skew
    part shrinks and loses the axis."""
    m = _float(m)
    v = np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], -1) * 0.5
    cos = (m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2] - 1.0) * 0.5
    sin = np.sqrt((v * v).sum(-1))
    eps = _eps(m)
    out = v * np.where(sin > eps, np.arctan2(sin, cos) / np.maximum(sin, eps), 1.0)[..., None]
    far = cos < -0.5
    if np.any(far):
        out[far] = quat_wxyz_to_axis_angle(matrix_to_quat_wxyz(m[far]))
    return out


def matrix_to_rot6d(m):
    """(..., 3, 3) rotation matrices to (..., 6): first column then second column."""
    m = _float(m)
    return np.concatenate([m[..., :, 0], m[..., :, 1]], axis=-1)


def rot6d_to_matrix(d6):
    """(..., 6) to (..., 3, 3) by Gram-Schmidt; any two independent columns give a rotation.

    Works one component at a time on contiguous rows, in blocks of 4096 rotations: small
    temporaries are reused by the allocator instead of costing fresh pages (5x faster on a
    batch of 24,000 in float64)."""
    d6 = _float(d6)
    eps = _eps(d6)
    flat = d6.reshape(-1, 6)
    out = np.empty((len(flat), 3, 3), d6.dtype)
    for start in range(0, len(flat), 4096):
        a0, a1, a2, b0, b1, b2 = flat[start:start + 4096].T.copy()
        s = np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
        s = 1.0 / np.maximum(s, eps, out=s)
        x0, x1, x2 = a0 * s, a1 * s, a2 * s
        dot = x0 * b0 + x1 * b1 + x2 * b2
        y0, y1, y2 = b0 - dot * x0, b1 - dot * x1, b2 - dot * x2
        s = np.sqrt(y0 * y0 + y1 * y1 + y2 * y2)
        s = 1.0 / np.maximum(s, eps, out=s)
        y0 *= s
        y1 *= s
        y2 *= s
        o = out[start:start + 4096]
        o[:, 0, 0], o[:, 1, 0], o[:, 2, 0] = x0, x1, x2
        o[:, 0, 1], o[:, 1, 1], o[:, 2, 1] = y0, y1, y2
        o[:, 0, 2] = x1 * y2 - x2 * y1
        o[:, 1, 2] = x2 * y0 - x0 * y2
        o[:, 2, 2] = x0 * y1 - x1 * y0
    return out.reshape(d6.shape[:-1] + (3, 3))


def quat_wxyz_multiply(a, b):
    """Hamilton product a * b of (..., 4) quaternions (w, x, y, z): rotate by b, then a."""
    a, b = _float(a), _float(b)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], axis=-1)


def geodesic_angle(m1, m2):
    """Angle in radians of the relative rotation between (..., 3, 3) matrices m1 and m2."""
    rel = np.swapaxes(_float(m1), -1, -2) @ _float(m2)
    cos = (np.trace(rel, axis1=-2, axis2=-1) - 1.0) * 0.5
    return np.arccos(np.clip(cos, -1.0, 1.0))


_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def euler_to_matrix(angles, order):
    """(..., n) angles in radians to (..., 3, 3) for axis letters `order` (e.g. "ZXY"), n <= 3.

    Intrinsic convention, as BVH uses: R = R_order[0](a0) @ R_order[1](a1) @ ...
    """
    angles = _float(angles)
    out = np.broadcast_to(np.eye(3, dtype=angles.dtype), angles.shape[:-1] + (3, 3)).copy()
    for n, axis in enumerate(order):
        k = _AXIS_INDEX[axis]
        i, j = (k + 1) % 3, (k + 2) % 3
        c, s = np.cos(angles[..., n]), np.sin(angles[..., n])
        r = np.zeros(angles.shape[:-1] + (3, 3), dtype=angles.dtype)
        r[..., k, k] = 1.0
        r[..., i, i], r[..., i, j], r[..., j, i], r[..., j, j] = c, -s, s, c
        out = out @ r
    return out


def matrix_to_euler(m, order):
    """(..., 3, 3) to (..., 3) angles in radians for three distinct axes `order` (intrinsic).

    Inverse of `euler_to_matrix`; the middle angle is in [-pi/2, pi/2].
    """
    m = _float(m)
    i, j, k = (_AXIS_INDEX[a] for a in order)
    sign = 1.0 if (j - i) % 3 == 1 else -1.0  # even permutation of XYZ
    mid = np.arcsin(np.clip(sign * m[..., i, k], -1.0, 1.0))
    first = np.arctan2(-sign * m[..., j, k], m[..., k, k])
    last = np.arctan2(-sign * m[..., i, j], m[..., i, i])
    # gimbal lock: only first + last (or first - last) is defined; put it all in `first`
    locked = np.abs(sign * m[..., i, k]) > 1.0 - 1e-12
    if np.any(locked):
        alt = np.arctan2(sign * m[..., k, j], m[..., j, j])
        first = np.where(locked, alt, first)
        last = np.where(locked, 0.0, last)
    return np.stack([first, mid, last], axis=-1)


def unit(v):
    """(..., 3) vectors scaled to unit length (zero vectors stay zero)."""
    v = np.asarray(v)
    return v / np.maximum(np.sqrt(np.einsum("...i,...i->...", v, v))[..., None], 1e-12)


_SKEW_TAKE = [0, 2, 1, 2, 0, 0, 1, 0, 0]
_SKEW_SIGN = np.array([0.0, -1, 1, 1, 0, -1, -1, 1, 0])


def skew(v):
    """(..., 3) vectors -> (..., 3, 3) cross-product matrices ([v] w = v x w)."""
    return (v[..., _SKEW_TAKE] * _SKEW_SIGN.astype(v.dtype, copy=False)).reshape(v.shape + (3,))


def shortest_arc(a, b):
    """(..., 3, 3) rotations taking directions a onto b (..., 3) by the smallest angle."""
    a, b = unit(_float(a)), unit(_float(b))
    k = skew(cross(a, b))
    c = np.einsum("...i,...i->...", a, b)
    opposite = c < -1 + 1e-9
    r = k @ k
    r *= (1.0 / (1.0 + np.where(opposite, 1.0, c)))[..., None, None]
    r += k
    r += np.eye(3, dtype=r.dtype)
    if np.any(opposite):  # half turn about any axis perpendicular to a
        perp = unit(cross(a, np.where(np.abs(a[..., :1]) < 0.9, [1.0, 0, 0], [0, 1.0, 0])))
        half = 2 * perp[..., :, None] * perp[..., None, :] - np.eye(3)
        r = np.where(opposite[..., None, None], half, r)
    return r


def nearest_rotation(m):
    """(..., 3, 3) the rotation nearest each (..., 3, 3) matrix m (Frobenius norm): a rotation
    that rounding has worn a little comes back orthonormal."""
    u, _, vt = np.linalg.svd(m)
    d = np.sign(np.linalg.det(u @ vt))
    u[..., :, 2] *= d[..., None]
    return u @ vt


def kabsch(a, b):
    """(..., 3, 3) rotations best taking direction sets a onto b, both (..., N, 3)."""
    return nearest_rotation(np.einsum("...ni,...nj->...ij", unit(b), unit(a)))

"""Torch twins of `rotations` for training; same names, shapes and conventions.

Imported only by training code and tests: the runtime in Blender never imports torch.
"""
import torch


def axis_angle_to_matrix(aa):
    """(..., 3) rotation vectors to (..., 3, 3) matrices (Rodrigues, safe at zero angle)."""
    angle2 = (aa * aa).sum(-1, keepdim=True)
    angle = torch.sqrt(angle2 + torch.finfo(aa.dtype).tiny)
    small = angle2 < 1e-8
    # sin(a)/a and (1-cos(a))/a^2 with Taylor series near zero keep gradients finite.
    s = torch.where(small, 1 - angle2 / 6, torch.sin(angle) / angle)
    c = torch.where(small, 0.5 - angle2 / 24, (1 - torch.cos(angle)) / angle2.clamp_min(1e-30))
    x, y, z = aa.unbind(-1)
    zero = torch.zeros_like(x)
    k = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).reshape(aa.shape[:-1] + (3, 3))
    eye = torch.eye(3, dtype=aa.dtype, device=aa.device).expand_as(k)
    return eye + s[..., None] * k + c[..., None] * (k @ k)


def matrix_to_rot6d(m):
    """(..., 3, 3) to (..., 6): first column then second column."""
    return torch.cat([m[..., :, 0], m[..., :, 1]], dim=-1)


def rot6d_to_matrix(d6):
    """(..., 6) to (..., 3, 3) by Gram-Schmidt."""
    a, b = d6[..., :3], d6[..., 3:]
    x = torch.nn.functional.normalize(a, dim=-1)
    b = b - (x * b).sum(-1, keepdim=True) * x
    y = torch.nn.functional.normalize(b, dim=-1)
    z = torch.cross(x, y, dim=-1)
    return torch.stack([x, y, z], dim=-1)


def quat_wxyz_to_matrix(q):
    """(..., 4) quaternions (w, x, y, z; normalised here) to (..., 3, 3) matrices."""
    q = torch.nn.functional.normalize(q, dim=-1)
    w, x, y, z = q.unbind(-1)
    m = torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], -1)
    return m.reshape(q.shape[:-1] + (3, 3))


def geodesic_angle(m1, m2):
    """Angle in radians between (..., 3, 3) rotations; clamped so the gradient stays finite."""
    rel = m1.transpose(-1, -2) @ m2
    cos = (rel.diagonal(dim1=-2, dim2=-1).sum(-1) - 1) * 0.5
    return torch.acos(cos.clamp(-1 + 1e-7, 1 - 1e-7))


def unit(v):
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def skew(v):
    """(..., 3) -> (..., 3, 3) cross-product matrices."""
    x, y, z = v.unbind(-1)
    zero = torch.zeros_like(x)
    return torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).reshape(v.shape[:-1] + (3, 3))


def shortest_arc(a, b):
    """(..., 3, 3) rotations taking directions a onto b by the smallest angle (a, b not opposite)."""
    a, b = unit(a), unit(b)
    k = skew(torch.cross(a, b, dim=-1))
    c = (a * b).sum(-1).clamp_min(-1 + 1e-6)
    eye = torch.eye(3, dtype=a.dtype, device=a.device)
    return eye + k + (k @ k) / (1.0 + c)[..., None, None]


def kabsch(a, b):
    """(..., 3, 3) rotations best taking direction sets a onto b, both (..., N, 3)."""
    h = torch.einsum("...ni,...nj->...ij", unit(b), unit(a))
    u, _, vt = torch.linalg.svd(h)
    d = torch.sign(torch.det(u @ vt))
    u = torch.cat([u[..., :, :2], u[..., :, 2:] * d[..., None, None]], dim=-1)
    return u @ vt


def matrix_to_axis_angle(m):
    """(..., 3, 3) to (..., 3) rotation vectors through the quaternion (w >= 0), with
    gradients finite at zero angle; for rotations short of a half turn."""
    tr = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    w = 0.5 * torch.sqrt((1 + tr).clamp_min(1e-8))
    v = torch.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]],
                    -1) / (4 * w[..., None])
    n2 = (v * v).sum(-1, keepdim=True)
    n = torch.sqrt(n2 + 1e-20)
    factor = torch.where(n2 < 1e-12, 2 / w[..., None], 2 * torch.atan2(n, w[..., None]) / n)
    return v * factor


def geodesic(a, b):
    """Geodesic angle (radians) between rotation batches a, b (..., 3, 3), per rotation (...)."""
    cos = ((a.transpose(-1, -2) @ b).diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2
    return torch.acos(cos.clamp(-1 + 1e-6, 1 - 1e-6))

"""Torch twin of `ikgat` for training: the same parameters (names and shapes) and math."""
import numpy as np
import torch
from torch import nn

from ..ik.ikgat import (LEAF_JOINTS, LEAF_PARENTS, MIRROR_FEATURES, MIRROR_SIGN, NON_LEAF_JOINTS, NUM_FEATURES, OUTPUTS,
                        SINGLE_CHILD_JOINTS, SINGLE_CHILDREN, hop_distance)
from .rotations import kabsch, rot6d_to_matrix, shortest_arc, skew, unit
from ..core.skeleton import CHILDREN, MIRROR, MULTI, NUM_JOINTS, PARENT_OR_SELF


def twist_matrix(axis, cos_sin):
    cs = cos_sin / cos_sin.norm(dim=-1, keepdim=True).clamp_min(1e-9)
    c, s = cs[..., 0:1, None], cs[..., 1:2, None]
    k = skew(axis)
    return torch.eye(3, dtype=axis.dtype) + s * k + (1 - c) * (k @ k)


def root_rotation(positions, rest):
    kids = list(CHILDREN[0])
    return kabsch(rest[..., kids, :] - rest[..., :1, :], positions[..., kids, :] - positions[..., :1, :])


def assemble(positions, rest, twist, leaf, correction=None):
    """Local rotations (B, 24, 3, 3); the same construction as ikgat.assemble. correction:
    (B, 24, 3, 3) in the pelvis's frame for the joints that are not leaves, or None."""
    world = [None] * NUM_JOINTS
    for j in MULTI:
        kids = list(CHILDREN[j])
        world[j] = kabsch(rest[..., kids, :] - rest[..., j:j + 1, :],
                          positions[..., kids, :] - positions[..., j:j + 1, :])
    r0 = world[0][..., None, :, :]
    a = unit(rest[..., SINGLE_CHILDREN, :] - rest[..., SINGLE_CHILD_JOINTS, :])
    d = torch.einsum("...ba,...b->...a", r0,
                     positions[..., SINGLE_CHILDREN, :] - positions[..., SINGLE_CHILD_JOINTS, :])
    single = r0 @ shortest_arc(a, d) @ twist_matrix(a, twist[..., SINGLE_CHILD_JOINTS, :])
    for n, j in enumerate(SINGLE_CHILD_JOINTS):
        world[j] = single[..., n, :, :]
    if correction is not None:
        r0 = world[0]
        for j in NON_LEAF_JOINTS:
            world[j] = r0 @ correction[..., j, :, :] @ (r0.transpose(-1, -2) @ world[j])
    for j, p in zip(LEAF_JOINTS, LEAF_PARENTS):
        world[j] = world[p] @ leaf[..., j, :, :]
    world = torch.stack(world, dim=-3)
    local = world[..., list(PARENT_OR_SELF), :, :].transpose(-1, -2) @ world
    return torch.cat([world[..., :1, :, :], local[..., 1:, :, :]], dim=-3)


def features(positions, rest):
    r0 = root_rotation(positions, rest)
    canon = torch.einsum("...ab,...ja->...jb", r0, positions - positions[..., :1, :])
    return torch.cat([canon, canon - canon[..., list(PARENT_OR_SELF), :], rest - rest[..., list(PARENT_OR_SELF), :],
                      rest - rest[..., :1, :]], dim=-1)


class Layer(nn.Module):
    def __init__(self, dim, hidden, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, h, mask):
        b, n, d = h.shape
        dh = d // self.heads
        qkv = self.qkv(self.norm1(h)).reshape(b, n, 3, self.heads, dh)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        att = torch.softmax(q @ k.transpose(-1, -2) / dh ** 0.5 + mask, dim=-1)
        h = h + self.proj((att @ v).transpose(1, 2).reshape(b, n, d))
        return h + self.fc2(torch.relu(self.fc1(self.norm2(h))))


class IkGatTorch(nn.Module):
    def __init__(self, dim=32, hidden=128, heads=2, layers=3, hops=2, arch="ikgat-v2"):
        super().__init__()
        self.config = {"arch": arch, "dim": dim, "hidden": hidden, "heads": heads,
                       "layers": layers, "hops": hops}
        self.embed = nn.Parameter(0.02 * torch.randn(NUM_JOINTS, dim))
        self.inp = nn.Linear(NUM_FEATURES, dim)
        self.layers = nn.ModuleList(Layer(dim, hidden, heads) for _ in range(layers))
        self.out_norm, self.out = nn.LayerNorm(dim), nn.Linear(dim, OUTPUTS[arch])
        nn.init.zeros_(self.out.weight)   # start from the swing-only solution
        nn.init.zeros_(self.out.bias)
        mask = torch.where(torch.from_numpy(hop_distance()) <= hops, 0.0, -1e9)
        self.register_buffer("mask", mask, persistent=False)

    def network(self, x):
        h = self.inp(x) + self.embed
        for layer in self.layers:
            h = layer(h, self.mask.to(h.dtype))
        return self.out(self.out_norm(h))

    def forward(self, positions, rest, symmetric=False, noisy=None):
        """Local rotations; symmetric: averaged with the mirrored problem's, as IkGat does by
        default; noisy: (B,) bool, the poses whose bone directions are corrected (ikgat-v2; None:
        none)."""
        x = features(positions, rest)
        out = self.network(x)
        if symmetric:
            sign = torch.from_numpy(np.tile(MIRROR_SIGN, out.shape[-1] // 6)).to(out.dtype)
            mirrored = self.network(x[:, list(MIRROR)] * torch.from_numpy(MIRROR_FEATURES).to(x.dtype))
            out = 0.5 * (out + mirrored[:, list(MIRROR)] * sign)
        six = torch.tensor([1.0, 0, 0, 0, 1.0, 0], dtype=out.dtype)
        twist = out[..., :2] + torch.tensor([1.0, 0.0], dtype=out.dtype)
        leaf = rot6d_to_matrix(out[..., :6] + six)
        correction = None
        if out.shape[-1] == 12 and noisy is not None:
            eye = torch.eye(3, dtype=out.dtype)
            correction = torch.where(noisy[:, None, None, None], rot6d_to_matrix(out[..., 6:] + six), eye)
        return assemble(positions, rest, twist, leaf, correction)

    def numpy_params(self):
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}


def grown_from_v1(arrays, model):
    """Parameters for `model` (an ikgat-v2 IkGatTorch of the same dim, with as many or more hidden
    units and layers) from ikgat-v1 arrays {name: array} that compute the same rotations: the
    added hidden units read nothing out (zero fc2 columns), added layers add nothing (zero proj
    and fc2), and the correction outputs start at zero (the identity)."""
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    for name, value in state.items():
        old = arrays.get(name)
        if name.endswith(("proj.weight", "proj.bias", "fc2.weight", "fc2.bias")) or name.startswith("out."):
            value.zero_()
        if old is None:
            continue
        old = torch.from_numpy(np.asarray(old)).to(value.dtype)
        if name.endswith("fc1.bias"):
            value.zero_()
        value[tuple(slice(0, n) for n in old.shape)] = old
    return state

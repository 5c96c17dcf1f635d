"""Torch twin of `smplik` for training: the same parameters (names and shapes) and math."""
import torch
from torch import nn

from .rotations_torch import rot6d_to_matrix
from .skeleton import NUM_JOINTS
from .smplik import _PARENTS0, _SLOT_WEIGHTS, SLOT


class Block(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.norm, self.fc1, self.fc2 = nn.LayerNorm(width), nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


def slot_rows(feats, mask):
    w = feats[..., 15:16] * mask[..., None]
    kind = feats[..., :3] * w
    return torch.cat([feats[..., 3:6] * kind[..., :1], kind[..., :1], feats[..., 6:12] * kind[..., 1:2], kind[..., 1:2],
                      feats[..., 3:6] * kind[..., 2:3], feats[..., 12:15] * kind[..., 2:3], kind[..., 2:3]], -1)


_VALUES = [i for i in range(SLOT) if i not in _SLOT_WEIGHTS]
_OWNER = [0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]   # which weight each value column is divided by


def network_input(joints, feats, mask, rest):
    rows = slot_rows(feats, mask)
    onehot = (joints[..., None] == torch.arange(NUM_JOINTS)).to(rows.dtype)
    slots = torch.einsum("bej,bef->bjf", onehot, rows)
    wsum = slots[..., _SLOT_WEIGHTS]
    w = wsum.clamp_max(1)
    values = slots[..., _VALUES] / wsum.clamp_min(1e-6)[..., _OWNER]
    wp = w[..., 0::2, None]
    points = torch.stack([values[..., 0:3], values[..., 9:12]], -2)
    centre = (points * wp).sum((1, 2)) / wp.sum((1, 2)).clamp_min(1e-9)
    points = points - centre[:, None, None] * (wp > 0)
    out = torch.cat([points[..., 0, :], w[..., 0:1], values[..., 3:9], w[..., 1:2], points[..., 1, :],
                     values[..., 12:15], w[..., 2:3], rest - rest[:, :1]], -1)
    return out.reshape(len(joints), -1), centre


class SmplIkTorch(nn.Module):
    def __init__(self, width=512, hidden=256, blocks=3):
        super().__init__()
        self.config = {"arch": "smplik-v2", "width": width, "hidden": hidden, "blocks": blocks}
        self.inp = nn.Linear(NUM_JOINTS * (SLOT + 3), width)
        self.blocks = nn.ModuleList(Block(width, hidden) for _ in range(blocks))
        self.out_norm, self.out = nn.LayerNorm(width), nn.Linear(width, NUM_JOINTS * 6 + 3)
        nn.init.zeros_(self.out.bias)
        nn.init.normal_(self.out.weight, std=1e-3)

    def network(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = b(h)
        return self.out(self.out_norm(h))

    def forward(self, joints, feats, mask, positional, rest):
        """Local rotations (B, 24, 3, 3) and trans (B, 3); same as SmplIk.predict."""
        x, centre = network_input(joints, feats, mask, rest)
        out = self.network(x)
        rot6 = out[:, :NUM_JOINTS * 6].reshape(-1, NUM_JOINTS, 6) + torch.tensor([1.0, 0, 0, 0, 1.0, 0], dtype=out.dtype)
        world = rot6d_to_matrix(rot6)
        local = torch.cat([world[:, :1], world[:, _PARENTS0[1:]].transpose(-1, -2) @ world[:, 1:]], 1)
        return local, centre + out[:, NUM_JOINTS * 6:] - rest[:, 0]

    def numpy_params(self):
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}

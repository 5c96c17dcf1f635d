"""Torch twin of `ik.flow` for training: the same parameters (names and shapes) and math,
plus the torch cost J (`ik.cost`) the origin is trained to lower."""
import numpy as np
import torch
from torch import nn

from ..core.skeleton import CHILDREN, NUM_JOINTS, PARENTS
from ..ik.cost import EFFORT_UNIT, GRAVITY
from ..ik.flow import ARCH, DIMS, LOG_SCALE_BOUND


class Coupling(nn.Module):
    def __init__(self, context, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(DIMS + context, hidden), nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 2 * DIMS)
        nn.init.zeros_(self.out.weight)   # every coupling starts as the identity
        nn.init.zeros_(self.out.bias)

    def forward(self, kept, context, free):
        h = torch.relu(self.fc2(torch.relu(self.fc1(torch.cat([kept, context], -1)))))
        out = self.out(h)
        s = LOG_SCALE_BOUND * torch.tanh(out[:, :DIMS] / LOG_SCALE_BOUND)
        return s * free, out[:, DIMS:] * free


class Prior(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(DIMS - 3))
        self.register_buffer("std", torch.ones(DIMS - 3))


def joint_masks(couplings, seed=0):
    """(couplings, 72) masks: pairs of complementary halves of the joints (all three components
    of a joint together), a new random half for each pair."""
    gen = torch.Generator().manual_seed(seed)
    masks = []
    for k in range(couplings):
        if k % 2 == 0:
            half = torch.zeros(NUM_JOINTS)
            half[torch.randperm(NUM_JOINTS, generator=gen)[:NUM_JOINTS // 2]] = 1.0
        masks.append((half if k % 2 == 0 else 1 - half).repeat_interleave(3))
    return torch.stack(masks)


class PoseFlowTorch(nn.Module):
    def __init__(self, base_width=512, context=128, hidden=256, couplings=8, seed=0, base_sha256=None):
        super().__init__()
        self.config = {"arch": ARCH, "base_width": base_width, "context": context, "hidden": hidden,
                       "couplings": couplings, "base_sha256": base_sha256}
        self.context = nn.Linear(base_width, context)
        self.couplings = nn.ModuleList(Coupling(context, hidden) for _ in range(couplings))
        self.register_buffer("masks", joint_masks(couplings, seed))
        self.prior = Prior()

    def encode(self, features):
        return torch.relu(self.context(features))

    def forward(self, z, context):
        x = z
        for k, c in enumerate(self.couplings):
            s, t = c(x * self.masks[k], context, 1 - self.masks[k])
            x = x * torch.exp(s) + t
        return x

    def inverse(self, x, context):
        z, logdet = x, torch.zeros(len(x), dtype=x.dtype)
        for k in reversed(range(len(self.couplings))):
            s, t = self.couplings[k](z * self.masks[k], context, 1 - self.masks[k])
            z = (z - t) * torch.exp(-s)
            logdet = logdet + s.sum(-1)
        return z, logdet

    def numpy_params(self):
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}


def _leaves_first():
    order = [0]
    for j in order:
        order += list(CHILDREN[j])
    return order[::-1]


class TorchCost:
    """J (`ik.cost.pose_cost`, without the limit, balance and collision terms, which refinement
    sees to) for torch poses, with one body's segments (`ik.cost.Segments`)."""

    def __init__(self, segments, mean, std):
        self.mass = torch.tensor(segments.mass, dtype=torch.float32)
        self.centre = torch.tensor(segments.centre, dtype=torch.float32)
        self.mean, self.std = mean, std
        # carry[j, k] = 1 when k is j or below it: the mass joint j holds
        carry = np.zeros((NUM_JOINTS, NUM_JOINTS), np.float32)
        for k in range(NUM_JOINTS):
            j = k
            while j >= 0:
                carry[j, k] = 1.0
                j = PARENTS[j]
        self.carry = torch.from_numpy(carry)

    def __call__(self, local_aa, world, pos):
        """local_aa (B, 24, 3), world rotations (B, 24, 3, 3), positions (B, 24, 3) -> J (B,)."""
        prior = 0.5 * (((local_aa[:, 1:].reshape(len(pos), -1) - self.mean) / self.std) ** 2).sum(-1)
        com = pos + torch.einsum("bjac,jc->bja", world, self.centre)
        carried = self.carry @ self.mass                                           # (24,)
        moment = torch.einsum("jk,bkc->bjc", self.carry * self.mass, com)
        lever = moment - carried[:, None] * pos
        effort = (lever[..., [0, 2]].norm(dim=-1) * GRAVITY)[:, 1:].sum(-1)
        return prior + effort / EFFORT_UNIT

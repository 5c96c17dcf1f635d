"""Torch twin of `ik.hypotheses` for training: the same parameters (names and shapes) and math,
and the winner-takes-all loss."""
import torch
from torch import nn

from ..ik.hypotheses import ARCH, DIMS


class HypothesesTorch(nn.Module):
    def __init__(self, base_width=512, hidden=256, count=8, base_sha256=None):
        super().__init__()
        self.config = {"arch": ARCH, "base_width": base_width, "hidden": hidden, "count": count,
                       "base_sha256": base_sha256}
        self.count = count
        self.fc1, self.fc2 = nn.Linear(base_width, hidden), nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, count * DIMS)
        nn.init.normal_(self.out.weight, std=1e-3)   # near the deterministic pose, each a little apart
        nn.init.zeros_(self.out.bias)

    def forward(self, features):
        h = torch.relu(self.fc2(torch.relu(self.fc1(features))))
        return self.out(h).reshape(len(features), self.count, DIMS)

    def reorder(self, order):
        """Put the hypotheses in `order` (a permutation of range(count)), in place."""
        rows = torch.cat([torch.arange(k * DIMS, (k + 1) * DIMS) for k in order])
        with torch.no_grad():
            self.out.weight.copy_(self.out.weight[rows])
            self.out.bias.copy_(self.out.bias[rows])

    def numpy_params(self):
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}


def winner_takes_all(errors, relax=0.05):
    """Relaxed winner-takes-all over errors (B, K): the nearest hypothesis's error, plus `relax`
    times the mean of all of them (so a hypothesis that never wins still moves toward the data
    instead of drifting where no pose is). Returns (loss, winners (B,))."""
    best, winners = errors.min(1)
    return (best + relax * errors.mean(1)).mean(), winners

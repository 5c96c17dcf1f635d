"""Torch twin of `ik.hypotheses` for training: the same parameters (names and shapes) and math,
and the winner-takes-all loss."""
import torch
from torch import nn

from ..core.skeleton import NUM_JOINTS
from ..ik.hypotheses import ARCH, ARCHS, DIMS
from ..ik.slots import Slot
from .smplik import Block, residual_trunk


class HypothesesTorch(nn.Module):
    """trunk_blocks=None: a v1 head over the deterministic network's hidden layer (forward
    reads those features); otherwise a v2 head with a trunk of its own of that many residual
    blocks (forward reads the network input, `smplik.network_input`)."""

    def __init__(self, base_width=512, hidden=256, count=8, base_sha256=None, trunk_blocks=None, trunk_hidden=256):
        super().__init__()
        if trunk_blocks is None:
            self.config = {"arch": ARCHS[0], "base_width": base_width, "hidden": hidden,
                           "count": count, "base_sha256": base_sha256}
        else:
            inputs = NUM_JOINTS * Slot.INPUT
            self.config = {"arch": ARCH, "base_width": base_width, "hidden": hidden, "count": count,
                           "base_sha256": base_sha256, "inputs": inputs, "trunk_blocks": trunk_blocks,
                           "trunk_hidden": trunk_hidden}
            self.inp = nn.Linear(inputs, base_width)
            self.blocks = nn.ModuleList(Block(base_width, trunk_hidden) for _ in range(trunk_blocks))
        self.trunk = trunk_blocks is not None
        self.count = count
        self.fc1, self.fc2 = nn.Linear(base_width, hidden), nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, count * DIMS)
        nn.init.normal_(self.out.weight, std=1e-3)   # near the deterministic pose, each a little apart
        nn.init.zeros_(self.out.bias)

    def forward(self, x):
        if self.trunk:
            x = residual_trunk(self.inp, self.blocks, x)
            x = nn.functional.layer_norm(x, x.shape[-1:])
        h = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        return self.out(h).reshape(len(x), self.count, DIMS)

    def reorder(self, order):
        """Put the hypotheses in `order` (a permutation of range(count)), in place."""
        rows = torch.cat([torch.arange(k * DIMS, (k + 1) * DIMS) for k in order])
        with torch.no_grad():
            self.out.weight.copy_(self.out.weight[rows])
            self.out.bias.copy_(self.out.bias[rows])

    def load_parts(self, arrays, prefixes):
        """Copy the arrays {name: array} whose names start with one of `prefixes` into this
        head (a deterministic network's trunk, a v1 head's MLP); shapes must agree."""
        state = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in arrays.items()
                 if k.startswith(tuple(prefixes)) and not k.endswith("_t")}
        missing = [k for k in self.state_dict() if k.startswith(tuple(prefixes)) and k not in state]
        if missing:
            raise ValueError(f"no {', '.join(missing[:3])} to start from")
        self.load_state_dict(state, strict=False)

    def numpy_params(self):
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}


def winner_takes_all(errors, relax=0.05):
    """Relaxed winner-takes-all over errors (B, K): the nearest hypothesis's error, plus `relax`
    times the mean of all of them (so a hypothesis that never wins still moves toward the data
    instead of drifting where no pose is). Returns (loss, winners (B,))."""
    best, winners = errors.min(1)
    return (best + relax * errors.mean(1)).mean(), winners

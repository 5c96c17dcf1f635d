"""Torch twin of `smplik` for training: the same parameters (names and shapes) and math."""
import torch
from torch import nn

from .rotations_torch import rot6d_to_matrix
from .skeleton import NUM_JOINTS
from .smplik import NUM_FEATURES


class Block(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.norm, self.fc1, self.fc2 = nn.LayerNorm(width), nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class SmplIkTorch(nn.Module):
    def __init__(self, dim=128, hidden=256, dec_dim=256, dec_hidden=512, enc_blocks=2, dec_blocks=3):
        super().__init__()
        self.config = {"arch": "smplik-v1", "dim": dim, "hidden": hidden, "dec_dim": dec_dim,
                       "dec_hidden": dec_hidden, "enc_blocks": enc_blocks, "dec_blocks": dec_blocks}
        self.embed = nn.Parameter(0.02 * torch.randn(NUM_JOINTS, dim))
        self.inp = nn.Linear(NUM_FEATURES, dim)
        self.shape = nn.Linear(NUM_JOINTS * 3, dim)
        self.mix = nn.Linear(dim, dim)
        self.enc1 = nn.ModuleList(Block(dim, hidden) for _ in range(enc_blocks))
        self.enc2 = nn.ModuleList(Block(dim, hidden) for _ in range(enc_blocks))
        self.dec_in = nn.Linear(2 * dim, dec_dim)
        self.dec = nn.ModuleList(Block(dec_dim, dec_hidden) for _ in range(dec_blocks))
        self.out_norm, self.out = nn.LayerNorm(dec_dim), nn.Linear(dec_dim, NUM_JOINTS * 6 + 3)
        nn.init.zeros_(self.out.bias)
        nn.init.normal_(self.out.weight, std=1e-3)

    def network(self, joints, feats, mask, rest):
        shape = self.shape((rest - rest[:, :1]).reshape(len(rest), -1))
        tok = self.inp(feats) + self.embed[joints] + shape[:, None]
        w = (mask / mask.sum(1, keepdim=True).clamp_min(1))[..., None]
        for b in self.enc1:
            tok = b(tok)
        proto = (tok * w).sum(1)
        tok = tok + self.mix(proto)[:, None]
        for b in self.enc2:
            tok = b(tok)
        proto = (tok * w).sum(1)
        h = self.dec_in(torch.cat([proto, shape], -1))
        for b in self.dec:
            h = b(h)
        return self.out(self.out_norm(h))

    def forward(self, joints, feats, mask, positional, rest):
        """Local rotations (B, 24, 3, 3) and trans (B, 3); same as SmplIk.predict."""
        wpos = (mask * positional)[..., None]
        centre = (feats[..., 3:6] * wpos).sum(1) / wpos.sum(1).clamp_min(1)
        feats = torch.cat([feats[..., :3], feats[..., 3:6] - centre[:, None] * wpos, feats[..., 6:]], -1)
        out = self.network(joints, feats, mask, rest)
        rot6 = out[:, :NUM_JOINTS * 6].reshape(-1, NUM_JOINTS, 6) + torch.tensor([1.0, 0, 0, 0, 1.0, 0], dtype=out.dtype)
        return rot6d_to_matrix(rot6), centre + out[:, NUM_JOINTS * 6:] - rest[:, 0]

    def numpy_params(self):
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}

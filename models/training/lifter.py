"""Torch twin of `photo.lifter` for training (the same parameter names, shapes and math) and
its training views: posed bodies seen through random cameras, their keypoints as a detector
would give them (noisy, some unseen)."""
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from ..core.skeleton import NUM_JOINTS
from ..photo.lifter import ARCH, INPUT_DIM, MIN_SEEN, NUM_KEYPOINTS
from .batches import fk
from .rotations import axis_angle_to_matrix


class LifterTorch(nn.Module):
    def __init__(self, width=512, blocks=2):
        super().__init__()
        self.config = {"arch": ARCH, "width": width, "blocks": blocks}
        self.fc_in = nn.Linear(INPUT_DIM, width)
        for b in range(blocks):
            setattr(self, f"block{b}", nn.ModuleDict({"fc1": nn.Linear(width, width), "fc2": nn.Linear(width, width)}))
        self.blocks = blocks
        self.out = nn.Linear(width, 3 * NUM_JOINTS)

    def forward(self, x):
        h = torch.relu(self.fc_in(x))
        for b in range(self.blocks):
            block = getattr(self, f"block{b}")
            h = h + torch.relu(block["fc2"](torch.relu(block["fc1"](h))))
        return self.out(h).reshape(len(x), NUM_JOINTS, 3)

    def numpy_params(self):
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}


def features(rays, seen):
    """photo.lifter.features in torch: rays (B, K, 2), seen (B, K) -> (B, INPUT_DIM)."""
    rays = torch.where(seen[..., None] > 0, rays, torch.zeros(()))
    count = seen.sum(-1, keepdim=True).clamp(min=1.0)
    centre = (rays * seen[..., None]).sum(-2) / count
    offset = (rays - centre[..., None, :]) * seen[..., None]
    spread = ((offset ** 2).sum((-1, -2)) / count[..., 0]).sqrt()
    normed = offset / spread.clamp(min=1e-9)[..., None, None]
    return torch.cat([normed.flatten(-2), seen, centre], -1)


@dataclass(frozen=True)
class Views:
    """How training views are drawn: the camera's elevation (degrees, + above the person
    looking down), roll (degrees either way), distance (metres), how far off the camera's axis
    the person stands (radians either way), how far the focal length may be wrong (a factor
    either way), the 2D noise's largest standard deviation (a share of the keypoints' spread),
    the chance of a keypoint being far off, and the largest share of keypoints unseen."""

    elevation: tuple = (-15.0, 45.0)
    roll: float = 8.0
    distance: tuple = (2.0, 10.0)
    off_axis: float = 0.5
    focal_error: float = 2.0
    noise: float = 0.08
    outliers: float = 0.03
    unseen: float = 0.35

    def record(self):
        return dict(self.__dict__)


def _about(axis, angle):
    """(B, 3, 3) rotations by `angle` (B,) radians about a fixed axis (0, 1, 2)."""
    vec = torch.zeros(len(angle), 3)
    vec[:, axis] = angle
    return axis_angle_to_matrix(vec)


class KeypointTable(NamedTuple):
    """Where keypoints ride on a body: owners (K,) long, the joint each rides on; offsets
    (K, 3) from that joint in the rest pose (metres) of a body `size` metres tall."""

    owners: torch.Tensor
    offsets: torch.Tensor
    size: float


def keypoint_points(rot, rest, table, spread=0.0, gen=None):
    """(joints (B, 24, 3), keypoint points (B, K, 3)) of poses in the body's frame: each
    keypoint point rides on joint owners[k] at offsets[k] of `table` (a KeypointTable, or its
    three values as a tuple), scaled to each body's own height. spread > 0 (metres) moves each
    pose's keypoints by that standard deviation in their joint's frame (drawn with `gen`): where
    a detector puts a shoulder or a hip on a person is only roughly where the joint is."""
    owners, offsets, size = table
    world, pos = fk(rot, rest)
    height = rest[:, :, 1].max(1).values - rest[:, :, 1].min(1).values
    scaled = offsets[None] * (height / size)[:, None, None]
    if spread > 0:
        scaled = scaled + spread * torch.randn((len(rot),) + tuple(offsets.shape), generator=gen)
    points = pos[:, owners] + torch.einsum("bkij,bkj->bki", world[:, owners], scaled)
    return pos, points


def training_views(pos, points, gen, views=Views()):
    """(features (B, INPUT_DIM), targets (B, 24, 3)) of joints pos (B, 24, 3) and keypoint
    points (B, K, 3) seen through cameras drawn as `views` says. Targets: the joints less the
    pelvis in the camera's frame."""
    b = len(pos)

    def uniform(lo, hi, *shape):
        return lo + (hi - lo) * torch.rand(*(shape or (b,)), generator=gen)

    turn = _about(2, torch.deg2rad(uniform(-views.roll, views.roll))) @ \
        _about(0, torch.deg2rad(uniform(*views.elevation)))
    centred = lambda x: torch.einsum("bij,bkj->bki", turn, x - pos[:, :1])   # noqa: E731
    joints, kp = centred(pos), centred(points)
    distance = uniform(*views.distance)
    place = torch.stack([distance * torch.tan(uniform(-views.off_axis, views.off_axis)),
                         distance * torch.tan(uniform(-views.off_axis, views.off_axis)), -distance], -1)
    cam = kp + place[:, None]
    rays = cam[..., :2] / -cam[..., 2:]
    rays = rays * torch.exp(uniform(-np.log(views.focal_error), np.log(views.focal_error)))[:, None, None]
    centre = rays.mean(1, keepdim=True)
    spread = ((rays - centre) ** 2).sum(-1).mean(1).sqrt()
    sigma = (uniform(0.0, views.noise) * spread)[:, None, None]
    rays = rays + sigma * torch.randn(rays.shape, generator=gen)
    far = torch.rand(b, NUM_KEYPOINTS, 1, generator=gen) < views.outliers
    rays = rays + far * 0.3 * spread[:, None, None] * torch.randn(rays.shape, generator=gen)
    seen = (torch.rand(b, NUM_KEYPOINTS, generator=gen) >= uniform(0.0, views.unseen)[:, None]).float()
    seen[seen.sum(1) < MIN_SEEN] = 1.0
    return features(rays, seen), joints


def mpjpe(pred, target):
    """Mean joint distance (metres) of (B, 24, 3) batches."""
    return (pred - target).norm(dim=-1).mean()

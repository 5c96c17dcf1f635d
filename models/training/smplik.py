"""Torch twin of `smplik` for training: the same parameters (names and shapes) and math."""
import torch
from torch import nn

from .effectors import effector_loss
from .batches import fk
from .rotations import geodesic, rot6d_to_matrix
from ..core.skeleton import MIRROR, NUM_JOINTS, PARENT_OR_SELF
from ..ik.effectors import Column
from ..ik.slots import MIRROR_OUT, OUT_SIGN, SLOT_KIND, SLOT_SIGN, SLOT_SOURCE, Slot


class Block(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.norm, self.fc1, self.fc2 = nn.LayerNorm(width), nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


def residual_trunk(inp, blocks, x):
    """The residual trunk (`nn.residual_trunk`'s torch twin) up to its last hidden layer,
    before the final norm: x (B, in) -> (B, width)."""
    h = inp(x)
    for b in blocks:
        h = b(h)
    return h


def network_input(joints, feats, mask, rest):
    """The same slots, weights and centre as smplik.network_input (its column tables), for
    tensors: joints (B, E), feats (B, E, Column.COUNT), mask (B, E), rest (B, 24, 3)."""
    kind_weight = feats[..., Column.KIND] * (feats[..., Column.WEIGHT] * mask)[..., None]
    rows = feats[..., SLOT_SOURCE] * kind_weight[..., SLOT_KIND]
    onehot = (joints[..., None] == torch.arange(NUM_JOINTS)).to(rows.dtype)
    slots = torch.einsum("bej,bef->bjf", onehot, rows)
    wsum = slots[..., Slot.WEIGHTS]
    w = wsum.clamp_max(1)
    slots = torch.where(_IS_WEIGHT, w[..., SLOT_KIND], slots / wsum.clamp_min(1e-6)[..., SLOT_KIND])
    wp = w[..., 0::2]
    centre = ((slots[..., Slot.POSITION] * wp[..., :1] + slots[..., Slot.LOOK_TARGET] * wp[..., 1:]).sum(1)
              / wp.sum((1, 2)).clamp_min(1e-9)[:, None])
    shift = torch.einsum("bjkc,kcf->bjf", centre[:, None, None] * (wp > 0)[..., None], _PLACE.to(slots.dtype))
    return torch.cat([slots - shift, rest - rest[:, :1]], -1).reshape(len(joints), -1), centre


_IS_WEIGHT = torch.zeros(Slot.WIDTH, dtype=torch.bool)
_IS_WEIGHT[Slot.WEIGHTS] = True
_PLACE = torch.zeros(2, 3, Slot.WIDTH, dtype=torch.float64)   # puts a centre shift under the position / look-at columns
_PLACE[0, :, Slot.POSITION] = _PLACE[1, :, Slot.LOOK_TARGET] = torch.eye(3, dtype=torch.float64)


class SmplIkTorch(nn.Module):
    def __init__(self, width=512, hidden=256, blocks=3):
        super().__init__()
        self.config = {"arch": "smplik-v2", "width": width, "hidden": hidden, "blocks": blocks}
        self.inp = nn.Linear(NUM_JOINTS * Slot.INPUT, width)
        self.blocks = nn.ModuleList(Block(width, hidden) for _ in range(blocks))
        self.out_norm, self.out = nn.LayerNorm(width), nn.Linear(width, NUM_JOINTS * 6 + 3)
        nn.init.zeros_(self.out.bias)
        nn.init.normal_(self.out.weight, std=1e-3)

    def network(self, x, features=False):
        """Raw outputs; with features, also the last hidden layer normalised (no scale or
        shift), which conditions the flow (`SmplIk.network`)."""
        h = residual_trunk(self.inp, self.blocks, x)
        out = self.out(self.out_norm(h))
        return (out, nn.functional.layer_norm(h, h.shape[-1:])) if features else out

    def forward(self, joints, feats, mask, rest, symmetric=False, features=False):
        """Local rotations (B, 24, 3, 3) and trans (B, 3); same as SmplIk.predict (symmetric:
        averaged with the mirrored problem's answer, as the numpy runtime does by default;
        features: also the given problem's normalised last hidden layer)."""
        x, centre = network_input(joints, feats, mask, rest)
        out, hidden = self.network(x, features=True)
        if symmetric:
            sign = torch.from_numpy(SLOT_SIGN).to(x.dtype)
            mirrored = (x.reshape(len(x), NUM_JOINTS, -1)[:, list(MIRROR)] * sign).reshape(len(x), -1)
            out = 0.5 * (out + self.network(mirrored)[:, MIRROR_OUT] * torch.from_numpy(OUT_SIGN).to(x.dtype))
        rot6 = (out[:, :NUM_JOINTS * 6].reshape(-1, NUM_JOINTS, 6)
                + torch.tensor([1.0, 0, 0, 0, 1.0, 0], dtype=out.dtype))
        world = rot6d_to_matrix(rot6)
        local = torch.cat([world[:, :1], world[:, list(PARENT_OR_SELF[1:])].transpose(-1, -2) @ world[:, 1:]], 1)
        trans = centre + out[:, NUM_JOINTS * 6:] - rest[:, 0]
        return (local, trans, hidden) if features else (local, trans)

    def numpy_params(self):
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}


def training_loss(model, batch, eff, joint_weight=5.0):
    """The deterministic SMPL-IK's loss for one batch: the mean geodesic error (radians) of
    the predicted local rotations against the batch's `rot` (B, 24, 3, 3), plus joint_weight x
    the mean joint position error (metres) after forward kinematics, plus the effector error
    (effectors.effector_loss) of the sets `eff` (make_effectors' tuple). batch: the true poses,
    a batches.PlacedBatch (its rest (B, 24, 3), world (B, 24, 3, 3) and pos (B, 24, 3))."""
    rot, rest, world, pos = batch.rot, batch.rest, batch.world, batch.pos
    joints, feats, mask, kinds, axes = eff
    local, trans = model(joints, feats, mask, rest)
    w_pred, p_pred = fk(local, rest, trans)
    return geodesic(local, rot).mean() + joint_weight * (p_pred - pos).norm(dim=-1).mean() + \
        effector_loss(w_pred, p_pred, world, eff)

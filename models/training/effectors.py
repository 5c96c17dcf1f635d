"""Random effector sets for training batches (torch), in the encoding the numpy runtime reads
(models.ik.effectors.Column), and the effector error of a predicted pose."""
import torch

from ..core.skeleton import NUM_JOINTS
from ..ik.effectors import KINDS, SIX_POINT_INDICES, Column
from .rotations import geodesic, matrix_to_rot6d, unit

MAX_EFFECTORS = 12   # the deterministic SMPL-IK's training sets; the flow's go to 16


def make_effectors(world, pos, gen, six_share=0.3, max_eff=MAX_EFFECTORS, equal_kinds=0.0):
    """Random effector sets for a batch of posed bodies, world rotations (B, 24, 3, 3) and
    positions (B, 24, 3) (metres): joints (B, E), feats (B, E, Column.COUNT), mask (B, E),
    kinds (B, E) (indices into KINDS), axes (B, E, 3) (look-at axes, in the joint's frame),
    E = max_eff. 3 to max_eff effectors, positions 60%, rotations 25%, look-ats 15%, the
    first a position; with the chance equal_kinds, a set follows SMPL-IK's protocol instead:
    kinds equally likely, the first three positions; with the chance six_share, SMPL-IK's six
    points. Draws from the torch.Generator `gen` in a fixed order, so a seed gives one set."""
    b = len(pos)
    joints = torch.argsort(torch.rand(b, NUM_JOINTS, generator=gen), dim=1)[:, :max_eff]
    count = torch.randint(3, max_eff + 1, (b,), generator=gen)
    u = torch.rand(b, max_eff, generator=gen)
    kinds = torch.where(u < 0.6, 0, torch.where(u < 0.85, 1, 2))
    kinds[:, 0] = 0  # without one position the body's place is unknown (as in scripts/benchmark.py)
    if equal_kinds > 0:
        protocol = torch.randint(0, 3, (b, max_eff), generator=gen)
        protocol[:, :3] = 0
        kinds = torch.where((torch.rand(b, generator=gen) < equal_kinds)[:, None], protocol, kinds)
    six = torch.rand(b, generator=gen) < six_share
    joints[six, :6] = torch.tensor(SIX_POINT_INDICES)
    kinds[six] = 0
    count[six] = 6
    mask = (torch.arange(max_eff)[None] < count[:, None]).float()
    rows = torch.arange(b)[:, None]
    p, g = pos[rows, joints], world[rows, joints]                       # (B, E, 3), (B, E, 3, 3)
    axes = unit(torch.randn(b, max_eff, 3, generator=gen))
    dist = 0.3 + 1.7 * torch.rand(b, max_eff, 1, generator=gen)
    look = p + dist * torch.einsum("beij,bej->bei", g, axes)
    weight = torch.where(torch.rand(b, max_eff, generator=gen) < 0.8, torch.ones(b, max_eff),
                         0.1 + 0.9 * torch.rand(b, max_eff, generator=gen))
    feats = torch.zeros(b, max_eff, Column.COUNT)
    feats[..., Column.KIND] = torch.nn.functional.one_hot(kinds, len(KINDS)).float()
    feats[..., Column.POINT] = torch.where((kinds == 0)[..., None], p, torch.where((kinds == 2)[..., None], look, 0.0))
    feats[..., Column.ROT6D] = torch.where((kinds == 1)[..., None], matrix_to_rot6d(g), 0.0)
    feats[..., Column.AXIS] = torch.where((kinds == 2)[..., None], axes, 0.0)
    feats[..., Column.WEIGHT] = weight
    return joints, feats, mask, kinds, axes


def effector_loss(w_pred, p_pred, world, eff):
    """Weighted mean effector error of predicted world rotations (B, 24, 3, 3) and positions
    (B, 24, 3) for the sets `eff` (make_effectors' tuple) drawn from the true world rotations
    `world`: 5 x metres for positions, radians for rotations, 1 - cos for look-ats."""
    joints, feats, mask, kinds, axes = eff
    rows = torch.arange(len(p_pred))[:, None]
    m = mask * feats[..., Column.WEIGHT]
    pe = (p_pred[rows, joints] - feats[..., Column.POINT]).norm(dim=-1)
    re = geodesic(w_pred[rows, joints], world[rows, joints])
    d = unit(feats[..., Column.POINT] - p_pred[rows, joints])
    le = 1 - (torch.einsum("beij,bej->bei", w_pred[rows, joints], axes) * d).sum(-1)
    return (m * torch.where(kinds == 0, 5 * pe, torch.where(kinds == 1, re, le))).sum() / m.sum()

"""Train SMPL-IK (effectors -> pose) and write numpy weights plus a JSON record.

    python scripts/train_smplik.py [--preset smoke|full] [--data FILE] [--out FILE]

--data is a file from scripts/build_dataset.py (default out/cmu_train_smpl.npz, built from
../shared/data/mocap/cmu_train on first use); whole clips listed in models/training/loop.py
are held out for validation. Each training pose gets a random body shape, mirroring, a random
heading and position, and a random set of 3-12 effectors (the first a position, the others
positions 60%, rotations 25%, look-ats 15%), or SMPL-IK's six points (half the poses;
--six-share). Each limb and the trunk takes its rotations from another frame 20% of the time
(--swap), so the network meets new combinations of the recorded limbs instead of memorising
whole poses; --jitter also sets single joints to rest or turns them further, and --bend
turns bones further with their twist kept.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.ik.nn import prepare  # noqa: E402
from models.core.rotations import geodesic_angle  # noqa: E402
from models.training.rotations import matrix_to_rot6d, unit  # noqa: E402
from models.core.skeleton import NUM_JOINTS  # noqa: E402
from models.ik.effectors import KINDS, Column, EncodedEffectors  # noqa: E402
from models.ik.smplik import DEFAULT_WEIGHTS, SIX_POINT_JOINTS, SmplIk  # noqa: E402
from models.training.smplik import SmplIkTorch  # noqa: E402
from models.training.loop import (Augmentation, TorchBody, finish, fk, geodesic, initialise,  # noqa: E402
                                   load_pose_data, run_config, sample_batch, train, training_arguments)
from train_ikgat import DEFAULT_DATA, ensure_data  # noqa: E402

PRESETS = {
    "smoke": {"minutes": 1.0, "batch": 64, "lr": 1e-3, "max_steps": 150},
    "full": {"minutes": 85.0, "batch": 256, "lr": 1e-3, "max_steps": 10 ** 9},
}
MAX_EFF = 12


def make_effectors(world, pos, gen, six_share=0.3, max_eff=MAX_EFF, equal_kinds=0.0):
    """Random effector sets for a batch: joints (B, E), feats (B, E, Column.COUNT), mask (B, E),
    kinds (B, E) (indices into KINDS), axes (B, E, 3) (look-at axes). 3 to max_eff effectors,
    positions 60%, rotations 25%, look-ats 15%, the first a position; with the chance
    equal_kinds, a set follows SMPL-IK's protocol instead: kinds equally likely, the first three
    positions; with the chance six_share, SMPL-IK's six points."""
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
    joints[six, :6] = torch.tensor(SIX_POINT_JOINTS)
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


def batch(data, body, size, gen, augment=Augmentation()):
    rot, rest = sample_batch(data, body, size, gen, augment)
    trans = torch.stack([2 * torch.rand(size, generator=gen) - 1, 0.4 * torch.rand(size, generator=gen) - 0.2,
                         2 * torch.rand(size, generator=gen) - 1], -1)
    world, pos = fk(rot, rest, trans)
    return rot, rest, trans, world, pos


def losses(model, rot, rest, world, pos, eff, joint_weight=5.0):
    joints, feats, mask, kinds, axes = eff
    local, trans = model(joints, feats, mask, rest)
    w_pred, p_pred = fk(local, rest, trans)
    return geodesic(local, rot).mean() + joint_weight * (p_pred - pos).norm(dim=-1).mean() + \
        effector_loss(w_pred, p_pred, world, eff)


def effector_loss(w_pred, p_pred, world, eff):
    """Weighted mean effector error of predicted world rotations and positions: 5 x metres
    for positions, radians for rotations, 1 - cos for look-ats."""
    joints, feats, mask, kinds, axes = eff
    rows = torch.arange(len(p_pred))[:, None]
    m = mask * feats[..., Column.WEIGHT]
    pe = (p_pred[rows, joints] - feats[..., Column.POINT]).norm(dim=-1)
    re = geodesic(w_pred[rows, joints], world[rows, joints])
    d = unit(feats[..., Column.POINT] - p_pred[rows, joints])
    le = 1 - (torch.einsum("beij,bej->bei", w_pred[rows, joints], axes) * d).sum(-1)
    return (m * torch.where(kinds == 0, 5 * pe, torch.where(kinds == 1, re, le))).sum() / m.sum()


def evaluate(model, data, body, frames=1000, seed=1):
    """Validation through the numpy runtime (symmetric solve, as shipped): MPJPE (mm) and geodesic
    (deg), 6 points and random."""
    gen = torch.Generator().manual_seed(seed)
    rot, rest, trans, world, pos = batch(data, body, min(frames, len(data.poses)), gen)
    net = SmplIk(prepare(model.numpy_params()), model.config)
    out = {}
    for name, share in (("six_points", 1.0), ("random", 0.0)):
        joints, feats, mask, _, _ = make_effectors(world, pos, gen, six_share=share)
        encoded = EncodedEffectors(joints.numpy(), feats.double().numpy(), mask.double().numpy())
        local, tr = net.predict(encoded, rest.double().numpy())
        _, p = fk(torch.from_numpy(local).float(), rest, torch.from_numpy(tr).float())
        out[f"{name}_mpjpe_mm"] = round(float((p - pos).norm(dim=-1).mean() * 1000), 2)
        out[f"{name}_geodesic_deg"] = round(float(np.degrees(geodesic_angle(local, rot.double().numpy())).mean()), 2)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--six-share", type=float, default=0.5,
                    help="share of training poses that get SMPL-IK's six points (default 0.5)")
    ap.add_argument("--swap", type=float, default=0.2,
                    help="chance that a limb or the trunk takes its rotations from another frame (default 0.2)")
    ap.add_argument("--jitter", type=float, default=0.0,
                    help="chance that a joint is set to its rest rotation, and again that it turns by up to "
                         "45 degrees more (default 0: off)")
    ap.add_argument("--joint-weight", type=float, default=5.0,
                    help="weight of the joint position error (metres) beside the rotation error (radians) in "
                         "the loss (default 5)")
    args = training_arguments(ap, PRESETS, DEFAULT_DATA, DEFAULT_WEIGHTS).parse_args(argv)
    cfg = run_config(args, PRESETS)
    train_set, val = load_pose_data(ensure_data(args.data))
    body = TorchBody()
    model = SmplIkTorch()
    before = initialise(model, args.init) if args.init else None

    augment = Augmentation.from_args(args)

    def batch_loss(gen):
        rot, rest, _, world, pos = batch(train_set, body, cfg["batch"], gen, augment)
        return losses(model, rot, rest, world, pos, make_effectors(world, pos, gen, args.six_share),
                      args.joint_weight)

    steps, seconds, history = train(model, batch_loss, cfg, args.seed)
    extra = {"effector_kinds": [k.value for k in KINDS], "max_effectors_in_training": MAX_EFF,
             "six_point_share": args.six_share, "joint_weight": args.joint_weight, **augment.record()}
    finish(model, args, cfg, train_set, steps, seconds, history, evaluate(model, val, body), extra, before)

if __name__ == "__main__":
    main()

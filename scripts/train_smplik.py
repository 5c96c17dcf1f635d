"""Train SMPL-IK (effectors -> pose) and write numpy weights plus a JSON record.

    python scripts/train_smplik.py [--preset smoke|full] [--data FILE] [--out FILE]

--data is a file from scripts/build_dataset.py (default out/training_smpl.npz, built from
../shared/data/mocap/cmu_train and cmu_varied on first use); whole clips listed in models/training/clips.py
are held out for validation. Each training pose gets a random body (one of the open bodies, a random shape, bone lengths
varied), mirroring, a random
heading and position, and a random set of 3-12 effectors (the first a position, the others
positions 60%, rotations 25%, look-ats 15%), or SMPL-IK's six points (half the poses;
--six-share). Each limb and the trunk takes its rotations from another frame 20% of the time
(--swap), so the network meets new combinations of the recorded limbs instead of memorising
whole poses; --jitter also sets single joints to rest or turns them further, and --bend
turns bones further with their twist kept.
"""
import argparse
import logging

import numpy as np
import torch

from models.ik.nn import prepare
from models.core.rotations import geodesic_angle
from models.ik.effectors import KINDS, EncodedEffectors
from models.ik.smplik import DEFAULT_WEIGHTS, SmplIk
from models.training.effectors import MAX_EFFECTORS, make_effectors
from models.training.smplik import SmplIkTorch, training_loss
from models.training.batches import Augmentation, TorchBody, fk, placed_batch
from models.training.data import ensure_data, load_pose_data
from models.training.loop import (TrainingRun, finish, initialise, only_joint_rows,
                                  only_joints_argument, run_config, train, training_arguments)

PRESETS = {
    "smoke": {"minutes": 1.0, "batch": 64, "lr": 1e-3, "max_steps": 150},
    "full": {"minutes": 85.0, "batch": 256, "lr": 1e-3, "max_steps": 10 ** 9},
}


def evaluate(model, data, body, frames=1000, seed=1):
    """Validation through the numpy runtime (symmetric solve, as shipped): MPJPE (mm) and geodesic
    (deg), 6 points and random."""
    gen = torch.Generator().manual_seed(seed)
    rot, rest, trans, world, pos = placed_batch(data, body, min(frames, len(data.poses)), gen)
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
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--six-share", type=float, default=0.5,
                    help="share of training poses that get SMPL-IK's six points (default 0.5)")
    ap.add_argument("--joint-weight", type=float, default=5.0,
                    help="weight of the joint position error (metres) beside the rotation error (radians) in "
                         "the loss (default 5)")
    only_joints_argument(ap, "rotations")
    args = training_arguments(ap, PRESETS, DEFAULT_WEIGHTS).parse_args(argv)
    rows = only_joint_rows(ap, args, 6)
    cfg = run_config(args, PRESETS)
    train_set, val = load_pose_data(ensure_data(args.data))
    body = TorchBody()
    model = SmplIkTorch()
    before = initialise(model, args.init) if args.init else None

    augment = Augmentation.from_args(args)

    def batch_loss(gen):
        batch = placed_batch(train_set, body, cfg["batch"], gen, augment)
        return training_loss(model, batch, make_effectors(batch.world, batch.pos, gen, args.six_share),
                             args.joint_weight)

    steps, seconds, history = train(model, batch_loss, cfg, args.seed, rows)
    extra = {"effector_kinds": [k.value for k in KINDS], "max_effectors_in_training": MAX_EFFECTORS,
             "six_point_share": args.six_share, "joint_weight": args.joint_weight, **augment.record()}
    if args.only_joints:
        extra["only_joints"] = list(args.only_joints)
    finish(model, args, cfg, TrainingRun(train_set, steps, seconds, history, evaluate(model, val, body), extra),
           before)

if __name__ == "__main__":
    main()

"""Train SMPL-IK's hypotheses head (a few poses per problem, winner-takes-all) and write numpy
weights plus a JSON record.

    python scripts/train_hypotheses.py [--preset smoke|full] [--data FILE] [--out FILE] [--base FILE]
                                       [--trunk-blocks N] [--start-head FILE]

The deterministic network (--base, default the shipped models/ik/weights/smplik.npz) stays
fixed: it gives each problem its answer D, on which the head answers --count residual poses
(models/ik/hypotheses.py). The head reads the network input through a trunk of its own
(--trunk-blocks residual blocks, started from --base's trunk and trained with the head), or
with --trunk-blocks 0 the deterministic network's last hidden layer (the v1 head).
--start-head starts the head's MLP from another head's (v1 or v2). Each hypothesis's error is 5 x its
mean joint distance (metres) plus --rotation-weight x its mean rotation error (radians) from
the true pose; the loss is the smallest of these per problem plus --relax x their mean. Poses,
bodies, augmentation and effector sets are the flow trainer's (scripts/train_flow.py). At the
end the hypotheses are put in order of how often each was the nearest on validation problems.
"""
import argparse
import logging
from pathlib import Path

import numpy as np
import torch

from models.core.skeleton import NUM_JOINTS
from models.ik.effectors import EncodedEffectors
from models.ik.flow import file_sha256
from models.ik.hypotheses import ARCHS, DEFAULT_HYPOTHESES_WEIGHTS, DIMS, Hypotheses, expected_shapes
from models.ik.nn import load_weights, prepare
from models.ik.smplik import DEFAULT_WEIGHTS, SmplIk
from models.training.effectors import make_effectors
from models.training.hypotheses import HypothesesTorch, winner_takes_all
from models.training.batches import Augmentation, TorchBody, fk, placed_batch
from models.training.data import ensure_data, load_pose_data
from models.training.loop import (TrainingRun, finish, initialise, only_joint_rows,
                                  only_joints_argument, run_config, train, training_arguments)
from models.training.rotations import axis_angle_to_matrix, geodesic
from models.training.smplik import SmplIkTorch, network_input

PRESETS = {
    "smoke": {"minutes": 1.0, "batch": 64, "lr": 1e-3, "max_steps": 120},
    "full": {"minutes": 35.0, "batch": 256, "lr": 1e-3, "max_steps": 10 ** 9},
}
MAX_EFF = 16       # effector sets as the flow's: 3-16, half the protocol's kinds, a quarter six points
SIX_SHARE = 0.25


def hypothesis_errors(base, head, rot, rest, pos, eff, rotation_weight):
    """(B, K) errors of the head's hypotheses for one batch of problems."""
    joints, feats, mask, _, _ = eff
    b = len(rot)
    with torch.no_grad():
        det, det_trans, hidden = base(joints, feats, mask, rest, symmetric=True, features=True)
    x = head(network_input(joints, feats, mask, rest)[0] if head.trunk else hidden)
    k = x.shape[1]
    local = det[:, None] @ axis_angle_to_matrix(x.reshape(b, k, NUM_JOINTS, 3))
    _, p = fk(local.reshape(b * k, NUM_JOINTS, 3, 3), rest.repeat_interleave(k, 0), det_trans.repeat_interleave(k, 0))
    joint_m = (p.reshape(b, k, NUM_JOINTS, 3) - pos[:, None]).norm(dim=-1).mean(-1)
    rotation = geodesic(local, rot[:, None]).mean(-1)
    return 5.0 * joint_m + rotation_weight * rotation


def evaluate(base_params, base_config, head, data, body, frames=500, seed=1):
    """Validation through the numpy runtime, without refinement: MPJPE (mm) of the
    deterministic answer, and of the nearest of the hypotheses, on six points and on random
    sets; and how often each hypothesis is the nearest (the order to store them in)."""
    net = SmplIk(prepare(base_params), base_config)
    numpy_head = Hypotheses(prepare(head.numpy_params(), np.float64), head.config)
    gen = torch.Generator().manual_seed(seed)
    rot, rest, trans, world, pos = placed_batch(data, body, min(frames, len(data.poses)), gen)
    out, wins = {}, np.zeros(head.count)
    for name, share in (("six_points", 1.0), ("random", 0.0)):
        joints, feats, mask, _, _ = make_effectors(world, pos, gen, six_share=share, max_eff=MAX_EFF, equal_kinds=0.5)
        encoded = EncodedEffectors(joints.numpy(), feats.double().numpy(), mask.double().numpy())
        r = rest.double().numpy()
        det, det_trans, hidden, inputs = net.predict(encoded, r, features=True)
        x = numpy_head.residuals(inputs, hidden)
        b, k = x.shape[:2]
        turns = axis_angle_to_matrix(torch.from_numpy(x.reshape(b * k, NUM_JOINTS, 3))).numpy()
        local = np.repeat(det, k, axis=0) @ turns
        _, p = fk(torch.from_numpy(local).float(), rest.repeat_interleave(k, 0),
                  torch.from_numpy(np.repeat(det_trans, k, 0)).float())
        err = (p.reshape(b, k, NUM_JOINTS, 3) - pos[:, None]).norm(dim=-1).mean(-1).numpy() * 1000
        _, p_det = fk(torch.from_numpy(det).float(), rest, torch.from_numpy(det_trans).float())
        out[f"{name}_deterministic_mpjpe_mm"] = round(float((p_det - pos).norm(dim=-1).mean() * 1000), 2)
        out[f"{name}_nearest_of_{k}_mpjpe_mm"] = round(float(err.min(1).mean()), 2)
        wins += np.bincount(err.argmin(1), minlength=k)
    return out, wins / wins.sum()


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, default=DEFAULT_WEIGHTS, help="the deterministic SMPL-IK weights (fixed)")
    ap.add_argument("--count", type=int, default=8,
                    help="hypotheses per problem (default 8, the add-on's Alternatives)")
    ap.add_argument("--hidden", type=int, default=256, help="width of the head's two hidden layers (default 256)")
    ap.add_argument("--trunk-blocks", type=int, default=0,
                    help="residual blocks of a trunk of the head's own, started from --base's and trained with "
                         "the head (v2); default 0: read the deterministic network's hidden layer (v1, shipped)")
    ap.add_argument("--start-head", type=Path, help="a head (v1 or v2) whose MLP this one starts from")
    ap.add_argument("--relax", type=float, default=0.05,
                    help="weight of the mean error of all hypotheses beside the nearest one's (default 0.05)")
    ap.add_argument("--rotation-weight", type=float, default=0.5,
                    help="weight of the rotation error (radians) beside 5 x the joint error (metres) (default 0.5)")
    only_joints_argument(ap, "residuals in every hypothesis (their order kept too)")
    args = training_arguments(ap, PRESETS, DEFAULT_HYPOTHESES_WEIGHTS).parse_args(argv)
    rows = only_joint_rows(ap, args, 3, args.count, DIMS)
    if args.count < 2:
        raise SystemExit("--count: at least 2 hypotheses")
    cfg = run_config(args, PRESETS)
    train_set, val = load_pose_data(ensure_data(args.data))
    body = TorchBody()
    base = SmplIkTorch()
    initialise(base, args.base)
    base.requires_grad_(False)
    if not 0 <= args.trunk_blocks <= base.config["blocks"]:
        raise SystemExit(f"--trunk-blocks: 0 to {base.config['blocks']}, the blocks --base has")
    head = HypothesesTorch(hidden=args.hidden, count=args.count, base_sha256=file_sha256(args.base),
                           trunk_blocks=args.trunk_blocks or None, trunk_hidden=base.config["hidden"])
    if head.trunk:
        head.load_parts(base.numpy_params(), ["inp."] + [f"blocks.{i}." for i in range(args.trunk_blocks)])
    if args.start_head:
        head.load_parts(load_weights(args.start_head, ARCHS, expected_shapes)[0], ["fc1.", "fc2.", "out."])
    before = initialise(head, args.init, rebase=True) if args.init else None
    augment = Augmentation.from_args(args)

    def batch_loss(gen):
        rot, rest, _, world, pos = placed_batch(train_set, body, cfg["batch"], gen, augment)
        eff = make_effectors(world, pos, gen, six_share=SIX_SHARE, max_eff=MAX_EFF, equal_kinds=0.5)
        return winner_takes_all(hypothesis_errors(base, head, rot, rest, pos, eff, args.rotation_weight), args.relax)[0]

    steps, seconds, history = train(head, batch_loss, cfg, args.seed, rows)
    base_params = base.numpy_params()
    metrics, share = evaluate(base_params, base.config, head, val, body)
    order = np.arange(args.count) if args.only_joints else np.argsort(-share, kind="stable")
    head.reorder(order.tolist())
    metrics["nearest_share"] = [round(float(s), 3) for s in share[order]]
    extra = {"base_weights": Path(args.base).name, "max_effectors_in_training": MAX_EFF, "six_point_share": SIX_SHARE,
             "protocol_share": 0.5, "start_head": args.start_head.name if args.start_head else None,
             "relax": args.relax, "rotation_weight": args.rotation_weight, **augment.record()}
    if args.only_joints:
        extra["only_joints"] = list(args.only_joints)
    finish(head, args, cfg, TrainingRun(train_set, steps, seconds, history, metrics, extra), before)


if __name__ == "__main__":
    main()

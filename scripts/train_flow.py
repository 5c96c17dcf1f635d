"""Train generative SMPL-IK (the pose flow over the deterministic network's answer) and write
numpy weights plus a JSON record.

    python scripts/train_flow.py [--preset smoke|full] [--data FILE] [--out FILE] [--base FILE]

The deterministic network (--base, default the shipped models/ik/weights/smplik.npz) stays
fixed: it gives each problem its answer D and the condition (its last hidden layer), and the
flow learns the residual rotations from D to the true pose (models/ik/flow.py). The loss is
the flow's negative log-likelihood of the true residuals (with --noise), plus, at the latent origin, the
deterministic trainer's loss (rotations, joints, effectors) and --cost-weight times the cost J
(models/ik/cost.py), so the origin decodes a low-cost pose that fits (and, off by default,
--sample-weight times the effector error of samples). Poses, bodies and
augmentation are the deterministic trainer's (scripts/train_smplik.py); effector sets are
3-16, half in SMPL-IK's protocol (kinds equally likely, at least three positions), a quarter
of all sets the six points.
"""
import argparse
import logging
from pathlib import Path

import numpy as np
import torch

from models.body.model import load_body_model
from models.core.skeleton import MIRROR, NUM_JOINTS
from models.ik.cost import Segments
from models.ik.effectors import EncodedEffectors
from models.ik.flow import DEFAULT_FLOW_WEIGHTS, DEFAULT_TEMPERATURE, DIMS, PoseFlow, file_sha256
from models.ik.nn import prepare
from models.ik.smplik import DEFAULT_WEIGHTS, SmplIk
from models.training.flow import PoseFlowTorch, TorchCost
from models.training.effectors import effector_loss, make_effectors
from models.training.batches import Augmentation, TorchBody, fk, placed_batch
from models.training.data import ensure_data, load_pose_data
from models.training.loop import (TrainingRun, finish, initialise, run_config, train,
                                  training_arguments)
from models.training.rotations import axis_angle_to_matrix, geodesic, matrix_to_axis_angle
from models.training.smplik import SmplIkTorch

PRESETS = {
    "smoke": {"minutes": 1.0, "batch": 64, "lr": 1e-3, "max_steps": 120},
    "full": {"minutes": 80.0, "batch": 256, "lr": 5e-4, "max_steps": 10 ** 9},
}
MAX_EFF = 16
STD_FLOOR = 0.05   # radians: joints the capture barely moves (the hands) still have a spread


def pose_statistics(data):
    """Mean and spread (69,) of the non-root local axis-angle components over the poses and
    their mirror images (spreads at least STD_FLOOR): the cost's prior."""
    aa = data.poses[:, 1:]
    mirrored = (data.poses[:, list(MIRROR)] * torch.tensor([1.0, -1.0, -1.0]))[:, 1:]
    both = torch.cat([aa, mirrored]).reshape(-1, DIMS - 3)
    return both.mean(0), both.std(0).clamp_min(STD_FLOOR)


def flow_losses(base, flow, cost, rot, rest, world, pos, eff, origin_weight, cost_weight, noise, gen,
                sample_weight=0.0):
    """(total, nll per dimension, origin loss, origin J) for one batch."""
    joints, feats, mask, kinds, axes = eff
    b = len(rot)
    with torch.no_grad():
        det, det_trans, hidden = base(joints, feats, mask, rest, symmetric=True, features=True)
        residual = matrix_to_axis_angle(det.transpose(-1, -2) @ rot).reshape(b, DIMS)
        residual = residual + noise * torch.randn(residual.shape, generator=gen)
    context = flow.encode(hidden)
    z, logdet = flow.inverse(residual, context)
    nll = (0.5 * (z * z).sum(-1) + logdet).mean() / DIMS   # logdet: log|dx/dz|
    x0 = flow(torch.zeros_like(z), context).reshape(b, NUM_JOINTS, 3)
    local0 = det @ axis_angle_to_matrix(x0)
    w0, p0 = fk(local0, rest, det_trans)
    origin = geodesic(local0, rot).mean() + 5.0 * (p0 - pos).norm(dim=-1).mean() + effector_loss(w0, p0, world, eff)
    j = cost(matrix_to_axis_angle(local0), w0, p0).mean()
    total = nll + origin_weight * origin + cost_weight * j
    if sample_weight > 0:   # samples near the effectors: refinement then barely moves them
        xs = flow(DEFAULT_TEMPERATURE * torch.randn(z.shape, generator=gen), context).reshape(b, NUM_JOINTS, 3)
        ws, ps = fk(det @ axis_angle_to_matrix(xs), rest, det_trans)
        total = total + sample_weight * effector_loss(ws, ps, world, eff)
    return total, nll, origin, j


def runtime(base_params, base_config, flow):
    return SmplIk(prepare(base_params), base_config,
                  flow=PoseFlow(prepare(flow.numpy_params(), np.float64), flow.config))


def evaluate(net, data, body, frames=500, seed=1):
    """Validation through the numpy runtime: MPJPE (mm) of the deterministic answer and of
    the natural pose (latent zero), six points and random sets, without refinement."""
    gen = torch.Generator().manual_seed(seed)
    rot, rest, trans, world, pos = placed_batch(data, body, min(frames, len(data.poses)), gen)
    out = {}
    for name, share in (("six_points", 1.0), ("random", 0.0)):
        joints, feats, mask, _, _ = make_effectors(world, pos, gen, six_share=share, max_eff=MAX_EFF, equal_kinds=0.5)
        encoded = EncodedEffectors(joints.numpy(), feats.double().numpy(), mask.double().numpy())
        r = rest.double().numpy()
        det, det_trans = net.predict(encoded, r)
        nat, nat_trans = (x[:, 0] for x in net.decode(net.condition(encoded, r), np.zeros((len(r), 1, DIMS))))
        for label, local, tr in (("deterministic", det, det_trans), ("natural", nat, nat_trans)):
            _, p = fk(torch.from_numpy(local).float(), rest, torch.from_numpy(tr).float())
            out[f"{name}_{label}_mpjpe_mm"] = round(float((p - pos).norm(dim=-1).mean() * 1000), 2)
    return out


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, default=DEFAULT_WEIGHTS, help="the deterministic SMPL-IK weights (fixed)")
    ap.add_argument("--origin-weight", type=float, default=1.0,
                    help="weight of the origin's fit (the deterministic trainer's loss) (default 1)")
    ap.add_argument("--cost-weight", type=float, default=0.003,
                    help="weight of the origin's cost J (default 0.003)")
    ap.add_argument("--sample-weight", type=float, default=0.0,
                    help="weight of the effector error of samples drawn at the default temperature "
                         "(default 0: at 0.3 it collapsed the alternatives' spread, see the weights' record)")
    ap.add_argument("--noise", type=float, default=0.02,
                    help="radians of Gaussian noise on the true residuals (default 0.02): joints the "
                         "network always gets right (the capture does not move the hands) would "
                         "otherwise collapse the density and dominate the loss")
    args = training_arguments(ap, PRESETS, DEFAULT_FLOW_WEIGHTS).parse_args(argv)
    cfg = run_config(args, PRESETS)
    train_set, val = load_pose_data(ensure_data(args.data))
    body = TorchBody()
    base = SmplIkTorch()
    initialise(base, args.base)
    base.requires_grad_(False)
    flow = PoseFlowTorch(base_sha256=file_sha256(args.base))
    before = initialise(flow, args.init, rebase=True) if args.init else None
    flow.prior.mean, flow.prior.std = pose_statistics(train_set)   # this data's, also when continuing
    segments = Segments.from_body(load_body_model())
    cost = TorchCost(segments, flow.prior.mean, flow.prior.std)
    augment = Augmentation.from_args(args)
    base_params = base.numpy_params()

    def batch_loss(gen):
        rot, rest, _, world, pos = placed_batch(train_set, body, cfg["batch"], gen, augment)
        eff = make_effectors(world, pos, gen, six_share=0.25, max_eff=MAX_EFF, equal_kinds=0.5)
        return flow_losses(base, flow, cost, rot, rest, world, pos, eff, args.origin_weight, args.cost_weight,
                           args.noise, gen, args.sample_weight)[0]

    steps, seconds, history = train(flow, batch_loss, cfg, args.seed)
    metrics = evaluate(runtime(base_params, base.config, flow), val, body)
    extra = {"base_weights": Path(args.base).name, "max_effectors_in_training": MAX_EFF, "six_point_share": 0.25,
             "protocol_share": 0.5, "residual_noise": args.noise, "sample_weight": args.sample_weight,
             "sample_temperature": DEFAULT_TEMPERATURE, "origin_weight": args.origin_weight,
             "cost_weight": args.cost_weight,
             **augment.record()}
    finish(flow, args, cfg, TrainingRun(train_set, steps, seconds, history, metrics, extra), before)


if __name__ == "__main__":
    main()

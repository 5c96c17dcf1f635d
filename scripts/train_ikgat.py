"""Train IK-GAT (joint positions -> rotations) and write numpy weights plus a JSON record.

    python scripts/train_ikgat.py [--preset smoke|full] [--data FILE] [--out FILE]

--data is a file from scripts/build_dataset.py; by default out/training_smpl.npz, built from
../shared/data/mocap/cmu_train and cmu_varied on first use. Whole clips listed in
models/training/clips.py are held out for validation. Presets: `smoke` (CI, under a minute),
`full` (a time budget on 2 CPU cores, see --minutes; the shipped weights started there and
were continued with --init, as their JSON record says). Each training pose gets a random body
(one of the open bodies, a random shape, bone lengths varied), mirroring and heading; limbs and
trunk are swapped between frames (--swap), single joints set to rest or turned further
(--jitter), and bones turned further with their twist kept (--bend, --bend-joints,
--bend-degrees), so the network also meets rigs and poses unlike the capture. A share of the
poses (--noise) gets Gaussian noise on every joint's position, its standard deviation
log-uniform up to --noise-cm, and the network learns to correct their bone directions
(ikgat-v2). --init also takes ikgat-v1 weights: the larger network starts out computing what
they compute.
"""
import argparse
import json
import logging
from pathlib import Path

import numpy as np
import torch

from models.ik.ikgat import DEFAULT_WEIGHTS, IkGat
from models.training.ikgat import IkGatTorch, grown_from_v1
from models.ik.nn import prepare
from models.core.rotations import geodesic_angle
from models.training.batches import Augmentation, TorchBody, fk, sample_batch
from models.training.data import ensure_data, load_pose_data
from models.training.loop import (TrainerDefaults, TrainingRun, finish, initialise, run_config,
                                  train, training_arguments)
from models.training.rotations import geodesic

PRESETS = {
    "smoke": {"minutes": 1.0, "batch": 64, "lr": 2e-3, "max_steps": 150},
    "full": {"minutes": 45.0, "batch": 256, "lr": 2e-3, "max_steps": 10 ** 9},
}
# Tips beyond the leaves (head top, hand tips, toes), so the FK loss sees leaf rotations.
TIPS = {15: (0.0, 0.15, 0.0), 22: (0.1, 0.0, 0.0), 23: (-0.1, 0.0, 0.0), 10: (0.0, 0.0, 0.06),
        11: (0.0, 0.0, 0.06)}


def fk_loss(local_pred, local_true, rest):
    """Mean distance (m) of joints and leaf tips under predicted vs. true rotations."""
    wp, pp = fk(local_pred, rest)
    wt, pt = fk(local_true, rest)
    tips = torch.tensor(list(TIPS.values()))
    leaves = list(TIPS)
    tp = pp[:, leaves] + torch.einsum("blij,lj->bli", wp[:, leaves], tips)
    tt = pt[:, leaves] + torch.einsum("blij,lj->bli", wt[:, leaves], tips)
    return (pp - pt).norm(dim=-1).mean() + (tp - tt).norm(dim=-1).mean()


NOISE_FLOOR = 0.002   # m: the smallest noise a noisy training pose gets


def noisy(pos, share, largest, gen):
    """Positions (B, 24, 3) with Gaussian noise on every joint for a random `share` of the poses,
    each pose's standard deviation log-uniform in [NOISE_FLOOR, largest] m; and which poses."""
    picked = torch.rand(len(pos), generator=gen) < share
    if largest <= NOISE_FLOOR or not picked.any():
        return pos, torch.zeros(len(pos), dtype=torch.bool)
    lo, hi = np.log(NOISE_FLOOR), np.log(largest)
    sigma = torch.exp(lo + (hi - lo) * torch.rand(len(pos), generator=gen)) * picked
    return pos + sigma[:, None, None] * torch.randn(pos.shape, generator=gen), picked


def evaluate(model, data, body, frames=2000, seed=1, noise=(0.0, 0.02)):
    """Validation through the numpy runtime: geodesic error (deg) and MPJPE (mm) on exact
    positions, and the geodesic error with each of `noise`'s standard deviations (m)."""
    gen = torch.Generator().manual_seed(seed)
    rot, rest = sample_batch(data, body, min(frames, len(data.poses)), gen)
    _, pos = fk(rot, rest)
    net = IkGat(prepare(model.numpy_params()), model.config)
    truth = rot.numpy().astype(np.float64)
    out = {}
    for sigma in noise:
        shaken = pos + sigma * torch.randn(pos.shape, generator=gen)
        pred = net(shaken.numpy(), rest.numpy())
        error = round(float(np.degrees(geodesic_angle(pred, truth)).mean()), 3)
        if sigma:
            out[f"geodesic_deg_noise_{sigma * 100:g}cm"] = error
            continue
        _, pos_pred = fk(torch.from_numpy(pred).float(), rest)
        out.update(geodesic_deg=error, mpjpe_mm=round(float((pos_pred - pos).norm(dim=-1).mean() * 1000), 3))
    return out


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap = training_arguments(ap, PRESETS, DEFAULT_WEIGHTS, TrainerDefaults(jitter=0.05))
    ap.add_argument("--noise", type=float, default=0.6,
                    help="share of the training poses with noise on their joint positions (default 0.6)")
    ap.add_argument("--noise-cm", type=float, default=6.0,
                    help="largest standard deviation of that noise, cm (default 6)")
    args = ap.parse_args(argv)
    cfg = run_config(args, PRESETS)
    train_set, val = load_pose_data(ensure_data(args.data))
    body = TorchBody()
    model = IkGatTorch()
    before = None
    if args.init:
        with np.load(args.init, allow_pickle=False) as npz:
            older = json.loads(str(npz["__config__"]))["arch"] == "ikgat-v1"
            arrays = {k: npz[k] for k in npz.files if k != "__config__"}
        if older:
            model.load_state_dict(grown_from_v1(arrays, model))
            record = Path(args.init).with_suffix(".json")
            before = json.loads(record.read_text()) if record.exists() else {}
        else:
            before = initialise(model, args.init)

    augment = Augmentation.from_args(args)

    def batch_loss(gen):
        rot, rest = sample_batch(train_set, body, cfg["batch"], gen, augment)
        _, pos = fk(rot, rest)
        pos, shaken = noisy(pos, args.noise, args.noise_cm / 100.0, gen)
        pred = model(pos, rest, noisy=shaken)
        return geodesic(pred, rot).mean() + 2.0 * fk_loss(pred, rot, rest)

    steps, seconds, losses = train(model, batch_loss, cfg, args.seed)
    finish(model, args, cfg, TrainingRun(
        train_set, steps, seconds, losses, evaluate(model, val, body),
        dict(augment.record(), noise=args.noise, noise_cm=args.noise_cm, noise_floor_cm=NOISE_FLOOR * 100)), before)


if __name__ == "__main__":
    main()

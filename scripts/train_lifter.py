"""Train the photo lifter (2D keypoints to 3D joints, models/photo/lifter.py) and write numpy
weights plus a JSON record.

    python scripts/train_lifter.py [--preset smoke|full] [--data FILE] [--out FILE] [--width 512] [--blocks 2]

Poses, bodies and augmentation are the other trainers' (models/training/batches.py: the same
clips held out). Each pose's keypoints (the joints, and the open neutral body's face, heel,
toe and finger points scaled to the body's height) are seen through a random camera
(models.training.lifter.Views: elevation, roll, distance, off-axis, a wrong focal length),
with 2D noise, a few keypoints far off and some unseen; the loss is the mean distance of the
answered joints from the true ones, less the pelvis, in the camera's frame. The record gives
MPJPE and PA-MPJPE (mm) and the depth error (mm, along the camera's axis) on the held-out
clips, by kind of motion, with exact keypoints and with 3% noise.
"""
import argparse
import logging

import numpy as np
import torch

from models.body.model import load_body_model
from models.core.metrics import procrustes_error
from models.photo.keypoints import body_points
from models.photo.lifter import DEFAULT_LIFTER_WEIGHTS, NUM_KEYPOINTS
from models.training.lifter import LifterTorch, Views, keypoint_points, mpjpe, training_views
from models.training.batches import Augmentation, TorchBody, sample_batch
from models.training.clips import VALIDATION_LOCOMOTION
from models.training.data import ensure_data, load_pose_data
from models.training.loop import (TrainerDefaults, TrainingRun, finish, initialise, run_config,
                                  train, training_arguments)

PRESETS = {
    "smoke": {"minutes": 1.0, "batch": 64, "lr": 1e-3, "max_steps": 150},
    "full": {"minutes": 40.0, "batch": 512, "lr": 1e-3, "max_steps": 10 ** 9},
}


def keypoint_table():
    """(owners (K,) long, offsets (K, 3), height) of the lifter's keypoints on the open
    neutral body at rest (models.photo.fit's body points)."""
    body = load_body_model()
    rest = body.rest_joints(np.zeros(body.shapedirs.shape[-1]))
    points, kept = body_points(rest, body, None)
    if len(kept) != NUM_KEYPOINTS:
        raise SystemExit(f"the open body lacks keypoint landmarks: {len(kept)} of {NUM_KEYPOINTS}")
    height = float(rest[:, 1].max() - rest[:, 1].min())
    return torch.as_tensor(points.joints), torch.tensor(points.offsets, dtype=torch.float32), height


def evaluate(model, val, body, table, views, batches=8, size=512):
    """Held-out figures, by kind of motion, exact keypoints and 3% noise."""
    out = {}
    kinds = {"locomotion": np.array([val.clips[c].split("/")[-1] in VALIDATION_LOCOMOTION for c in val.clip])}
    kinds["varied"] = ~kinds["locomotion"]
    model.eval()
    for kind, mask in kinds.items():
        if not mask.any():
            continue
        part = type(val)(val.poses[torch.from_numpy(mask)], val.clip[mask], val.clips, val.sha256, None, val.rest)
        for label, noise in (("exact", 0.0), ("noise3", 0.03)):
            gen = torch.Generator().manual_seed(123)
            seen_views = Views(noise=noise, outliers=0.0, unseen=0.0, focal_error=1.0001)
            errors, pa, depth = [], [], []
            with torch.no_grad():
                for _ in range(batches):
                    rot, rest = sample_batch(part, body, size, gen, Augmentation())
                    pos, points = keypoint_points(rot, rest, table)
                    x, target = training_views(pos, points, gen, seen_views)
                    pred = model(x)
                    errors.append(float(mpjpe(pred, target)))
                    pa.append(float(procrustes_error(pred.numpy(), target.numpy()).mean()))
                    depth.append(float((pred[..., 2] - target[..., 2]).abs().mean()))
            out[f"{kind}_{label}"] = {"mpjpe_mm": round(float(1000 * np.mean(errors)), 2),
                                      "pa_mpjpe_mm": round(float(1000 * np.mean(pa)), 2),
                                      "depth_mm": round(float(1000 * np.mean(depth)), 2)}
    model.train()
    return out


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    # bent-over, reaching poses are few
    ap = training_arguments(ap, PRESETS, DEFAULT_LIFTER_WEIGHTS, TrainerDefaults(bend=0.1))
    ap.add_argument("--width", type=int, default=512, help="hidden width (default 512)")
    ap.add_argument("--blocks", type=int, default=2, help="residual blocks (default 2)")
    ap.add_argument("--landmark-spread", type=float, default=0.0,
                    help="metres: each pose's keypoints moved this much (standard deviation) in their joint's frame, "
                         "as a detector's idea of a joint's place differs from the body's (default 0)")
    args = ap.parse_args(argv)
    cfg = run_config(args, PRESETS)
    train_set, val = load_pose_data(ensure_data(args.data))
    body = TorchBody()
    table = keypoint_table()
    model = LifterTorch(args.width, args.blocks)
    before = initialise(model, args.init) if args.init else None
    augment = Augmentation.from_args(args)
    views = Views()

    def batch_loss(gen):
        rot, rest = sample_batch(train_set, body, cfg["batch"], gen, augment)
        pos, points = keypoint_points(rot, rest, table, spread=args.landmark_spread, gen=gen)
        x, target = training_views(pos, points, gen, views)
        return mpjpe(model(x), target)

    steps, seconds, losses = train(model, batch_loss, cfg, args.seed)
    finish(model, args, cfg, TrainingRun(
        train_set, steps, seconds, losses, evaluate(model, val, body, table, views),
        dict(augment.record(), views=views.record(), landmark_spread=args.landmark_spread)), before)


if __name__ == "__main__":
    main()

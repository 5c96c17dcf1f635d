"""Fit the pose prior (models/ik/pose_prior.py: a Gaussian mixture over the body joints'
axis-angle vectors) to the training motion by expectation-maximisation, in numpy, and write
its weights and a JSON record.

    python scripts/train_pose_prior.py [--preset smoke|full] [--data FILE] [--out FILE]
        [--components 8] [--seed 0]

The poses are the trainers' (out/training_smpl.npz, models.training.data.load_pose_data: the
same clips held out), each frame also mirrored left to right, each source (locomotion, varied)
weighing the same in all. EM starts from k-means++ centres and stops when the mean
log-likelihood gains less than 1e-4 a step or after --iterations; every covariance gets
--regularisation on its diagonal (default: models.training.pose_prior.REGULARISATION). The
record gives the mean negative log-likelihood of the training and the held-out frames, by kind,
beside that of one Gaussian fitted to the same frames: the mixture must beat it on held-out
motion to be worth its size.
"""
import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np

from models.core.files import write_json
from models.core.skeleton import CHILDREN, JOINT_INDEX, PARENTS
from models.ik.nn import save_weights
from models.ik.pose_prior import ARCH, DEFAULT_POSE_PRIOR, DIM, load_pose_prior
from models.training.pose_prior import REGULARISATION, as_prior, em, features, mean_nll, mirrored, refit_dims
from models.training.clips import VALIDATION_LOCOMOTION, VALIDATION_VARIED
from models.training.data import DEFAULT_DATA, ensure_data, load_pose_data
from models.training.loop import TrainingRun, earlier_record, joint_name_list, training_record

PRESETS = {"smoke": {"iterations": 5, "frames": 3000}, "full": {"iterations": 200, "frames": None}}
def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=PRESETS, default="full")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="training poses from scripts/build_dataset.py")
    ap.add_argument("--out", type=Path, default=DEFAULT_POSE_PRIOR, help="weights file to write")
    ap.add_argument("--components", type=int, default=8, help="mixture components (default 8)")
    ap.add_argument("--iterations", type=int, help="most EM steps (default: the preset's)")
    ap.add_argument("--regularisation", type=float, default=REGULARISATION,
                    help=f"rad^2 added to every variance (default {REGULARISATION:g})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init", type=Path, help="a pose prior to start from (with --refit-joints)")
    ap.add_argument("--refit-joints", type=joint_name_list, metavar="NAMES",
                    help="with --init: fit only these joints' numbers again (comma-separated), every other "
                         "number's mean and covariance kept exactly (refit_dims); no EM")
    ap.add_argument("--refit-given", choices=("neighbours", "all"), default="neighbours",
                    help="what the refitted numbers depend on within a component: the numbers of the "
                         "joints next to them in the tree, parents and children (default), or every other number")
    args = ap.parse_args(argv)
    if bool(args.init) != bool(args.refit_joints):
        ap.error("--init and --refit-joints go together")
    if args.components < 1:
        ap.error("--components must be at least 1")
    cfg = dict(PRESETS[args.preset])
    if args.iterations:
        cfg["iterations"] = args.iterations

    started = time.time()
    train, held = load_pose_data(ensure_data(args.data))
    gen = np.random.default_rng(args.seed)
    poses = train.poses.numpy()
    weight = np.ones(len(poses)) if train.weight is None else train.weight.numpy().astype(np.float64)
    if cfg["frames"] and cfg["frames"] < len(poses):
        keep = gen.choice(len(poses), cfg["frames"], replace=False)
        poses, weight = poses[keep], weight[keep]
    x = np.concatenate([features(poses), features(mirrored(poses))])
    w = np.concatenate([weight, weight])
    print(f"{len(x)} poses (half of them mirrored), {DIM} numbers each, {args.components} components")
    extra = {}
    if args.refit_joints:
        start = load_pose_prior(args.init)
        args.components = len(start.means)
        refit = [JOINT_INDEX[n] for n in args.refit_joints]
        neighbours = sorted({k for j in refit for k in (PARENTS[j], *CHILDREN[j]) if k > 0} - set(refit))
        dims, given = (np.array([3 * (j - 1) + i for j in js for i in range(3)], dtype=int)
                       for js in (refit, neighbours))
        means, cov = refit_dims(start, x, w, dims, given if args.refit_given == "neighbours" else None,
                                args.regularisation)
        mix = np.exp(start.log_weights)
        prior = as_prior(means, cov, mix)
        history = [float(-mean_nll(prior, x, w))]
        before = Path(args.init).with_suffix(".json")
        earlier = earlier_record(json.loads(before.read_text())) if before.exists() else str(args.init)
        extra = {"refit_joints": list(args.refit_joints), "refit_given": args.refit_given, "continued_from": earlier}
    else:
        means, cov, mix, history = em(x, w, args.components, cfg["iterations"], gen, args.regularisation)
        prior = as_prior(means, cov, mix)
    single = as_prior(*(a[None] for a in (np.average(x, axis=0, weights=w),
                                          np.cov(x.T, aweights=w) + args.regularisation * np.eye(DIM))), np.ones(1))

    held_poses = held.poses.numpy()
    names = np.array([held.clips[c].split("/")[-1] for c in held.clip])
    validation = {"train_nll": round(mean_nll(prior, x, w), 3),
                  "train_nll_one_gaussian": round(mean_nll(single, x, w), 3)}
    for kind, clips in (("locomotion", VALIDATION_LOCOMOTION), ("varied", VALIDATION_VARIED)):
        m = np.isin(names, clips)
        if m.any():
            hx = features(held_poses[m])
            validation[f"held_out_{kind}_nll"] = round(mean_nll(prior, hx), 3)
            validation[f"held_out_{kind}_nll_one_gaussian"] = round(mean_nll(single, hx), 3)
            validation[f"held_out_{kind}_frames"] = int(m.sum())
    seconds = time.time() - started
    config = {"arch": ARCH, "components": args.components}
    save_weights(args.out, {"means": means, "precision_chol": np.linalg.cholesky(np.linalg.inv(cov)),
                            "log_weights": np.log(mix)}, config)
    write_json(Path(args.out).with_suffix(".json"), training_record(config, args.preset, TrainingRun(
        data=train, steps=len(history), seconds=seconds, losses=(), metrics=validation,
        extra={"regularisation": args.regularisation, "mirrored": True, "seed": args.seed,
               "frames": int(len(x)), "final_log_likelihood": round(history[-1], 4), **extra})))
    print(f"{args.out}: {len(history)} EM steps in {seconds:.0f} s; {validation}")


if __name__ == "__main__":
    main()

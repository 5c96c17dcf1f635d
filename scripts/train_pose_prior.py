"""Fit the pose prior (models/ik/pose_prior.py: a Gaussian mixture over the body joints'
axis-angle vectors) to the training motion by expectation-maximisation, in numpy, and write
its weights and a JSON record.

    python scripts/train_pose_prior.py [--preset smoke|full] [--data FILE] [--out FILE]
        [--components 8] [--seed 0]

The poses are the trainers' (out/training_smpl.npz, models.training.loop.load_pose_data: the
same clips held out), each frame also mirrored left to right, each source (locomotion, varied)
weighing the same in all. EM starts from k-means++ centres and stops when the mean
log-likelihood gains less than 1e-4 a step or after --iterations; every covariance gets
--regularisation on its diagonal (default REGULARISATION, the value whose mixture scored the
held-out varied clips best of 1e-4, 1e-3, 3e-3 and 1e-2: narrower components fit locomotion
better and unseen kinds of motion worse). The record gives the mean negative log-likelihood of the training and
the held-out frames, by kind, beside that of one Gaussian fitted to the same frames: the
mixture must beat it on held-out motion to be worth its size.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.core.files import write_json  # noqa: E402
from models.core.skeleton import CHILDREN, JOINT_INDEX, MIRROR, PARENTS  # noqa: E402
from models.ik.nn import save_weights  # noqa: E402
from models.ik.pose_prior import ARCH, DEFAULT_POSE_PRIOR, DIM, JOINTS, PosePrior, load_pose_prior  # noqa: E402
from models.training.loop import (DEFAULT_DATA, VALIDATION_LOCOMOTION, VALIDATION_VARIED,  # noqa: E402
                                  earlier_record, ensure_data, joint_name_list, load_pose_data,
                                  training_record)

PRESETS = {"smoke": {"iterations": 5, "frames": 3000}, "full": {"iterations": 200, "frames": None}}
REGULARISATION = 3e-3     # rad^2 added to every variance by default (chosen on the held-out varied clips)
MIRROR_SIGN = np.array([1.0, -1.0, -1.0])


def features(poses):
    """(N, 69) of axis-angle poses (N, 24, 3)."""
    return np.asarray(poses, dtype=np.float64)[:, list(JOINTS)].reshape(len(poses), DIM)


def mirrored(poses):
    """Axis-angle poses (N, 24, 3) mirrored left to right (x -> -x)."""
    return np.asarray(poses)[:, list(MIRROR)] * MIRROR_SIGN


def kmeans_pp(x, weight, k, gen):
    """k initial centres by k-means++ (each drawn in proportion to weight x squared distance)."""
    centres = [x[gen.choice(len(x), p=weight / weight.sum())]]
    d2 = ((x - centres[0]) ** 2).sum(1)
    for _ in range(1, k):
        p = weight * d2
        centres.append(x[gen.choice(len(x), p=p / p.sum())])
        d2 = np.minimum(d2, ((x - centres[-1]) ** 2).sum(1))
    return np.array(centres)


def as_prior(means, covariances, weights):
    """PosePrior of a mixture given by covariances (its Cholesky factors of the inverses)."""
    chol = np.linalg.cholesky(np.linalg.inv(covariances))
    return PosePrior(means, chol, np.log(weights))


def em(x, weight, k, iterations, gen, regularisation=REGULARISATION, log=print):
    """(means, covariances, weights) of a k-component mixture fitted to x (N, D) with frame
    weights (N,) by EM, and the mean log-likelihood each step."""
    weight = weight / weight.sum()
    means = kmeans_pp(x, weight, k, gen)
    labels = np.argmin(((x[:, None] - means[None]) ** 2).sum(-1), axis=1)
    resp = np.eye(k)[labels]
    history = []
    eye = regularisation * np.eye(x.shape[1])
    for step in range(iterations):
        # M step
        w = resp * weight[:, None]                              # (N, K)
        mass = w.sum(0) + 1e-12
        means = (w.T @ x) / mass[:, None]
        cov = np.empty((k, x.shape[1], x.shape[1]))
        for c in range(k):
            d = x - means[c]
            cov[c] = (d * w[:, c:c + 1]).T @ d / mass[c] + eye
        mix = mass / mass.sum()
        # E step
        prior = as_prior(means, cov, mix)
        log_p = prior.component_log_likelihood(x)
        log_total = np.logaddexp.reduce(log_p, axis=1)
        resp = np.exp(log_p - log_total[:, None])
        history.append(float(weight @ log_total))
        if step % 10 == 0:
            log(f"  EM step {step}: mean log-likelihood {history[-1]:.3f}")
        if step and history[-1] - history[-2] < 1e-4:
            break
    return means, cov, mix, history


def refit_dims(prior, x, weight, dims, given=None, regularisation=REGULARISATION, ridge=1e-6):
    """(means, covariances) of `prior` with the numbers `dims` fitted again to x (N, D), the
    others' means and covariances kept exactly: each frame's responsibilities come from the
    other numbers alone, and each component's `dims` are a linear regression on the numbers
    `given` (default: all the others) plus a residual covariance (+ regularisation), so every
    covariance stays positive definite and the mixture's marginal over the other numbers is the
    one it had."""
    keep = np.setdiff1d(np.arange(x.shape[1]), dims)
    given = keep if given is None else np.asarray(given)
    precision = prior.precision_chol @ np.swapaxes(prior.precision_chol, 1, 2)
    cov = np.linalg.inv(precision)
    means = prior.means.copy()
    chol = np.linalg.cholesky(np.linalg.inv(cov[:, keep][:, :, keep]))     # the others' marginal
    z = np.einsum("kji,nkj->nki", chol, x[:, None, keep] - means[None][:, :, keep])
    log_p = prior.log_weights + np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1) - 0.5 * (z ** 2).sum(-1)
    resp = np.exp(log_p - np.logaddexp.reduce(log_p, axis=1)[:, None]) * (weight / weight.sum())[:, None]
    for c in range(len(means)):
        w = resp[:, c] / resp[:, c].sum()
        xb = x[:, given] - means[c, given]
        means[c, dims] = w @ x[:, dims]
        xt = x[:, dims] - means[c, dims]
        gram = (xb * w[:, None]).T @ xb + ridge * np.eye(len(given))
        a = np.linalg.solve(gram, (xb * w[:, None]).T @ xt).T                 # (T, G)
        r = xt - xb @ a.T
        tb = a @ cov[c][np.ix_(given, keep)]
        cov[c][np.ix_(dims, keep)], cov[c][np.ix_(keep, dims)] = tb, tb.T
        cov[c][np.ix_(dims, dims)] = ((r * w[:, None]).T @ r + regularisation * np.eye(len(dims))
                                      + a @ cov[c][np.ix_(given, given)] @ a.T)
    return means, cov


def mean_nll(prior, x, weight=None):
    nll = prior.nll_of_features(x)
    return float(np.average(nll, weights=weight))


def main(argv=None):
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
        dims, given = (np.array([3 * (j - 1) + i for j in js for i in range(3)], dtype=int) for js in (refit, neighbours))
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
    validation = {"train_nll": round(mean_nll(prior, x, w), 3), "train_nll_one_gaussian": round(mean_nll(single, x, w), 3)}
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
    write_json(Path(args.out).with_suffix(".json"), training_record(
        config, args.preset, train, seconds, len(history), validation,
        {"regularisation": args.regularisation, "mirrored": True, "seed": args.seed,
         "frames": int(len(x)), "final_log_likelihood": round(history[-1], 4), **extra}))
    print(f"{args.out}: {len(history)} EM steps in {seconds:.0f} s; {validation}")


if __name__ == "__main__":
    main()

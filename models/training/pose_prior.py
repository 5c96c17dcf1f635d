"""The pose prior's trainer (models/ik/pose_prior.py, scripts/train_pose_prior.py): a Gaussian
mixture over the body joints' axis-angle vectors fitted by expectation-maximisation, in numpy."""
import logging

import numpy as np

from ..core.skeleton import MIRROR
from ..ik.pose_prior import DIM, JOINTS, PosePrior

logger = logging.getLogger(__name__)

# rad^2 added to every variance by default (docs/training_log.md, "Pose prior regularisation")
REGULARISATION = 3e-3
RIDGE = 1e-6   # added to the regressions' Gram matrices in refit_dims, so they always solve
MIRROR_SIGN = np.array([1.0, -1.0, -1.0])   # axis-angle mirrored left to right: x kept, y and z negated


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


def em(x, weight, k, iterations, gen, regularisation=REGULARISATION):
    """(means (K, D), covariances (K, D, D), weights (K,)) of a k-component mixture fitted to
    x (N, D) with frame weights (N,) by EM from k-means++ centres (`gen` a numpy Generator), and
    the mean log-likelihood each step; stops when it gains less than 1e-4 a step or after
    `iterations`. Every tenth step's likelihood is logged (INFO)."""
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
            logger.info("  EM step %d: mean log-likelihood %.3f", step, history[-1])
        if step and history[-1] - history[-2] < 1e-4:
            break
    return means, cov, mix, history


def refit_dims(prior, x, weight, dims, given=None, regularisation=REGULARISATION):
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
        gram = (xb * w[:, None]).T @ xb + RIDGE * np.eye(len(given))
        a = np.linalg.solve(gram, (xb * w[:, None]).T @ xt).T                 # (T, G)
        r = xt - xb @ a.T
        tb = a @ cov[c][np.ix_(given, keep)]
        cov[c][np.ix_(dims, keep)], cov[c][np.ix_(keep, dims)] = tb, tb.T
        cov[c][np.ix_(dims, dims)] = ((r * w[:, None]).T @ r + regularisation * np.eye(len(dims))
                                      + a @ cov[c][np.ix_(given, given)] @ a.T)
    return means, cov


def mean_nll(prior, x, weight=None):
    """The (weighted) mean negative log-likelihood of features x (N, D) under `prior`."""
    nll = prior.nll_of_features(x)
    return float(np.average(nll, weights=weight))

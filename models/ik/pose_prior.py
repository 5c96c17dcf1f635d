"""An unconditional prior over body poses: a Gaussian mixture over the axis-angle vectors of the
23 body joints (every joint but the pelvis, whose turn says where the person faces, not how
they stand), fitted to the training motion by scripts/train_pose_prior.py. Plain numpy.

It tells a fit which of the poses a photo allows a person is likely to stand in: one image
leaves each limb's depth along the camera's ray and its twist about the bone open, and the
mixture scores every answer by how often poses like it occur in real motion.

Two readings of one model (K components, weights w_k, means mu_k, covariances S_k):
- `nll(local_rot)`: the exact negative log-likelihood, -log sum_k w_k N(theta; mu_k, S_k).
- `residuals(local_rot)`: the same as a sum of squares for Gauss-Newton, with the mixture
  replaced by its most likely component (SMPLify's "max-mixture" approximation): r =
  [L_k^T (theta - mu_k), sqrt(2 (c_k - c_min))], S_k^-1 = L_k L_k^T, c_k = -log w_k + 0.5 log det S_k
  (c_min the smallest, so the extra entry is real and 0 for the best component). Then
  0.5 |r|^2 = -log(w_k N(theta; mu_k, S_k)) + constant, for the component k that minimises it.
"""
import functools
import math

import numpy as np

from ..core.errors import SmplIkError
from ..core.rotations import axis_angle_to_matrix, matrix_to_axis_angle
from ..core.skeleton import NUM_JOINTS
from .nn import WEIGHTS_DIR, load_weights

ARCH = "pose-gmm-v1"
DEFAULT_POSE_PRIOR = WEIGHTS_DIR / "pose_prior.npz"
JOINTS = tuple(range(1, NUM_JOINTS))     # every joint but the pelvis
DIM = 3 * len(JOINTS)


def _shapes(config):
    k = int(config["components"])
    return {"means": (k, DIM), "precision_chol": (k, DIM, DIM), "log_weights": (k,)}


class PosePrior:
    """A Gaussian mixture over the 69 axis-angle numbers of the body joints (module docstring).

    means (K, 69); precision_chol (K, 69, 69) lower-triangular L_k with L_k L_k^T the inverse
    covariance; log_weights (K,) (they sum to one)."""

    def __init__(self, means, precision_chol, log_weights):
        self.means = np.asarray(means, dtype=np.float64)
        self.precision_chol = np.asarray(precision_chol, dtype=np.float64)
        self.log_weights = np.asarray(log_weights, dtype=np.float64)
        k = len(self.means)
        if self.means.shape != (k, DIM) or self.precision_chol.shape != (k, DIM, DIM) or self.log_weights.shape != (k,):
            raise SmplIkError(f"a pose prior needs means (K, {DIM}), precision_chol (K, {DIM}, {DIM}) and "
                              f"log_weights (K,); got {self.means.shape}, {self.precision_chol.shape}, "
                              f"{self.log_weights.shape}")
        # -log w_k + 0.5 log det S_k = -log w_k - sum log diag L_k
        log_diag = np.log(np.abs(np.diagonal(self.precision_chol, axis1=1, axis2=2)))
        self.component_cost = -self.log_weights - log_diag.sum(axis=1)
        self._extra = np.sqrt(2.0 * (self.component_cost - self.component_cost.min()))
        self._log_norm = -0.5 * DIM * math.log(2.0 * math.pi)

    @staticmethod
    def features(local_rot):
        """(..., 69) axis-angle vectors of the body joints of local rotations (..., 24, 3, 3)."""
        local_rot = np.asarray(local_rot, dtype=np.float64)
        return matrix_to_axis_angle(local_rot[..., list(JOINTS), :, :]).reshape(local_rot.shape[:-3] + (DIM,))

    def _whitened(self, theta):
        """(..., K, 69) L_k^T (theta - mu_k) for features theta (..., 69)."""
        return np.einsum("kji,...kj->...ki", self.precision_chol, theta[..., None, :] - self.means)

    def component_log_likelihood(self, theta):
        """(..., K) log(w_k N(theta; mu_k, Sigma_k)) of features theta (..., 69), each
        component's weighted density: their log-sum-exp is the log-likelihood, their softmax
        each component's responsibility."""
        z = self._whitened(np.asarray(theta, dtype=np.float64))
        return self._log_norm - 0.5 * np.einsum("...ki,...ki->...k", z, z) - self.component_cost

    def nll_of_features(self, theta):
        """(...,) exact negative log-likelihood of features (..., 69)."""
        log_p = self.component_log_likelihood(theta)
        top = log_p.max(axis=-1, keepdims=True)
        return -(top[..., 0] + np.log(np.exp(log_p - top).sum(axis=-1)))

    def nll(self, local_rot):
        """(...,) exact negative log-likelihood of poses given as local rotations (..., 24, 3, 3)."""
        return self.nll_of_features(self.features(local_rot))

    def residuals(self, local_rot):
        """(..., 70) the max-mixture residuals (module docstring) of poses (..., 24, 3, 3):
        half their squared norm is the most likely component's negative log-likelihood, up to
        a constant."""
        z = self._whitened(self.features(local_rot))
        cost = 0.5 * np.einsum("...ki,...ki->...k", z, z) + self.component_cost
        best = np.argmin(cost, axis=-1)
        chosen = np.take_along_axis(z, best[..., None, None], axis=-2)[..., 0, :]
        return np.concatenate([chosen, self._extra[best][..., None]], axis=-1)

    def mean_rotation(self, joint):
        """(3, 3) the mixture's mean local rotation of `joint` (1..23): its components' axis-angle
        means weighted by the components' weights, as a rotation."""
        w = np.exp(self.log_weights - self.log_weights.max())
        aa = (w / w.sum()) @ self.means[:, 3 * (joint - 1):3 * joint]
        return axis_angle_to_matrix(aa)


@functools.lru_cache(maxsize=4)
def load_pose_prior(path=DEFAULT_POSE_PRIOR):
    """The PosePrior in a weights file written by scripts/train_pose_prior.py (SmplIkError when
    it is missing or not one)."""
    params, _ = load_weights(path, ARCH, _shapes)
    return PosePrior(params["means"], params["precision_chol"], params["log_weights"])

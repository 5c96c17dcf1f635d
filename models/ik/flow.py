"""The generative half of SMPL-IK: a conditional normalizing flow over the body pose.

Given effectors, the deterministic SMPL-IK network (`smplik.SmplIk`) answers with one pose,
the average of those that fit. The flow models the poses that fit around that answer: a
latent z (72 numbers, standard normal) maps to residual rotations x (24 joints x axis-angle),
and the pose is the deterministic one with each joint's local rotation turned by its residual,
R_j = D_j exp(x_j). The condition is the deterministic network's last hidden layer (it already
summarises the effectors and the body's rest joints), through a small context layer.

The map is a stack of affine coupling layers (RealNVP): each keeps the joints of one half
(`masks`) and scales and shifts the others by amounts an MLP computes from the kept ones and
the context, so it is invertible in closed form and its log-determinant is the sum of the
log-scales. This gives, from one network:
- the natural pose: z = 0, trained to the least-cost pose that meets the effectors (`cost.py`);
- alternatives: z ~ N(0, temperature^2);
- continuity: `inverse` maps a pose on screen to its latent, so a drag can decode the same
  latent under the moved effectors, and a path can be followed with one latent.
The last layer of every coupling starts at zero, so an untrained flow is the identity and its
origin is exactly the deterministic network's answer.
"""
import hashlib
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.skeleton import NUM_JOINTS
from .nn import WEIGHTS_DIR, linear, load_weights

ARCH = "smplik-flow-v1"
DIMS = NUM_JOINTS * 3
DEFAULT_FLOW_WEIGHTS = WEIGHTS_DIR / "smplik_flow.npz"
DEFAULT_TEMPERATURE = 0.6   # alternatives' spread: latents ~ N(0, 0.6^2) (docs/learned_ik.md, generative)
LOG_SCALE_BOUND = 2.0   # log-scales are bound * tanh(raw / bound): no coupling scales by more than e^2


def expected_shapes(cfg):
    c, h, n, base = cfg["context"], cfg["hidden"], cfg["couplings"], cfg["base_width"]
    shapes = {"context.weight": (c, base), "context.bias": (c,), "masks": (n, DIMS),
              "prior.mean": (DIMS - 3,), "prior.std": (DIMS - 3,)}
    for k in range(n):
        shapes.update({f"couplings.{k}.fc1.weight": (h, DIMS + c), f"couplings.{k}.fc1.bias": (h,),
                       f"couplings.{k}.fc2.weight": (h, h), f"couplings.{k}.fc2.bias": (h,),
                       f"couplings.{k}.out.weight": (2 * DIMS, h), f"couplings.{k}.out.bias": (2 * DIMS,)})
    return shapes


class PoseFlow:
    """The numpy flow. `PoseFlow.load(path)` checks the file's architecture and arrays.

    context(features) -> (B, C) context from the deterministic network's normalised hidden
    layer (B, base_width); forward(z, context) -> residuals x (B, 72); inverse(x, context) ->
    (z, log|det dx/dz|). Computed in float64 (the flow is small; exact inverses need it)."""

    def __init__(self, params, config):
        self.config = config
        self.p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
        self.masks = self.p["masks"] > 0.5
        self.prior_mean, self.prior_std = self.p["prior.mean"], self.p["prior.std"]

    @classmethod
    def load(cls, path=DEFAULT_FLOW_WEIGHTS):
        return cls(*load_weights(path, ARCH, expected_shapes))

    def context(self, features):
        return np.maximum(linear(np.asarray(features, dtype=np.float64), self.p, "context"), 0.0)

    def _scale_shift(self, k, kept, context):
        h = np.maximum(linear(np.concatenate([kept, context], -1), self.p, f"couplings.{k}.fc1"), 0.0)
        h = np.maximum(linear(h, self.p, f"couplings.{k}.fc2"), 0.0)
        out = linear(h, self.p, f"couplings.{k}.out")
        s = LOG_SCALE_BOUND * np.tanh(out[:, :DIMS] / LOG_SCALE_BOUND)
        return s * ~self.masks[k], out[:, DIMS:] * ~self.masks[k]

    def forward(self, z, context):
        x = np.array(z, dtype=np.float64)
        for k in range(len(self.masks)):
            s, t = self._scale_shift(k, x * self.masks[k], context)
            x = x * np.exp(s) + t
        return x

    def inverse(self, x, context):
        z = np.array(x, dtype=np.float64)
        logdet = np.zeros(len(z))
        for k in reversed(range(len(self.masks))):
            s, t = self._scale_shift(k, z * self.masks[k], context)
            z = (z - t) * np.exp(-s)
            logdet += s.sum(-1)
        return z, logdet


def file_sha256(path):
    """The hex SHA-256 of a file's bytes: a flow's config names the deterministic weights it
    was trained over (`base_sha256`), since its residuals mean nothing over another network."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_samples(count, temperature, limit=1000):
    """Refuse a sample count outside 1..limit or a temperature that is not a finite number >= 0."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 1 <= count <= limit:
        raise SmplIkError(f"count must be a whole number from 1 to {limit}, not {count!r}")
    try:
        t = float(temperature)
    except (TypeError, ValueError):
        raise SmplIkError(f"temperature must be a number, not {temperature!r}") from None
    if not np.isfinite(t) or t < 0:
        raise SmplIkError(f"temperature must be a finite number >= 0 (0: the natural pose only), not {temperature!r}")
    return t

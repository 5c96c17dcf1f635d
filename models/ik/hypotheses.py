"""SMPL-IK's hypotheses: a few poses that between them cover where the true pose may be.

Few effectors leave much of the body free, and the flow's random draws (`flow.py`) spread
over 69 dimensions, most of which barely show: eight of them rarely land near the pose the
artist has in mind. This head instead answers each problem with COUNT poses at once, trained
winner-takes-all (multiple-choice learning): for every training problem only the hypothesis
nearest the true pose learns from it (the others a little, so none is left untrained), so
each specialises in one way the free joints commonly go (an arm up or down, the weight on one
leg or the other) and the nearest of them is near the truth as often as the data allows.

It answers residual rotations on the deterministic network's pose, R_j = D_j exp(x_j), from
a small MLP (fc1, fc2, out): features (B, base_width) -> (B, COUNT, 72). Two kinds:
- v1 reads the deterministic network's last hidden layer (`SmplIk.predict`'s features), as
  the flow does (docs/training_log.md, "Hypotheses head v1").
- v2 has a trunk of its own, the deterministic network's shape (`nn.residual_trunk`), that
  reads the network input (the effectors and the rest joints) and was trained together with
  the head, starting from the deterministic network's trunk and a v1 head.
The hypotheses are stored in the order of how often each was the nearest on validation
problems, so the first few are the likeliest. `SmplIk.sample` with spread "hypotheses" (the
default when the weights are there) decodes them and refines each under the pins; each keeps
its latent under the flow, so a drag can carry it on like any sample.
"""
from pathlib import Path

import numpy as np

from .nn import WEIGHTS_DIR, block_norm_pairs, fold_norms, linear, load_weights, residual_trunk, trunk_shapes

ARCH = "smplik-hypotheses-v2"
ARCHS = ("smplik-hypotheses-v1", ARCH)   # what the runtime reads
DEFAULT_HYPOTHESES_WEIGHTS = WEIGHTS_DIR / "smplik_hypotheses.npz"
DIMS = 72


def has_trunk(cfg):
    return cfg["arch"] != ARCHS[0]


def expected_shapes(cfg):
    h, n, base = cfg["hidden"], cfg["count"], cfg["base_width"]
    shapes = trunk_shapes(base, cfg["trunk_hidden"], cfg["trunk_blocks"], cfg["inputs"]) if has_trunk(cfg) else {}
    shapes.update({"fc1.weight": (h, base), "fc1.bias": (h,), "fc2.weight": (h, h), "fc2.bias": (h,),
                   "out.weight": (n * DIMS, h), "out.bias": (n * DIMS,)})
    return shapes


class Hypotheses:
    """The numpy head. `Hypotheses.load(path)` checks the file's architecture and arrays;
    `count` is how many poses it answers; `residuals(inputs, hidden)` -> (B, count, 72)
    axis-angle residuals on the deterministic pose, in float64, from the network input
    (B, 504) and the deterministic network's last hidden layer (B, base_width) (a v2 head
    reads the first, a v1 head the second)."""

    def __init__(self, params, config):
        self.config = config
        self.count = int(config["count"])
        self.trunk = has_trunk(config)
        params = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
        if self.trunk:
            params = fold_norms(params, block_norm_pairs(config["trunk_blocks"]))
        self.p = params

    @classmethod
    def load(cls, path=DEFAULT_HYPOTHESES_WEIGHTS):
        return cls(*load_weights(Path(path), ARCHS, expected_shapes))

    def residuals(self, inputs, hidden):
        features = residual_trunk(inputs, self.p, self.config["trunk_blocks"]) if self.trunk else hidden
        h = np.maximum(linear(np.asarray(features, dtype=np.float64), self.p, "fc1"), 0.0)
        h = np.maximum(linear(h, self.p, "fc2"), 0.0)
        return linear(h, self.p, "out").reshape(len(h), self.count, DIMS)

"""SMPL-IK's hypotheses: a few poses that between them cover where the true pose may be.

Few effectors leave much of the body free, and the flow's random draws (`flow.py`) spread
over 69 dimensions, most of which barely show: eight of them rarely land near the pose the
artist has in mind. This head instead answers each problem with COUNT poses at once, trained
winner-takes-all (multiple-choice learning): for every training problem only the hypothesis
nearest the true pose learns from it (the others a little, so none is left untrained), so
each specialises in one way the free joints commonly go (an arm up or down, the weight on one
leg or the other) and the nearest of them is near the truth as often as the data allows.

Like the flow it reads the deterministic network's last hidden layer (`SmplIk.predict`'s
features) and answers residual rotations on its pose, R_j = D_j exp(x_j): a small MLP,
features (B, base_width) -> (B, COUNT, 72). The hypotheses are stored in the order of how
often each was the nearest on validation problems, so the first few are the likeliest.
`SmplIk.sample(spread="hypotheses")` (the default when the weights are there) decodes them
and refines each under the pins; each keeps its latent under the flow, so a drag can carry it
on like any sample.
"""
from pathlib import Path

import numpy as np

from .nn import WEIGHTS_DIR, linear, load_weights

ARCH = "smplik-hypotheses-v1"
DEFAULT_HYPOTHESES_WEIGHTS = WEIGHTS_DIR / "smplik_hypotheses.npz"
DIMS = 72


def expected_shapes(cfg):
    h, n, base = cfg["hidden"], cfg["count"], cfg["base_width"]
    return {"fc1.weight": (h, base), "fc1.bias": (h,), "fc2.weight": (h, h), "fc2.bias": (h,),
            "out.weight": (n * DIMS, h), "out.bias": (n * DIMS,)}


class Hypotheses:
    """The numpy head. `Hypotheses.load(path)` checks the file's architecture and arrays;
    `count` is how many poses it answers; `residuals(features)` -> (B, count, 72) axis-angle
    residuals on the deterministic pose, in float64."""

    def __init__(self, params, config):
        self.config = config
        self.count = int(config["count"])
        self.p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}

    @classmethod
    def load(cls, path=DEFAULT_HYPOTHESES_WEIGHTS):
        return cls(*load_weights(Path(path), ARCH, expected_shapes))

    def residuals(self, features):
        h = np.maximum(linear(np.asarray(features, dtype=np.float64), self.p, "fc1"), 0.0)
        h = np.maximum(linear(h, self.p, "fc2"), 0.0)
        return linear(h, self.p, "out").reshape(len(h), self.count, DIMS)

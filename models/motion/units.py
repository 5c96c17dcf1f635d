"""Length units of a source skeleton: parsing a unit a person names, and inferring one from
the skeleton's limb lengths (an adult is 1.4-2.1 m tall)."""
import math

import numpy as np

from ..body.measure import measure
from ..body.model import NUM_BETAS
from ..core.errors import SmplIkError
from ..core.skeleton import JOINT_INDEX

# Metres per file unit ("cmu": CMU's ASF/AMC skeletons, and BVH made from them: 1/0.45 inch).
LENGTH_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "inch": 0.0254, "cmu": 0.0254 / 0.45}
ADULT_HEIGHT_M = (1.4, 2.1)     # an adult's stature: the unit that puts the source here wins
TYPICAL_HEIGHT_M = 1.7          # ... and, if several do, the one nearest this
# The limbs whose lengths set the unit: the same bones on every skeleton convention.
UNIT_LIMBS = (("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("right_hip", "right_knee"),
              ("right_knee", "right_ankle"), ("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"),
              ("right_shoulder", "right_elbow"), ("right_elbow", "right_wrist"))


def parse_unit(text):
    """('name', metres per file unit) from a unit name in LENGTH_UNITS or a positive number
    of metres; raises SmplIkError naming the choices."""
    text = str(text).strip()
    if text in LENGTH_UNITS:
        return text, LENGTH_UNITS[text]
    try:
        metres = float(text)
    except ValueError:
        metres = float("nan")
    if not (math.isfinite(metres) and metres > 0):
        raise SmplIkError(f"unit {text!r}: use one of {', '.join(LENGTH_UNITS)} or metres per file "
                          "unit as a positive number (0.01 for centimetres)")
    return f"{metres:g} m", metres


def _limb_lengths(p):
    """UNIT_LIMBS lengths (n,) of SMPL-joint positions p (24, 3), NaN where unmapped."""
    return np.array([np.linalg.norm(p[JOINT_INDEX[b]] - p[JOINT_INDEX[a]]) for a, b in UNIT_LIMBS])


def infer_unit(ref_smpl, body):
    """('name', metres per unit) of a skeleton from its limb lengths: the LENGTH_UNITS entry
    that makes it an adult's size (ADULT_HEIGHT_M; nearest TYPICAL_HEIGHT_M among several).
    ref_smpl: (24, 3) reference joints at SMPL joints in file units (NaN where unmapped).
    The size compares the limbs with `body`'s mean shape, whose height is known."""
    src = _limb_lengths(ref_smpl)
    template = _limb_lengths(body.rest_joints(np.zeros(NUM_BETAS)))
    ok = np.isfinite(src) & (src > 0)
    if not ok.any():
        raise SmplIkError("the skeleton's arms and legs have zero length")
    per_metre = float(np.median(src[ok] / template[ok]))   # file units per metre of the mean body
    mean_height = measure(body, np.zeros(NUM_BETAS)).height

    def badness(name):
        height = LENGTH_UNITS[name] * per_metre * mean_height
        low, high = ADULT_HEIGHT_M
        outside = max(math.log(low / height), math.log(height / high), 0.0)
        return outside, abs(math.log(height / TYPICAL_HEIGHT_M))

    name = min(LENGTH_UNITS, key=badness)
    return name, LENGTH_UNITS[name]

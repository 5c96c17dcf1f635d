"""Shape inversion (SMPL-SI's): SMPL betas whose skeleton has a source's absolute limb lengths
and body widths, and `check_body`, the figures that say whether the fitted body is plausible.

Joints are linear in betas and a chain of bones' length nearly so: the fit is a few steps of
small bounded least squares (`fit_shape`).
"""
import math
from dataclasses import dataclass

import numpy as np

from ..body.measure import measure
from ..body.model import NUM_BETAS
from ..core.errors import SmplIkError
from ..core.metrics import angle_deg
from ..core.skeleton import JOINT_INDEX, NUM_JOINTS
from .mapping import build_mapping
from .source_rig import smpl_positions, source_rig, torso_axes, zero_pose_positions
from .skeleton_shape import SkeletonShape
from .units import ADULT_HEIGHT_M

# |beta| the shape fit may use (docs/training_log.md, "Retargeting limits").
BETA_BOUND = 5.0
AT_BOUND_SD = 0.1               # a beta this close to the bound counts as held there
LENGTH_RESIDUAL_LIMIT = 0.05    # RMS relative bone-length miss above which a body is flagged
# Degrees: a torso lean differing from the source's by more is flagged
LEAN_LIMIT_DEG = 10.0           # (docs/training_log.md, "Retargeting limits")

# Chains of points (a joint, or {joint: weight}) whose lengths the shape fit matches: whole
# bones that measure alike on every skeleton convention
# (docs/training_log.md, "Shape fit measurements").
MID_HIPS = {"left_hip": 0.5, "right_hip": 0.5}   # the point halfway between the hips
MEASUREMENTS = {
    "left thigh": ("left_hip", "left_knee"), "right thigh": ("right_hip", "right_knee"),
    "left shin": ("left_knee", "left_ankle"), "right shin": ("right_knee", "right_ankle"),
    "left upper arm": ("left_shoulder", "left_elbow"), "right upper arm": ("right_shoulder", "right_elbow"),
    "left forearm": ("left_elbow", "left_wrist"), "right forearm": ("right_elbow", "right_wrist"),
    "hip width": ("right_hip", "left_hip"),
    "shoulder width": ("right_shoulder", "right_collar", "left_collar", "left_shoulder"),
    "torso": (MID_HIPS, "pelvis", "spine1", "spine2", "spine3", "neck"),
}

# The measurements that are single limb bones, whose ends every convention puts at the same joints.
BONES = tuple(n for n in MEASUREMENTS if n.split()[-1] in ("thigh", "shin", "arm", "forearm"))


def _point_weights(point):
    """(24,) weights over SMPL joints of a MEASUREMENTS point."""
    w = np.zeros(NUM_JOINTS)
    for name, k in (point.items() if isinstance(point, dict) else ((point, 1.0),)):
        w[JOINT_INDEX[name]] = k
    return w


@dataclass(frozen=True)
class ShapeFit:
    """Shape inversion result: SMPL joints(betas) ~ source joints, absolute lengths (metres)."""

    betas: np.ndarray          # (10,), each within +-BETA_BOUND
    names: tuple               # the measurements fitted
    residual_mm: np.ndarray    # per measurement, |fitted - source| in mm
    length_ratio: np.ndarray   # per measurement, fitted SMPL length / source length
    source_m: np.ndarray       # per measurement, the source's length in metres

    @property
    def at_bound(self):
        """Indices of the betas at +-BETA_BOUND (within AT_BOUND_SD: the prior keeps a beta that
        wants to go further a hair inside)."""
        return tuple(int(k) for k in np.flatnonzero(np.abs(self.betas) >= BETA_BOUND - AT_BOUND_SD))

    @property
    def length_residual(self):
        """RMS of |fitted - source| / source (a fraction) over the bones: the thighs, shins,
        upper arms and forearms, whose ends every convention puts at the same joints (where
        rigs put the pelvis, neck and collars differs, so widths and torso are left out)."""
        bones = [k for k, n in enumerate(self.names) if n in BONES]
        error = 1e-3 * self.residual_mm[bones] / self.source_m[bones]
        return float(np.sqrt(np.mean(error ** 2))) if bones else float("nan")

    def report(self):
        return {"betas": np.round(self.betas, 3).tolist(),
                "length_residual_pct": round(100 * self.length_residual, 2),
                "measurements": {n: {"source_m": round(float(m), 4), "length_ratio": round(float(q), 3),
                                     "residual_mm": round(float(r), 1)}
                                 for n, m, q, r in zip(self.names, self.source_m, self.length_ratio,
                                                      self.residual_mm)}}


def _bounded_lstsq(a_mat, b_vec, bound):
    """argmin |A x - b| with |x| <= bound: least squares on the free variables, the ones that
    overshoot held at their bound, until none does (an active-set loop; at most n solves)."""
    n = a_mat.shape[1]
    x = np.zeros(n)
    held = np.zeros(n, bool)
    for _ in range(n + 1):
        free = ~held
        x[free] = np.linalg.lstsq(a_mat[:, free], b_vec - a_mat[:, held] @ x[held], rcond=None)[0]
        over = free & (np.abs(x) > bound)
        if not over.any():
            break
        worst = np.flatnonzero(over)[np.argmax(np.abs(x[over]))]
        x[worst] = np.sign(x[worst]) * bound
        held[worst] = True
    return x


def _chain_lengths(chains, joints):
    """Lengths (M,) of chains (lists of (24,) segment weights) on rest joints (24, 3) and
    their derivatives (M, 3 * 24) by the joints."""
    lengths, grads = [], []
    for steps in chains:
        g = np.zeros((NUM_JOINTS, 3))
        total = 0.0
        for d in steps:
            seg = d @ joints
            n = np.linalg.norm(seg)
            total += n
            g += np.outer(d, seg / max(n, 1e-12))
        lengths.append(total)
        grads.append(g.ravel())
    return np.array(lengths), np.array(grads)


def fit_shape(body, joints, beta_prior=3e-5, iterations=4, measurements=None, least=6):
    """Fit betas to the source's limb lengths and body widths, at their absolute size.

    joints: (..., 24, 3) source positions at SMPL joints, one pose or many (metres; NaN where
    unmapped, or missing from a pose). measurements: {name: chain of points} as MEASUREMENTS
    (the default) has them; a source whose joints are SMPL's own (a joint file of SMPL's 24)
    can give every bone. Each chain's source length is the sum over its segments of their
    median length over the poses that show both its ends, so the fit sees lengths, not the
    pose the file was drawn in. Joints are linear in betas and a chain's length nearly so: a few Gauss-Newton
    steps of bounded least squares (betas within +-BETA_BOUND), with a small prior keeping
    betas near 0 (units: m^2 per beta^2). SmplIkError when fewer than `least` chains are
    measured.
    """
    joints = np.asarray(joints, dtype=np.float64).reshape(-1, NUM_JOINTS, 3)
    j0 = body.rest_joints(np.zeros(NUM_BETAS))
    jd = np.stack([body.rest_joints(np.eye(NUM_BETAS)[k]) - j0 for k in range(NUM_BETAS)], axis=-1)
    names, chains, targets = [], [], []
    for name, points in (MEASUREMENTS if measurements is None else measurements).items():
        weights = [_point_weights(p) for p in points]
        have = [w for w in weights if np.isfinite(joints[:, w != 0]).all(axis=(1, 2)).any()]
        steps = [b - a for a, b in zip(have[:-1], have[1:])]   # (24,) weights per segment
        # NaN in the frames that miss an end (a joint file's gaps); a segment no frame shows drops the chain
        seen = [np.linalg.norm(np.einsum("j,tjc->tc", d[d != 0], joints[:, d != 0]), axis=-1) for d in steps]
        if not all(np.isfinite(s).any() for s in seen):
            continue
        length = sum(np.nanmedian(s) for s in seen)
        if steps and length >= 1e-3:
            names.append(name)
            chains.append(steps)
            targets.append(length)
    if len(names) < least:
        raise SmplIkError(f"too few limbs mapped to fit a body shape ({len(names)} lengths"
                          + (f": {', '.join(names)}" if names else "") + f"; {least} needed)")
    targets = np.array(targets)
    betas = np.zeros(NUM_BETAS)
    prior = np.sqrt(beta_prior) * np.eye(NUM_BETAS)
    for _ in range(iterations):
        lengths, grads = _chain_lengths(chains, j0 + jd @ betas)
        jac = grads @ jd.reshape(3 * NUM_JOINTS, NUM_BETAS)       # (M, 10)
        a_mat = np.concatenate([jac, prior])
        b_vec = np.concatenate([targets - lengths + jac @ betas, np.zeros(NUM_BETAS)])
        betas = _bounded_lstsq(a_mat, b_vec, BETA_BOUND)
    fitted, _ = _chain_lengths(chains, body.rest_joints(betas))
    return ShapeFit(betas=betas, names=tuple(names), residual_mm=1e3 * np.abs(fitted - targets),
                    length_ratio=fitted / targets, source_m=targets)


def invert_shape(skeleton, body, mapping=None, length_unit=None):
    """Shape inversion for a skeleton whose OFFSET pose is its rest: (ShapeFit, SourceRig).
    For a motion file, whose zero pose may not be a rest pose, `retarget` finds the reference
    in the motion itself."""
    mapping = mapping or build_mapping(skeleton.names, shape=SkeletonShape(
        parents=tuple(skeleton.parents), poses=zero_pose_positions(skeleton.parents, skeleton.offsets)[None],
        end_site=tuple(skeleton.end_site)), names_first=True)
    rig = source_rig(skeleton, mapping, body, length_unit=length_unit)
    return fit_shape(body, smpl_positions(rig.ref_positions, mapping, {})), rig


# --- how plausible the body is ---------------------------------------------------------------

def torso_lean_deg(joints):
    """Mean angle (degrees) over frames between the torso (mid-hips to mid-shoulders) and
    SMPL's up axis (+Y); joints (T, 24, 3) in SMPL's frame. NaN when unmapped."""
    _, up, _ = torso_axes(joints)
    return float(np.nanmean(angle_deg(up, np.array([0.0, 1.0, 0.0]))))


@dataclass(frozen=True)
class BodyCheck:
    """Whether a fitted body is plausible: its rest height, largest |beta|, RMS bone-length
    residual and torso lean against the source's, and a warning for each figure out of range."""

    height_m: float
    max_abs_beta: float
    length_residual_pct: float
    lean_source_deg: float
    lean_body_deg: float
    warnings: tuple

    def report(self):
        """A JSON-ready dict (None for a lean that cannot be measured)."""
        def num(x, digits):
            return round(float(x), digits) if math.isfinite(x) else None
        return {"height_m": num(self.height_m, 3), "max_abs_beta": num(self.max_abs_beta, 2),
                "length_residual_pct": num(self.length_residual_pct, 2),
                "torso_lean_deg": {"source": num(self.lean_source_deg, 1), "body": num(self.lean_body_deg, 1)},
                "warnings": list(self.warnings)}


def check_body(body, shape, rig, lean_source, lean_body):
    """The BodyCheck of a ShapeFit on `body` for SourceRig `rig` (leans in degrees)."""
    height = measure(body, shape.betas).height
    warnings = []
    low, high = ADULT_HEIGHT_M
    if not rig.unit_given and not low <= height <= high:
        warnings.append(f"body {height:.2f} m tall, outside {low}-{high} m for an adult: is the file's "
                        f"unit ({rig.unit_name}) right? Give it with --unit")
    if shape.at_bound:
        warnings.append(f"betas {', '.join(map(str, shape.at_bound))} at their bound +-{BETA_BOUND:g}: "
                        "the source's proportions are outside this body's shape space")
    if shape.length_residual > LENGTH_RESIDUAL_LIMIT:
        worst = max((k for k, n in enumerate(shape.names) if n in BONES),
                    key=lambda k: abs(shape.length_ratio[k] - 1))
        warnings.append(f"bone lengths miss the source's by {100 * shape.length_residual:.1f}% (RMS; worst "
                        f"{shape.names[worst]} {100 * (shape.length_ratio[worst] - 1):+.0f}%)")
    if abs(lean_body - lean_source) > LEAN_LIMIT_DEG:
        warnings.append(f"torso leans {lean_body:.1f} deg where the source leans {lean_source:.1f} deg")
    return BodyCheck(height_m=height, max_abs_beta=float(np.abs(shape.betas).max()),
                     length_residual_pct=100 * shape.length_residual, lean_source_deg=lean_source,
                     lean_body_deg=lean_body, warnings=tuple(warnings))

"""The cost J of a pose: what "natural" means when several poses meet the same effectors.

    J = prior + effort / EFFORT_UNIT + LIMIT_WEIGHT * sum(excess^2)

- prior: how unusual the pose is, 0.5 * sum(((a - mean) / std)^2) over the 23 non-root joints'
  local axis-angle components, with the mean and spread of the training poses (mirrored
  copies included), stored in the flow's weights file.
- effort: the static effort of holding the limbs against gravity, in newton-metres: at every
  joint below the pelvis, the torque of the mass it carries (its own segment and everything
  beyond it) about it, summed. A hanging arm costs nothing; an arm held out sideways costs
  about 15 N m at the shoulder. Segment masses come from the body's volume (`Segments`).
- excess: how far (radians) each knee and elbow Euler angle is beyond its range
  (refine.JOINT_LIMITS); refined poses have none.
"""
from dataclasses import dataclass

import numpy as np

from ..body.measure import DENSITY, mesh_volume   # DENSITY kg / m^3: a body weighs its volume times this
from ..core.kinematics import forward_kinematics
from ..core.rotations import matrix_to_axis_angle, matrix_to_euler
from ..core.skeleton import CHILDREN, JOINT_INDEX, PARENTS

GRAVITY = 9.81       # m / s^2, along the body frame's -Y
EFFORT_UNIT = 10.0   # N m of holding torque that cost as much as one unit of the prior
LIMIT_WEIGHT = 100.0


@dataclass(frozen=True)
class Segments:
    """Each joint's body segment: mass (24,) kilograms and centre of mass (24, 3) as an offset
    from the joint in the rest pose (metres)."""

    mass: np.ndarray
    centre: np.ndarray

    @classmethod
    def from_body(cls, body, betas=None):
        """Split the rest mesh's volume among the joints: every triangle goes to the joint
        whose skinning weight is largest on it, and spans a tetrahedron with the nearest point
        of that joint's bone (from the joint to its children's mean; the joint itself for the
        head, hands and feet). Limbs and trunk are nearly star-shaped about their bones, so
        the tetrahedra fill each segment without reaching into the next; they miss the
        concave folds (about a fifth of the volume on the open body), so the masses are scaled
        to the whole mesh's volume (measure.mesh_volume) times DENSITY."""
        betas = np.zeros(10) if betas is None else np.asarray(betas, dtype=np.float64)
        v = body.shaped_vertices(betas)
        rest = body.rest_joints(betas)
        tri = v[body.faces]                                            # (F, 3, 3)
        owner = body.weights[body.faces].mean(1).argmax(1)             # (F,)
        ends = np.array([rest[list(CHILDREN[j])].mean(0) if CHILDREN[j] else rest[j] for j in range(len(rest))])
        start, stop = rest[owner], ends[owner]
        bone = stop - start
        middle = tri.mean(1)
        along = np.einsum("fc,fc->f", middle - start, bone) / np.maximum(np.einsum("fc,fc->f", bone, bone), 1e-12)
        apex = start + np.clip(along, 0.0, 1.0)[:, None] * bone
        a, b, c = (tri[:, i] - apex for i in range(3))
        vol = np.einsum("fi,fi->f", a, np.cross(b, c)) / 6.0
        centre = apex + (a + b + c) / 4.0
        n = len(rest)
        mass = np.bincount(owner, vol, n) * DENSITY
        moment = np.stack([np.bincount(owner, vol * centre[:, k], n) for k in range(3)], 1) * DENSITY
        whole = mesh_volume(v, body.faces) * DENSITY
        mass, moment = (x * whole / max(mass.sum(), 1e-9) for x in (mass, moment))
        com = np.where(np.abs(mass)[:, None] > 1e-9, moment / np.where(np.abs(mass) > 1e-9, mass, 1.0)[:, None], rest)
        return cls(mass=np.maximum(mass, 0.0), centre=com - rest)

    def scaled_to(self, rest, reference_rest):
        """The same segments on a skeleton of another size: offsets scale with the height
        span of the rest joints, masses with its cube."""
        span = lambda r: np.ptp(np.asarray(r)[..., 1], axis=-1)   # noqa: E731
        s = span(rest) / span(reference_rest)
        return Segments(mass=self.mass * s ** 3, centre=self.centre * s)


def _subtree_order():
    order = [0]
    for j in order:
        order += list(CHILDREN[j])
    return order[::-1]   # leaves first


_LEAVES_FIRST = _subtree_order()


def effort(local_rot, trans, rest, segments):
    """Holding torque summed over the joints below the pelvis, N m, for poses (..., 24, 3, 3)."""
    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    com = fk.positions + np.einsum("...jab,jb->...ja", fk.rotations, segments.centre)
    carried = np.broadcast_to(segments.mass, com.shape[:-1]).copy()           # (..., 24)
    moment = com * segments.mass[:, None]                                    # (..., 24, 3)
    for j in _LEAVES_FIRST:
        p = PARENTS[j]
        if p >= 0:
            carried[..., p] += carried[..., j]
            moment[..., p, :] += moment[..., j, :]
    lever = moment - carried[..., None] * fk.positions                       # (..., 24, 3)
    horizontal = np.linalg.norm(lever[..., [0, 2]], axis=-1) * GRAVITY
    return horizontal[..., 1:].sum(-1)


def prior_cost(local_rot, mean, std):
    a = matrix_to_axis_angle(local_rot[..., 1:, :, :]).reshape(local_rot.shape[:-3] + (-1,))
    return 0.5 * (((a - mean) / std) ** 2).sum(-1)


def limit_excess(local_rot):
    """Sum of squared radians by which knees and elbows are beyond JOINT_LIMITS, (...,)."""
    from .refine import JOINT_LIMITS

    total = np.zeros(local_rot.shape[:-3])
    for lim in JOINT_LIMITS:
        angles = matrix_to_euler(local_rot[..., JOINT_INDEX[lim.joint], :, :], lim.order)
        low, high = np.radians(lim.low), np.radians(lim.high)
        total += (np.maximum(low - angles, 0) ** 2 + np.maximum(angles - high, 0) ** 2).sum(-1)
    return total


def pose_cost(local_rot, trans, rest, segments, mean, std):
    """J and its terms for poses (..., 24, 3, 3), trans (..., 3), rest (..., 24, 3):
    {"cost", "prior", "effort_nm", "limit_excess"}, each (...,)."""
    local_rot = np.asarray(local_rot, dtype=np.float64)
    prior = prior_cost(local_rot, mean, std)
    held = effort(local_rot, trans, rest, segments)
    excess = limit_excess(local_rot)
    return {"cost": prior + held / EFFORT_UNIT + LIMIT_WEIGHT * excess, "prior": prior,
            "effort_nm": held, "limit_excess": excess}


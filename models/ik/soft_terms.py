"""Balance and self-collision as rows of the refinement's soft level: the centre of mass kept
over the feet that carry weight, the arms kept out of the trunk and thighs."""
import numpy as np

from ..core.rotations import unit
from ..core.skeleton import NUM_JOINTS
from .cost import FEET_INDICES, carrying_feet, default_parts
from .geometry import convex_hull, outside_polygon, pair_depths
from .residuals import ANCESTOR, POSITION

BALANCE_MARGIN = 0.01        # metres: how far inside the support polygon balance puts the centre of mass
# metres: a start whose centre of mass is further outside is left so (SoftTerms: a body in motion)
BALANCE_REACH = 0.15   # (docs/training_log.md, "Balance reach")
BALANCE_WEIGHT = 1.0         # the balance row's weight (a soft position effector's is its weight, per metre)
COLLISION_ALLOWANCE = 0.005  # metres of capsule overlap left alone: a hand resting on a hip presses in a little
COLLISION_WEIGHT = 10.0      # a collision row's weight: a hand stops at the body, not half way into it


class _TermBody:
    """What SoftTerms needs of a body on one skeleton, worked out once per rest pose: its
    cost.BodyParts and the arrays its rows use."""

    def __init__(self, parts):
        self.parts = parts
        seg = parts.segments
        self.mass = seg.mass / seg.mass.sum()                                 # (24,) fractions
        self.mass_centre = self.mass[:, None] * seg.centre
        self.subtree_mass = ANCESTOR.T @ self.mass                            # (24,) below each joint
        self.sole_ancestors = ANCESTOR[parts.soles.joints]                    # (K, 24)
        feet = [np.flatnonzero(parts.sole_foot == f) for f in (0, 1)]
        self.soles = {(True, False): feet[0], (False, True): feet[1], (True, True): np.concatenate(feet)}
        self.left, self.right = feet
        caps = parts.capsules
        self.pair_ancestors = (ANCESTOR[caps.joint[caps.pairs[:, 0]]], ANCESTOR[caps.joint[caps.pairs[:, 1]]])
        # a pair is checked closely only where the spheres around its capsules overlap
        reach = np.linalg.norm(caps.stop - caps.start, axis=1) / 2 + caps.radius
        self.pair_reach2 = 4 * (reach[caps.pairs[:, 0]] + reach[caps.pairs[:, 1]]) ** 2   # (twice the gap)^2
        self.hull = None   # the last support polygon (SoftTerms._support)


_TERM_BODIES = {}


def _term_body(body_parts, rest):
    """The _TermBody of these BodyParts (None: the open body's) on rest joints (24, 3), remembered
    for the last few skeletons (a drag asks on every step)."""
    key = (id(body_parts), rest.tobytes())
    if key not in _TERM_BODIES:
        if len(_TERM_BODIES) >= 8:
            _TERM_BODIES.pop(next(iter(_TERM_BODIES)))
        parts = body_parts.scaled_to(rest) if body_parts is not None else default_parts(rest)
        _TERM_BODIES[key] = (body_parts, _TermBody(parts))   # holds body_parts so its id stays its own
    return _TERM_BODIES[key][1]


class SoftTerms:
    """Balance and self-collision as residual rows of the soft level (RefineOptions.balance,
    self_collision), only while they are active: none when the pose is balanced and no arm is
    in the body.

    Balance: the body stands when a foot (its ankle or foot joint) is pinned hard by position,
    or a floor is set and a foot is on it (cost.stands; with neither, nothing says the body is
    on the ground, and balance does not apply); the feet that carry weight are
    cost.carrying_feet's (near the lowest foot or the floor, or pinned and not lifted over
    cost.LIFTED). Its row is the centre of mass's horizontal distance outside the support
    polygon (the convex hull of those soles) less BALANCE_MARGIN, so it ends that far inside.
    A start whose centre of mass is more than BALANCE_REACH outside is left so: its pins hold
    a body in motion there (a long stride, a run, a jump), and pulling it over its feet would
    bend the free joints out of shape; from a start nearer, balance holds all the way,
    however far the pins then pull.
    Self-collision: a row for every arm capsule inside a trunk or thigh capsule by more than
    COLLISION_ALLOWANCE, its depth beyond that, moving both: where a pin holds the arm inside
    (a wrist pinned in the chest), the trunk or thigh moves off it as far as its own pins let
    it, and the arm swings about the pin."""

    def __init__(self, options, hard, rest):
        self.body = _term_body(options.body_parts, rest)
        self.balance, self.collision, self.floor = options.balance, options.self_collision, options.floor
        position = hard.joint[hard.kind == POSITION]
        self.pinned = tuple(bool(np.isin(position, pair).any()) for pair in FEET_INDICES)
        self.started = None   # whether balance applies from the start (BALANCE_REACH); None before it

    def rows(self, fk, pinned=True):
        """Residuals (R,) and Jacobian rows (R, 75) of the active terms at a pose (fk); none
        while not `pinned` (the hard level is still far off: pulled aside before the pins hold,
        a pose can settle where they no longer all can). The first pose asked about is the
        start (where balance may be left off, BALANCE_REACH)."""
        if not pinned:
            if self.balance and self.started is None:
                self._balance_rows(fk)   # the start decides whether balance applies
            return np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3))
        parts_r, parts_j = [], []
        if self.balance:
            r, j = self._balance_rows(fk)
            parts_r.append(r), parts_j.append(j)
        if self.collision:
            r, j = self._collision_rows(fk)
            parts_r.append(r), parts_j.append(j)
        if not parts_r:
            return np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3))
        return np.concatenate(parts_r), np.concatenate(parts_j)

    def arm_inside(self, fk, depth=COLLISION_ALLOWANCE):
        """Whether self-collision is on and an arm capsule is more than `depth` (metres, at
        least COLLISION_ALLOWANCE) in the body at a pose (fk)."""
        rows = self._collision_rows(fk)[0] if self.collision else ()
        return bool(np.any(np.asarray(rows) > COLLISION_WEIGHT * (depth - COLLISION_ALLOWANCE)))

    def _support(self, points, which):
        """The support polygon of sole points (S, 2): its corners (indices into points), each
        corner's point and edge's outward normal. Found again only when the feet that carry
        weight change or move by over a millimetre (pinned feet stay put, from solve to solve)."""
        hull = self.body.hull
        if hull is None or hull[0] is not which or np.abs(points - hull[1]).max() > 1e-3:
            corners = convex_hull(points)
            edge = points[np.roll(corners, -1)] - points[corners]
            outward = np.stack([edge[:, 1], -edge[:, 0]], 1) / np.maximum(np.linalg.norm(edge, axis=1), 1e-12)[:, None]
            hull = self.body.hull = (which, points, corners, outward)
        return hull[2], hull[3]

    def _balance_rows(self, fk):
        none = np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3))
        if self.started is False:
            return none   # the start was far off balance: left as the pins hold it
        body = self.body
        soles = body.parts.soles.positions(fk)                                # (K, 3)
        carry = carrying_feet((float(soles[body.left, 1].min()), float(soles[body.right, 1].min())),
                              self.pinned, self.floor, on_lowest=False)
        if not any(carry):
            return none
        which = body.soles[carry]
        points = soles[which][:, [0, 2]]
        corners, outward = self._support(points, which)
        com = (body.mass @ fk.positions + np.einsum("jab,jb->a", fk.rotations, body.mass_centre))[[0, 2]]
        if len(corners) >= 3 and (((com - points[corners]) * outward).sum(1) <= -BALANCE_MARGIN).all():
            self.started = True if self.started is None else self.started
            return none   # well inside (inside a convex polygon, on the inner side of every edge)
        out = outside_polygon(com, corners, points)
        if self.started is None:
            self.started = out.distance <= BALANCE_REACH
        if not self.started or out.distance <= -BALANCE_MARGIN:
            return none
        # the centre of mass under joint k's turn w: w x (sum over k's subtree of m (c - p_k))
        seg_com = fk.positions + np.einsum("jab,jb->ja", fk.rotations, body.parts.segments.centre)
        moment = ANCESTOR.T @ (body.mass[:, None] * seg_com) - body.subtree_mass[:, None] * fk.positions   # (24, 3)
        normal = np.array([out.normal[0], 0.0, out.normal[1]])
        row = np.zeros(3 * NUM_JOINTS + 3)
        # d(n . x) for x moved by w about p: n . (w x (x - p)) = w . ((x - p) x n)
        turn = np.cross(moment, normal)
        for k, weight in ((which[out.a], 1.0 - out.t), (which[out.b], out.t)):
            if weight:
                turn -= weight * np.cross(soles[k] - fk.positions, normal) * body.sole_ancestors[k][:, None]
        row[:3 * NUM_JOINTS] = turn.ravel()
        return np.array([BALANCE_WEIGHT * (out.distance + BALANCE_MARGIN)]), BALANCE_WEIGHT * row[None]

    def _collision_rows(self, fk):
        none = np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3))
        body = self.body
        caps = body.parts.capsules
        ends = caps.ends(fk)                                                  # (C, 2, 3)
        middle = ends.sum(1)                                                  # twice the middles
        gap = middle[caps.pairs[:, 0]] - middle[caps.pairs[:, 1]]
        near = np.flatnonzero((gap * gap).sum(1) < body.pair_reach2)
        if not len(near):
            return none
        depth, pa, pb = pair_depths(ends, caps.radius, caps.pairs[near])
        keep = depth > COLLISION_ALLOWANCE
        if not keep.any():
            return none
        deep, depth, pa, pb = near[keep], depth[keep], pa[keep], pb[keep]
        normal = unit(pa - pb)                                                # (A, 3) from the trunk to the arm
        # the depth falls as the arm's point moves along the normal and the trunk's against it
        arm = np.cross(pa[:, None] - fk.positions, normal[:, None]) * body.pair_ancestors[0][deep][..., None]
        trunk = np.cross(pb[:, None] - fk.positions, normal[:, None]) * body.pair_ancestors[1][deep][..., None]
        rows = np.zeros((len(deep), 3 * NUM_JOINTS + 3))
        rows[:, :3 * NUM_JOINTS] = (trunk - arm).reshape(len(deep), -1)
        return COLLISION_WEIGHT * (depth - COLLISION_ALLOWANCE), COLLISION_WEIGHT * rows

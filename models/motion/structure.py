"""Find a humanoid's joints from its tree and its geometry alone, whatever its bones are called.

Input: a skeleton_shape.SkeletonShape (parents, positions in one or more poses: a rig's rest or
a motion's frames, end sites, the joints to leave out). Output: the joint at each of SMPL's 24
joints, each hand's finger chains, and how sure each choice is.

How: the four leaves farthest apart along the tree are the tips of the limbs. Their paths pair
up into two disjoint pairs, joined by the spine: the pair nearer the root are the legs, the
other the arms, and the pelvis and the chest are where they branch. Along each limb, the
joints are chosen whose segments come closest to SMPL's proportions and point straight at the
next chosen joint, so twist halves, helpers and zero-length joints are passed over. Left and
right come from the body's facing (the toes, the bend of the knees), never from the names.
"""
import itertools
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import SmplIkError
from ..core.metrics import angle_deg
from ..core.rotations import unit
from .fingers import finger_chains

# SMPL's proportions (its neutral rest skeleton, metres), as ratios within a chain.
THIGH_OVER_SHIN = 0.383 / 0.439
UPPER_OVER_FOREARM = 0.261 / 0.234
SPINE_FRACTIONS = {"spine1": 0.071 / 0.472, "spine2": 0.155 / 0.472, "spine3": 0.282 / 0.472}   # pelvis -> neck
HEAD_OVER_SPINE = 0.102 / 0.282   # neck -> head against pelvis -> spine3 (path lengths)
TIP_SHARE = 0.9         # leaves at least this share of the farthest one's distance from the chest: finger tips
STRAIGHT_DEG = 3.0      # a joint whose path never bends more than this is a twist or helper joint
BEND_SCALE_DEG = 20.0   # how much a chosen joint's off-line segment costs (per this many degrees)
SIDE_SURE = 0.3         # below this confidence the side is left to the names, when they know it
LIMB_COST_LIMIT = np.log(2.5) ** 2   # a limb whose best split is further than this from SMPL's has lost a joint
QUADRUPED_DEG = 120.0   # legs less than this from the spine's direction (median): not a standing body


@dataclass(frozen=True)
class Structure:
    """What the search found: joints {smpl joint: index}, confidence {smpl joint: 0..1},
    fingers {'left'/'right': {finger: (indices, base to tip)}}, and `sides`: how sure the
    left/right choice is for the legs and for the arms, with the two candidates of each
    (indices of the hips and shoulders), so names can settle a side geometry cannot."""

    joints: dict
    confidence: dict
    fingers: dict = field(default_factory=dict)
    sides: dict = field(default_factory=dict)   # 'legs'/'arms': (confidence, (left joints), (right joints))
    cost: float = 0.0   # how far the limbs are from a human's proportions (summed limb costs)

    @property
    def complete(self):
        """Both legs (hip, knee, ankle) and both arms (shoulder, elbow, wrist) found."""
        return all(f"{side}_{part}" in self.joints for side in ("left", "right")
                   for part in ("hip", "knee", "ankle", "shoulder", "elbow", "wrist"))


class _Tree:
    """The kept joints as a tree: parent, children, segment lengths (median over poses)."""

    def __init__(self, shape, drop_satellites=False):
        parents = np.asarray(shape.parents, int)
        n = len(parents)
        keep = np.asarray(shape.keep, bool) if len(shape.keep) else np.ones(n, bool)
        self.end = np.asarray(shape.end_site, bool) if len(shape.end_site) else np.zeros(n, bool)
        self.poses = np.asarray(shape.poses, float)
        parent = np.full(n, -1)
        for j in range(n):
            p = parents[j]
            while p >= 0 and not keep[p]:
                p = parents[p]
            parent[j] = p
        self.keep = keep
        self.parent = parent
        self.children = [[] for _ in range(n)]
        for j in range(n):
            if keep[j] and parent[j] >= 0:
                self.children[parent[j]].append(j)
        seg = np.zeros(n)
        has = (parent >= 0) & keep
        seg[has] = np.median(np.linalg.norm(self.poses[:, has] - self.poses[:, parent[has]], axis=-1), axis=0)
        self.seg = seg
        roots = [j for j in range(n) if keep[j] and parent[j] < 0]   # the largest tree, when several
        self.root = max(roots, key=lambda r: sum(seg[k] for k in self.subtree(r)))
        if drop_satellites:
            self._drop_satellites()
        self.members = self.subtree(self.root)
        self.depth = np.zeros(n)
        self.level = np.zeros(n, int)
        for j in self.members:
            if j != self.root:
                self.depth[j] = self.depth[parent[j]] + seg[j]
                self.level[j] = self.level[parent[j]] + 1
        extent = self.poses[:, self.members]
        self.size = float(np.median(np.linalg.norm(extent.max(axis=1) - extent.min(axis=1), axis=-1)))
        self.eps = 1e-3 * max(self.size, 1e-9)

    def _drop_satellites(self):
        """Leave out small branches beside the body above where it splits into legs and spine
        (a game rig's IK and attachment bones under its root bone)."""
        j = self.root
        total = len(self.subtree(j))
        while True:
            sizes = {c: len(self.subtree(c)) for c in self.children[j]}
            big = [c for c, n in sizes.items() if n > 0.8 * total]
            if not big:
                return
            self.children[j] = big
            j = big[0]

    def subtree(self, j):
        out, stack = [], [j]
        while stack:
            k = stack.pop()
            out.append(k)
            stack.extend(self.children[k])
        out.sort(key=lambda k: (self.level[k] if hasattr(self, "level") else 0, k))
        return out

    def ancestors(self, j):   # j, its parent, ... up to the root
        out = []
        while j >= 0:
            out.append(j)
            j = self.parent[j]
        return out

    def lca(self, *js):
        common = set(self.ancestors(js[0]))
        for j in js[1:]:
            common &= set(self.ancestors(j))
        return max(common, key=lambda k: self.level[k])

    def distance(self, a, b):
        return self.depth[a] + self.depth[b] - 2 * self.depth[self.lca(a, b)]

    def path(self, top, bottom):
        """The joints from just below `top` down to `bottom`, a descendant of it."""
        out = []
        j = bottom
        while j != top:
            out.append(j)
            j = self.parent[j]
        return out[::-1]

    def leaves(self, j):
        return [k for k in self.subtree(j) if not self.children[k]]

    def mappable(self, j):  # an end site marks where a bone ends: never a joint to map
        return not self.end[j]


class _Search:
    def __init__(self, shape, label, drop_satellites=False):
        self.t = _Tree(shape, drop_satellites)
        self.label = label
        self.p = self.t.poses

    def refuse(self, why):
        raise SmplIkError(f"{self.label}: not a humanoid skeleton: {why}")

    # --- the limbs --------------------------------------------------------------------------
    def limb_tips(self):
        t = self.t
        leaves = [k for k in t.members if not t.children[k]]
        if len(leaves) < 4:
            self.refuse(f"no legs found: it has {len(leaves)} chain end(s), and a body needs two legs, "
                        "two arms and a head")
        d = np.array([[t.distance(a, b) for b in leaves] for a in leaves])
        a, b = np.unravel_index(np.argmax(d), d.shape)
        picked = [a, b]
        for _ in range(min(len(leaves), 6) - 2):
            score = d[:, picked].sum(axis=1)
            score[picked] = -1
            picked.append(int(np.argmax(score)))
        return [leaves[i] for i in picked]

    def pair_limbs(self, tips):
        t = self.t
        pairings = [((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))]
        disjoint = []
        for (i, j), (k, m) in pairings:
            first = self._path_nodes(tips[i], tips[j])
            second = self._path_nodes(tips[k], tips[m])
            if not first & second:
                disjoint.append(((tips[i], tips[j]), (tips[k], tips[m])))
        if len(disjoint) != 1:
            self.refuse("no legs found: its four longest chains all start at one joint, as a hand's fingers "
                        "do (a hand-only skeleton?)")
        one, two = disjoint[0]
        hub_one, hub_two = t.lca(*one), t.lca(*two)
        legs, arms = (one, two) if t.level[hub_one] <= t.level[hub_two] else (two, one)
        return legs, arms

    def _path_nodes(self, a, b):
        m = self.t.lca(a, b)
        return set(self.t.path(m, a)) | set(self.t.path(m, b)) | {m}

    # --- segments along a path ----------------------------------------------------------------
    def seg_vec(self, a, b):
        """(F, 3) from joint a to joint b in every pose."""
        return self.p[:, b] - self.p[:, a]

    def length(self, a, b):
        return float(np.median(np.linalg.norm(self.seg_vec(a, b), axis=-1)))

    def off_line(self, path, i, target):
        """Degrees (median over poses) between the first non-zero segment leaving path[i]
        along the path and the line from path[i] to `target`."""
        a = path[i]
        for b in path[i + 1:]:
            if self.length(a, b) > self.t.eps:
                return float(np.median(zero_angle_deg(self.seg_vec(a, b), self.seg_vec(a, target))))
        return 0.0

    def bends(self, path, i):
        """Most the path bends at path[i] over the poses (degrees), or 0 at a zero-length joint."""
        if i == 0 or i + 1 >= len(path):
            return 0.0
        a, j, b = path[i - 1], path[i], path[i + 1]
        if self.length(a, j) <= self.t.eps or self.length(j, b) <= self.t.eps:
            return 0.0
        return float(np.max(zero_angle_deg(self.seg_vec(a, j), self.seg_vec(j, b))))

    def limb(self, start, path, ratio, tail_limit, must_hold=()):
        """Choose (top, middle, end) on a limb path: the two segments closest to `ratio` (upper
        over lower), each chosen joint's segment pointing at the next, the rest of the path
        after `end` no longer than tail_limit x the lower segment, `end` an ancestor of every
        joint in must_hold; `top` away from `start`, where the limb leaves the body. Returns
        (indices into path, cost, runner-up cost)."""
        t = self.t
        cand = [i for i, j in enumerate(path) if t.mappable(j)]
        costs = []
        for a in cand:
            if self.length(start, path[a]) <= t.eps:
                continue
            for b in cand:
                if b <= a:
                    continue
                upper = self.length(path[a], path[b])
                if upper <= t.eps:
                    continue
                for c in cand:
                    if c <= b:
                        continue
                    lower = self.length(path[b], path[c])
                    if lower <= t.eps:
                        continue
                    if must_hold and not all(path[c] in t.ancestors(h) for h in must_hold):
                        continue
                    tail = t.depth[path[-1]] - t.depth[path[c]]
                    cost = np.log(upper / lower / ratio) ** 2
                    cost += max(0.0, tail / lower - tail_limit) * 10
                    cost += (self.off_line(path, a, path[b]) / BEND_SCALE_DEG) ** 2
                    cost += (self.off_line(path, b, path[c]) / BEND_SCALE_DEG) ** 2
                    skipped = [k for k in range(a + 1, c) if k != b]
                    cost += 0.5 * sum((self.bends(path, k) / BEND_SCALE_DEG) ** 2 for k in skipped)
                    costs.append((cost, (a, b, c)))
        costs.sort(key=lambda x: x[0])
        if not costs or costs[0][0] > LIMB_COST_LIMIT:
            return None, np.inf, np.inf
        runner = costs[1][0] if len(costs) > 1 else np.inf
        return costs[0][1], costs[0][0], runner

    def first_after(self, path, i, min_distance=None):
        """The first mappable joint after path[i] at more than min_distance (default: any)
        from it that is no straight helper, or None."""
        a = path[i]
        limit = self.t.eps if min_distance is None else min_distance
        for k in range(i + 1, len(path)):
            j = path[k]
            if not self.t.mappable(j) or self.length(a, j) <= limit:
                continue
            if k + 1 < len(path) and self.bends(path, k) < STRAIGHT_DEG and self.length(j, path[k + 1]) > self.t.eps \
                    and self.t.mappable(path[k + 1]):
                continue   # a straight helper partway along the bone
            return j
        return None


def zero_angle_deg(a, b):   # core.metrics.angle_deg, 0 (not NaN) where a vector is zero
    return np.nan_to_num(angle_deg(a, b))


def _confidence(cost, runner):   # 0..1: how clearly the best choice beat the next one
    if not np.isfinite(runner):
        return 1.0
    return float(np.clip((runner - cost) / (runner + 1e-9), 0.0, 1.0) ** 0.5)


def find_structure(shape, label="the skeleton"):
    """Search a SkeletonShape for a humanoid's joints: a Structure. Raises SmplIkError saying why
    a skeleton is no humanoid (no legs, limbs that meet at one joint, a four-legged stance).
    A skeleton refused as it is gets a second look without the small branches beside its
    body under the root (a game rig's IK bones)."""
    try:
        return _find(_Search(shape, label))
    except SmplIkError as first:
        try:
            return _find(_Search(shape, label, drop_satellites=True))
        except SmplIkError:
            raise first from None


def _find(s):
    """Of four among the chain ends farthest apart (a face's chains may be among them), those
    that make two whole legs and two whole arms closest to a human's proportions; failing that,
    the farthest four, to say why."""
    sets = list(itertools.combinations(s.limb_tips(), 4))
    whole = []
    for four in sets:
        try:
            found = _find_from(s, four)
        except SmplIkError:
            continue
        if found.complete:
            whole.append(found)
    if whole:
        return min(whole, key=lambda f: f.cost)
    return _find_from(s, sets[0])


def _find_from(s, tips):
    t = s.t
    legs_tips, arms_tips = s.pair_limbs(list(tips))
    pelvis = t.lca(*legs_tips, *arms_tips)
    chest = t.lca(*arms_tips)
    joints, conf = {"pelvis": pelvis}, {"pelvis": 1.0}

    legs = []
    for tip in legs_tips:
        path = s.t.path(pelvis, tip)
        choice, cost, runner = s.limb(pelvis, path, THIGH_OVER_SHIN, tail_limit=0.8)
        if choice is None:   # a joint is missing: the hip alone, the rest reported as not found
            top = next((i for i, j in enumerate(path) if t.mappable(j) and s.length(pelvis, j) > t.eps), None)
            if top is None:
                s.refuse("no legs found: a leg needs a hip, a knee and an ankle")
            legs.append(dict(hip=path[top], knee=None, ankle=None, foot=None, conf=0.0, tip=tip, low=path[-1]))
            continue
        hip, knee, ankle = (path[i] for i in choice)
        foot = s.first_after(path, choice[2])
        legs.append(dict(hip=hip, knee=knee, ankle=ankle, foot=foot, conf=_confidence(cost, runner), tip=tip,
                         low=ankle, cost=cost))
    arms = []
    for tip in arms_tips:
        path = s.t.path(chest, tip)
        top = path[0]
        far = [leaf for leaf in t.leaves(top) if t.distance(chest, leaf) >= TIP_SHARE * t.distance(chest, tip)]
        choice, cost, runner = s.limb(chest, path, UPPER_OVER_FOREARM, tail_limit=1.2,
                                      must_hold=far if len(far) > 1 else ())
        if choice is None:   # a joint is missing: the shoulder alone, the rest reported as not found
            top = next((i for i, j in enumerate(path) if t.mappable(j) and s.length(chest, j) > t.eps), None)
            if top is None:
                s.refuse("no arms found: an arm needs a shoulder, an elbow and a wrist")
            arms.append(dict(collar=None, shoulder=path[top], elbow=None, wrist=None, conf=0.0, tip=tip, path=path))
            continue
        shoulder, elbow, wrist = (path[i] for i in choice)
        collar = path[0] if choice[0] > 0 and t.mappable(path[0]) and s.length(path[0], shoulder) > t.eps else None
        arms.append(dict(collar=collar, shoulder=shoulder, elbow=elbow, wrist=wrist,
                         conf=_confidence(cost, runner), tip=tip, path=path, cost=cost))

    _check_stance(s, pelvis, chest, legs)
    _spine(s, pelvis, chest, arms, joints, conf)
    fingers = {}
    sides = {}
    left_of = _facing(s, pelvis, chest, legs)
    for name, limbs, key in (("legs", legs, "hip"), ("arms", arms, "shoulder")):
        a, b = limbs
        vote = np.einsum("fi,fi->f", unit(s.p[:, a[key]] - s.p[:, b[key]]), left_of)
        vote = vote[np.isfinite(vote)]
        sure = float(np.clip(abs(np.median(vote)) / 0.5, 0, 1) * np.mean(np.sign(vote) == np.sign(np.median(vote))))\
            if len(vote) else 0.0
        left, right = (a, b) if len(vote) and np.median(vote) >= 0 else (b, a)
        sides[name] = (sure, tuple(v for v in left.values() if isinstance(v, (int, np.integer))),
                       tuple(v for v in right.values() if isinstance(v, (int, np.integer))))
        for side, limb in (("left", left), ("right", right)):
            for part in (("hip", "knee", "ankle", "foot") if name == "legs"
                         else ("collar", "shoulder", "elbow", "wrist")):
                if limb[part] is not None:
                    joints[f"{side}_{part}"] = int(limb[part])
                    conf[f"{side}_{part}"] = round(min(limb["conf"], sure) if part != "collar" else sure, 3)
            if name == "arms" and limb["wrist"] is not None:
                chains = finger_chains(s, limb["wrist"], limb["elbow"])
                if chains:
                    fingers[side] = chains
                    if "middle" in chains:
                        joints[f"{side}_hand"] = chains["middle"][0]
                        conf[f"{side}_hand"] = round(min(limb["conf"], sure), 3)
    joints = {k: int(v) for k, v in joints.items()}
    return Structure(joints=joints, confidence={k: round(float(v), 3) for k, v in conf.items()},
                     fingers=fingers, sides=sides, cost=sum(limb.get("cost", np.inf) for limb in legs + arms))


def _check_stance(s, pelvis, chest, legs):
    """Refuse a body whose legs do not point away from its spine (a four-legged stance)."""
    up = s.p[:, chest] - s.p[:, pelvis]
    down = sum(s.p[:, leg["low"]] - s.p[:, leg["hip"]] for leg in legs)
    angle = float(np.median(zero_angle_deg(up, down)))
    if angle < QUADRUPED_DEG:
        s.refuse(f"its legs stand at {angle:.0f} degrees to its spine, where a standing body's point away "
                 f"from it (over {QUADRUPED_DEG:.0f}): a four-legged skeleton?")


def _spine(s, pelvis, chest, arms, joints, conf):
    """The neck and head up the chest's branch that is no arm; the chest as spine3 or spine2 and
    the trunk's joints below it as spine1 and spine2, all by SMPL's proportions along the path
    from the pelvis to the neck."""
    t = s.t
    total = t.depth[chest] - t.depth[pelvis]
    if total <= t.eps:
        s.refuse("its hips and shoulders branch from one place: no spine found")
    neck = _neck_and_head(s, pelvis, chest, arms, joints, conf, total)
    reach = (t.depth[neck] if neck is not None else t.depth[chest] / SPINE_FRACTIONS["spine3"]) - t.depth[pelvis]
    frac = {j: (t.depth[j] - t.depth[pelvis]) / reach for j in t.path(pelvis, chest) if t.mappable(j)}
    hub = "spine3" if abs(frac[chest] - SPINE_FRACTIONS["spine3"]) <= abs(frac[chest] - SPINE_FRACTIONS["spine2"]) \
        else "spine2"
    joints[hub], conf[hub] = chest, 1.0
    slots = ("spine1", "spine2") if hub == "spine3" else ("spine1",)
    trunk = [j for j in frac if j != chest]
    best, best_cost = {}, np.inf
    options = [None] + trunk
    for one in options:
        for two in (options if len(slots) == 2 else [None]):
            if one is not None and two is not None and frac[two] <= frac[one]:
                continue
            picked = dict(zip(slots, (one, two)))
            if len({v for v in picked.values() if v is not None}) < sum(v is not None for v in picked.values()):
                continue
            cost = 0.0
            for name, j in picked.items():
                cost += 0.2 ** 2 if j is None else (frac[j] - SPINE_FRACTIONS[name]) ** 2
            if cost < best_cost:
                best, best_cost = picked, cost
    for name, j in best.items():
        if j is not None:
            joints[name] = j
            conf[name] = round(1.0 - min(1.0, abs(frac[j] - SPINE_FRACTIONS[name]) / 0.2), 3)


def _neck_and_head(s, pelvis, chest, arms, joints, conf, total):
    """Find the neck and the head (into joints, conf); returns the neck or None."""
    t = s.t
    arm_tops = {a["path"][0] for a in arms}
    heads = [k for k in t.children[chest] if k not in arm_tops and k not in t.path(pelvis, chest)]
    # the head's branch: the one that reaches farthest from the chest, arms set aside
    best_tip, reach = None, 0.0
    for k in heads:
        for leaf in t.leaves(k):
            if t.distance(chest, leaf) > reach:
                best_tip, reach = leaf, t.distance(chest, leaf)
    if best_tip is None:
        return None
    path = t.path(chest, best_tip)
    neck_at = next((i for i, j in enumerate(path) if t.mappable(j) and s.length(chest, j) > t.eps), None)
    if neck_at is None:
        return None
    neck = path[neck_at]
    joints["neck"], conf["neck"] = neck, 1.0
    # the head: where the neck's branch ends or splits (eyes, jaw), the upper of joints at one place
    ends = [leaf for leaf in t.leaves(neck) if leaf != neck]
    if not ends:
        return neck
    head = t.lca(*ends)
    while head != neck and (not t.mappable(head) or s.length(t.parent[head], head) <= t.eps):
        head = t.parent[head]
    if head == neck:
        return neck
    below = [k for k in t.subtree(head) if k != head and t.mappable(k) and s.length(head, k) > t.eps]
    conf["head"] = 1.0
    if not below:   # a joint at the top of the skull (`head_end`, `HeadTop_End`), or the head itself
        up = t.parent[head]
        while up != neck and s.length(up, head) <= t.eps:
            up = t.parent[up]
        if up != neck:
            want = HEAD_OVER_SPINE * total
            score = {j: abs(np.log((t.depth[j] - t.depth[neck]) / want)) for j in (head, up)}
            head, other = sorted(score, key=score.get)
            conf["head"] = round(_confidence(score[head], score[other]), 3)
    joints["head"] = head
    return neck


def _facing(s, pelvis, chest, legs):
    """(F, 3) the body's left in each pose: up the spine crossed with forward (toes, knees);
    NaN in a pose that shows no forward."""
    up = unit(s.p[:, chest] - s.p[:, pelvis])
    forward = np.zeros_like(up)
    for leg in legs:
        cues = [s.p[:, leg["tip"]] - s.p[:, leg["low"]]]   # the toes
        if leg["knee"] is not None:   # the knee, ahead of the line from hip to ankle when bent
            cues.append(s.p[:, leg["knee"]] - 0.5 * (s.p[:, leg["hip"]] + s.p[:, leg["low"]]))
        for cue in cues:
            cue = cue - np.sum(cue * up, axis=-1, keepdims=True) * up
            forward += cue
    size = np.linalg.norm(forward, axis=-1, keepdims=True)
    forward = np.where(size > 1e-3 * s.t.size, forward / np.where(size > 0, size, 1), np.nan)
    return unit(np.cross(up, forward))

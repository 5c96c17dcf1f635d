"""IK-GAT in numpy: a full set of 3D joint positions to SMPL local rotations in one pass.

Rotations are built in bone-aligned frames, all joints at once: a joint with one child turns
by the shortest arc (in the pelvis's frame) that lays its rest (T-pose) bone onto the
observed bone, then twists about the bone by the network's angle; the pelvis and upper spine (three children each) take
the rigid fit of their children; the leaves (head, hands, feet), which positions cannot see,
take the network's rotation relative to their parent. On exact positions bone directions are
therefore exact whatever the network says; what it learns is the twists and the leaves. A small
graph-attention network over the SMPL tree (attention limited to joints a few edges apart)
predicts them from the joints' positions in the pelvis's frame and the body's rest joints.

Noisy positions (a detector's, a noisy joint file's) would pass their noise straight into the
bone directions. So the network (architecture ikgat-v2) also predicts, for every joint that is
not a leaf, a correction rotation in the pelvis's frame that turns the observed bone toward
where the rest of the body says it lies. It is applied to a pose whose bone lengths differ from
the rest joints' by more than LENGTH_TOLERANCE (exact positions keep their lengths; noise does
not), or always or never by `denoise`. Weights of the older ikgat-v1 (no correction) still load.

The classical answer to compare with is `models.core.kinematics.analytic_rotations`: swing
only in each parent's frame, zero twist, identity leaves (HybrIK-style).
"""
from functools import lru_cache

import numpy as np

from ..core.errors import SmplIkError
from .nn import WEIGHTS_DIR, fold_norms, linear, load_weights, normalise
from ..core.rotations import kabsch, rot6d_to_matrix, shortest_arc, skew, unit
from ..core.kinematics import world_to_local
from ..core.skeleton import CHILDREN, LEAVES, MIRROR, MULTI, NUM_JOINTS, PARENT_OR_SELF, PARENTS, SINGLE

ARCHS = ("ikgat-v1", "ikgat-v2")
OUTPUTS = {"ikgat-v1": 6, "ikgat-v2": 12}   # twist or leaf 6D; ikgat-v2 adds a correction's 6D
DEFAULT_WEIGHTS = WEIGHTS_DIR / "ikgat.npz"
NUM_FEATURES = 12
LENGTH_TOLERANCE = 1e-3   # m: a bone this much longer or shorter than at rest marks the pose noisy


def hop_distance():
    """(24, 24) number of tree edges between joints."""
    d = np.full((NUM_JOINTS, NUM_JOINTS), 99)
    for j in range(NUM_JOINTS):
        d[j, j] = 0
        frontier, seen = [j], {j}
        while frontier:
            nxt = []
            for a in frontier:
                for b in list(CHILDREN[a]) + ([PARENTS[a]] if PARENTS[a] >= 0 else []):
                    if b not in seen:
                        seen.add(b)
                        d[j, b] = d[j, a] + 1
                        nxt.append(b)
            frontier = nxt
    return d


def twist_matrix(axis, cos_sin):
    """(..., 3, 3) rotation about unit `axis` (..., 3) by the angle whose (cos, sin) is given
    (normalised here)."""
    cs = cos_sin / np.maximum(np.linalg.norm(cos_sin, axis=-1, keepdims=True), 1e-9)
    k = skew(axis)
    r = k @ k
    r *= 1 - cs[..., 0:1, None]
    r += cs[..., 1:2, None] * k
    r += np.eye(3, dtype=r.dtype)
    return r


# index lists for the pose's assembly: joints with one child and that child, leaves and their
# parents, every joint but the leaves
SINGLE_CHILD_JOINTS, SINGLE_CHILDREN = list(SINGLE), [CHILDREN[j][0] for j in SINGLE]
LEAF_JOINTS, LEAF_PARENTS = list(LEAVES), [PARENTS[j] for j in LEAVES]
NON_LEAF_JOINTS = [j for j in range(NUM_JOINTS) if j not in LEAVES]
_SIX_IDENTITY = np.array([1.0, 0, 0, 0, 1.0, 0], np.float32)


def noisy_poses(positions, rest, tolerance=LENGTH_TOLERANCE):
    """(B,) True where some bone of positions (B, 24, 3) is longer or shorter than the same
    bone of rest (B, 24, 3) by more than `tolerance` metres."""
    bones = np.linalg.norm(positions[:, 1:] - positions[:, list(PARENTS[1:])], axis=-1)
    rest_bones = np.linalg.norm(rest[:, 1:] - rest[:, list(PARENTS[1:])], axis=-1)
    return np.abs(bones - rest_bones).max(-1) > tolerance


def _multi_rotations(positions, rest):
    """World rotations (B, 2, 3, 3) of the pelvis and spine3 (rigid fits of their children),
    in one batched SVD."""
    kids = [list(CHILDREN[j]) for j in MULTI]
    a = np.stack([rest[:, k, :] - rest[:, j:j + 1, :] for j, k in zip(MULTI, kids)], 1)
    b = np.stack([positions[:, k, :] - positions[:, j:j + 1, :] for j, k in zip(MULTI, kids)], 1)
    return kabsch(a, b)


def assemble(positions, rest, twist, leaf, multi=None, correction=None):
    """Local rotations (B, 24, 3, 3), every joint at once.

    positions, rest: (B, 24, 3); twist: (B, 24, 2) (cos, sin) about each single-child
    joint's rest bone; leaf: (B, 24, 3, 3) the leaves' rotations relative to their parents;
    multi: the pelvis and spine3 rotations if already known; correction: (B, 24, 3, 3)
    rotations in the pelvis's frame (as the positions give it) applied to every joint that is
    not a leaf before the leaves are placed, or None.
    """
    world = np.empty(positions.shape + (3,), dtype=positions.dtype)
    world[:, list(MULTI)] = _multi_rotations(positions, rest) if multi is None else multi
    # swings are taken in the pelvis's frame, so twists do not depend on the heading
    r0 = world[:, :1]
    a = unit(rest[:, SINGLE_CHILDREN] - rest[:, SINGLE_CHILD_JOINTS])
    d = np.einsum("nkba,nkb->nka", np.broadcast_to(r0, (len(r0), len(SINGLE_CHILD_JOINTS), 3, 3)),
                  positions[:, SINGLE_CHILDREN] - positions[:, SINGLE_CHILD_JOINTS])
    world[:, SINGLE_CHILD_JOINTS] = r0 @ (shortest_arc(a, d) @ twist_matrix(a, twist[:, SINGLE_CHILD_JOINTS]))
    if correction is not None:
        r0 = r0.copy()
        world[:, NON_LEAF_JOINTS] = (r0 @ correction[:, NON_LEAF_JOINTS]
                                     @ (r0.transpose(0, 1, 3, 2) @ world[:, NON_LEAF_JOINTS]))
    world[:, LEAF_JOINTS] = world[:, LEAF_PARENTS] @ leaf[:, LEAF_JOINTS]
    return world_to_local(world)


def features(positions, rest, multi):
    """(B, 24, 12) network input: positions and parent offsets in the pelvis's frame, and
    rest offsets (to the parent and to the pelvis)."""
    canon = (positions - positions[:, :1]) @ multi[:, 0]
    return np.concatenate([canon, canon - canon[:, list(PARENT_OR_SELF)], rest - rest[:, list(PARENT_OR_SELF)],
                           rest - rest[:, :1]], axis=-1)


def expected_shapes(cfg):
    d, f, h = cfg["dim"], NUM_FEATURES, cfg["hidden"]
    shapes = {"embed": (NUM_JOINTS, d), "inp.weight": (d, f), "inp.bias": (d,),
              "out_norm.weight": (d,), "out_norm.bias": (d,), "out.weight": (OUTPUTS[cfg["arch"]], d),
              "out.bias": (OUTPUTS[cfg["arch"]],)}
    for i in range(cfg["layers"]):
        shapes.update({
            f"layers.{i}.norm1.weight": (d,), f"layers.{i}.norm1.bias": (d,),
            f"layers.{i}.qkv.weight": (3 * d, d), f"layers.{i}.qkv.bias": (3 * d,),
            f"layers.{i}.proj.weight": (d, d), f"layers.{i}.proj.bias": (d,),
            f"layers.{i}.norm2.weight": (d,), f"layers.{i}.norm2.bias": (d,),
            f"layers.{i}.fc1.weight": (h, d), f"layers.{i}.fc1.bias": (h,),
            f"layers.{i}.fc2.weight": (d, h), f"layers.{i}.fc2.bias": (d,),
        })
    return shapes


# The left-right mirrored problem (x -> -x, M = diag(-1, 1, 1)): its input is the mirror joints'
# features with every x negated (the pelvis frame of a mirrored body is M R0 M, so a point's
# coordinates in it are mirrored too). Its outputs, read back for the original: a twist
# (cos, sin) about a mirrored bone turns the other way, and a leaf's 6D (two columns of R)
# becomes that of M R M; the same signs serve both.
MIRROR_SIGN = np.array([1.0, -1, -1, -1, 1, 1], np.float32)
MIRROR_FEATURES = np.tile(np.array([-1.0, 1, 1], np.float32), NUM_FEATURES // 3)


class IkGat:
    """The numpy IK-GAT. `IkGat.load(path)` checks the file's architecture.

    symmetric (default): the network also sees the problem mirrored left-right and the two
    answers are averaged, so mirrored positions give exactly the mirrored rotations (at twice
    the network's cost; see docs/learned_ik.md). denoise: "auto" (default) corrects the bone
    directions of poses whose bone lengths are off their rest lengths (noisy_poses), True every
    pose, False none (bone directions exactly as given); ikgat-v1 weights never correct."""

    def __init__(self, params, config, symmetric=True, denoise="auto"):
        if denoise not in ("auto", True, False):
            raise SmplIkError(f"IK-GAT denoise must be 'auto', True or False, not {denoise!r}")
        self.config, self.heads = config, config["heads"]
        self.symmetric, self.denoise = symmetric, denoise
        layers = range(config["layers"])
        p = fold_norms(params, [(f"layers.{i}.norm1", f"layers.{i}.qkv") for i in layers]
                       + [(f"layers.{i}.norm2", f"layers.{i}.fc1") for i in layers] + [("out_norm", "out")])
        d = config["dim"]
        scale = np.ones(3 * d, np.float32)
        scale[:d] = 1.0 / np.sqrt(d // self.heads)   # attention's 1/sqrt(head width), folded into the queries
        for i in layers:
            p[f"layers.{i}.qkv.weight_t"] = p[f"layers.{i}.qkv.weight_t"] * scale
            p[f"layers.{i}.qkv.bias"] = p[f"layers.{i}.qkv.bias"] * scale
        p["inp.bias"] = p["inp.bias"] + p["embed"]   # (24, dim): each joint's embedding rides on the bias
        self.p = p
        self.mask = np.where(hop_distance() <= config["hops"], 0.0, -1e9).astype(np.float32)

    @classmethod
    def load(cls, path=DEFAULT_WEIGHTS, symmetric=True, denoise="auto"):
        return cls(*load_weights(path, ARCHS, expected_shapes), symmetric=symmetric, denoise=denoise)

    def network(self, x):
        """(B, 24, 12) features -> (B, 24, 6 or 12) raw outputs."""
        p, heads = self.p, self.heads
        b = x.shape[0]
        h = linear(x, p, "inp")
        d = h.shape[-1]
        dh = d // heads
        for i in range(self.config["layers"]):
            pre = f"layers.{i}."
            qkv = linear(normalise(h), p, pre + "qkv")
            qkv = qkv.reshape(b, NUM_JOINTS, 3, heads, dh).transpose(2, 0, 3, 1, 4)  # (3, B, H, 24, dh)
            att = qkv[0] @ qkv[1].transpose(0, 1, 3, 2) + self.mask
            att -= att.max(-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(-1, keepdims=True)
            o = (att @ qkv[2]).transpose(0, 2, 1, 3).reshape(b, NUM_JOINTS, d)
            h += linear(o, p, pre + "proj")
            hidden = linear(normalise(h), p, pre + "fc1")
            h += linear(np.maximum(hidden, 0.0, out=hidden), p, pre + "fc2")
        return linear(normalise(h), p, "out")

    def __call__(self, positions, rest):
        """Local rotations (..., 24, 3, 3) for joint positions and rest joints (..., 24, 3),
        metres, body frame. Runs in float32."""
        positions = np.asarray(positions, dtype=np.float32)
        lead = positions.shape[:-2]
        if positions.shape[-2:] != (NUM_JOINTS, 3):
            raise SmplIkError(f"IK-GAT needs positions of shape (..., 24, 3), got {positions.shape}")
        rest = np.broadcast_to(np.asarray(rest, dtype=np.float32), positions.shape).reshape(-1, NUM_JOINTS, 3)
        positions = positions.reshape(-1, NUM_JOINTS, 3)
        if not (np.all(np.isfinite(positions)) and np.all(np.isfinite(rest))):
            raise SmplIkError("IK-GAT input contains NaN or infinite values")
        multi = _multi_rotations(positions, rest)
        x = features(positions, rest, multi)
        if self.symmetric:
            both = self.network(np.concatenate([x, x[:, list(MIRROR)] * MIRROR_FEATURES]))
            out = both[:len(x)]
            out += both[len(x):, list(MIRROR)] * np.tile(MIRROR_SIGN, out.shape[-1] // 6)
            out *= 0.5
        else:
            out = self.network(x)
        twist = out[..., :2] + np.array([1.0, 0.0], np.float32)
        leaf = np.empty(out.shape[:-1] + (3, 3), np.float32)  # only the leaves' entries are read
        leaf[:, LEAF_JOINTS] = rot6d_to_matrix(out[:, LEAF_JOINTS, :6] + _SIX_IDENTITY)
        correction = None
        if out.shape[-1] == 12 and self.denoise is not False:
            rows = np.ones(len(out), bool) if self.denoise is True else noisy_poses(positions, rest)
            if rows.any():
                correction = np.broadcast_to(np.eye(3, dtype=np.float32), out.shape[:-1] + (3, 3)).copy()
                correction[rows] = rot6d_to_matrix(out[rows, :, 6:] + _SIX_IDENTITY)
        local = assemble(positions, rest, twist, leaf, multi, correction)
        return local.astype(np.float64).reshape(lead + (NUM_JOINTS, 3, 3))


@lru_cache(maxsize=4)
def load_ikgat(path=str(DEFAULT_WEIGHTS), denoise="auto"):
    """Cached IkGat for a weights path and a `denoise` setting."""
    return IkGat.load(path, denoise=denoise)

"""Training batches for the learned-IK trainers (torch): random poses on random bodies.

Every batch draws poses (each source folder an equal share: locomotion and sport, and the
varied motion), puts them on a random body (one of the three open bodies, its betas ~ N(0, 1)
scaled by 0.5-1.75, each bone's length varied by a few percent as other skeletons differ),
mirrors half of them left-right and turns them to a random heading (`sample_batch`), then
places them in the world (`placed_batch`).
"""
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ..body.model import GENDERS, NUM_BETAS, load_body_model, open_body_path
from ..core.kinematics import depth_levels
from ..core.skeleton import CHILDREN, JOINT_INDEX, JOINT_NAMES, MIRROR, NUM_JOINTS, PARENTS, SINGLE
from .rotations import axis_angle_to_matrix, kabsch, shortest_arc, unit


class TorchBody:
    """Rest joints of the open bodies (all three genders by default) as linear functions of
    betas, in torch."""

    def __init__(self, paths=None):
        paths = ([open_body_path(g) for g in GENDERS] if paths is None
                 else [paths] if isinstance(paths, (str, Path)) else paths)
        j0, jd = [], []
        for path in paths:
            body = load_body_model(path)
            zero = body.rest_joints(np.zeros(NUM_BETAS))
            j0.append(zero)
            jd.append(np.stack([body.rest_joints(np.eye(NUM_BETAS)[k]) - zero for k in range(NUM_BETAS)], -1))
        self.j0 = torch.tensor(np.stack(j0), dtype=torch.float32)     # (K, 24, 3)
        self.jd = torch.tensor(np.stack(jd), dtype=torch.float32)     # (K, 24, 3, 10)

    def __len__(self):
        return len(self.j0)

    def rest_joints(self, betas, which=None):
        """(N, 24, 3) rest joints for betas (N, 10) on body `which` (N,) (default the first)."""
        which = torch.zeros(len(betas), dtype=torch.long) if which is None else which
        return self.j0[which] + torch.einsum("njcb,nb->njc", self.jd[which], betas)


def vary_bones(rest, scale):
    """Rest joints (N, 24, 3) with each bone (joint minus parent) times scale (N, 24)."""
    out = rest.clone()
    for j in range(1, NUM_JOINTS):   # SMPL lists every parent before its children
        p = PARENTS[j]
        out[:, j] = out[:, p] + scale[:, j, None] * (rest[:, j] - rest[:, p])
    return out


def body_alignment(rest_from, rest_to):
    """(N, 24, 3, 3) per joint, the rest-frame rotation taking its bones on rest_to onto the
    same bones on rest_from (both (N, 24, 3)): Kabsch over the children where a joint has
    several (the pelvis, the upper spine), the shortest arc for one, none for a leaf (the
    retargeting aims a leaf along the source's own head, foot or hand)."""
    eye = torch.eye(3, dtype=rest_to.dtype).expand(len(rest_to), 3, 3)
    out = []
    for j in range(NUM_JOINTS):
        kids = list(CHILDREN[j])
        if not kids:
            out.append(eye)
            continue
        to, frm = rest_to[:, kids] - rest_to[:, j:j + 1], rest_from[:, kids] - rest_from[:, j:j + 1]
        out.append(kabsch(to, frm) if len(kids) > 1 else shortest_arc(to[:, 0], frm[:, 0]))
    return torch.stack(out, 1)


def transfer_pose(local_rot, rest_from, rest_to):
    """Local rotations (N, 24, 3, 3) of a pose on rest_from, carried onto rest_to as
    retargeting would have put the same capture there: every joint keeps its bones' world
    directions and its world frame turns only as much as that needs (L'_j = T_p^T L_j T_j,
    T from `body_alignment`). Without it, a body whose rest spine bends otherwise (the open
    male body's) would wear the neutral body's rotations and bend with them."""
    t = body_alignment(rest_from, rest_to)
    t_parent = torch.cat([torch.eye(3, dtype=t.dtype).expand(len(t), 1, 3, 3), t[:, list(PARENTS[1:])]], 1)
    return t_parent.transpose(-1, -2) @ local_rot @ t


def fk(local_rot, rest, trans=None):
    """Torch forward kinematics: (B, 24, 3, 3), (B, 24, 3) -> world rotations, positions.
    All joints of one depth at once (8 levels instead of 23 joints)."""
    rots, pos = [local_rot[:, :1]], [rest[:, :1]]
    order = [0]
    for joints, parents in depth_levels(tuple(PARENTS)):
        where = [order.index(p) for p in parents]
        prot = torch.cat(rots, 1)[:, where]
        rots.append(prot @ local_rot[:, joints])
        offset = (rest[:, joints] - rest[:, parents])[..., None]
        pos.append(torch.cat(pos, 1)[:, where] + (prot @ offset)[..., 0])
        order += list(joints)
    inverse = [order.index(j) for j in range(NUM_JOINTS)]
    rots, pos = torch.cat(rots, 1)[:, inverse], torch.cat(pos, 1)[:, inverse]
    if trans is not None:
        pos = pos + trans[:, None]
    return rots, pos


# Limbs and trunk, for part swaps: each group's local rotations can come from another frame.
PARTS = ((1, 4, 7, 10), (2, 5, 8, 11), (3, 6, 9, 12, 15), (13, 16, 18, 20, 22), (14, 17, 19, 21, 23))


def bend_bones(rot, rest, chance, gen, joints=SINGLE, max_degrees=40.0):
    """Turn the bone of each of `joints` (one-child joints), with the given chance, by up to
    max_degrees while keeping its twist: the joint's local rotation R = swing(b -> R b)
    twist(b) about its rest bone b becomes swing(b -> S R b) twist(b), with S a random turn
    about an axis across the bone: the bends other rigs make beyond the capture, without
    twisting (docs/training_log.md, "Bone bends"). rot (B, 24, 3, 3) local rotations, rest
    (B, 24, 3); returns the bent local rotations, drawn with `gen`."""
    kids = [CHILDREN[j][0] for j in joints]
    joints, size = list(joints), len(rot)
    b = unit(rest[:, kids] - rest[:, joints])        # rest frames are the world's: b is in the parent's frame too
    r = rot[:, joints]
    d = (r @ b[..., None])[..., 0]
    twist = shortest_arc(b, d).transpose(-1, -2) @ r
    axis = unit(torch.cross(d, torch.randn(d.shape, generator=gen), dim=-1))
    angle = torch.rand(size, len(joints), 1, generator=gen) * np.radians(max_degrees)
    bent = (axis_angle_to_matrix(axis * angle) @ d[..., None])[..., 0]
    take = ((torch.rand(size, len(joints), generator=gen) < chance)
            & ((b * d).sum(-1) > -0.9) & ((b * bent).sum(-1) > -0.9))   # shortest arcs far from a half turn
    rot = rot.clone()
    rot[:, joints] = torch.where(take[..., None, None], shortest_arc(b, bent) @ twist, r)
    return rot


@dataclass(frozen=True)
class Augmentation:
    """How training poses are varied beyond the capture (all off by default).

    swap: the chance that each limb or the trunk (PARTS) takes its local rotations from
    another random frame, so the networks meet new combinations of the recorded limbs.
    jitter: the chance that each joint below the pelvis is set to its rest rotation (as on a
    rig that does not carry it, such as hands that follow the forearm), and the same chance
    that it turns by a further random rotation of up to 45 degrees (poses the capture lacks).
    bend: the chance that the bone of each of bend_joints (indices of one-child joints) turns
    by up to bend_degrees with its twist kept (`bend_bones`). bone_spread: the standard deviation
    of each bone's length factor (left and right alike; on in every batch, as bodies differ).
    transfer: carry each pose from the body its clip was retargeted onto to the body drawn for it
    (`transfer_pose`), so a body whose rest spine bends otherwise wears the pose as retargeting
    onto it would have given it (needs the data's `rest`).
    lean: the chance that the trunk leans forward or back at the hips by an angle drawn from
    lean_degrees (+ forward), the legs keeping their world orientation (`lean_at_hips`): bending
    over, reaching to the floor and leaning back, which the capture has few of."""

    swap: float = 0.0
    jitter: float = 0.0
    bend: float = 0.0
    bend_joints: tuple = SINGLE
    bend_degrees: float = 40.0
    bone_spread: float = 0.04
    transfer: bool = False
    lean: float = 0.0
    lean_degrees: tuple = (-20.0, 80.0)

    @classmethod
    def from_args(cls, args):
        """From a trainer's --swap, --jitter, --bend, --bend-joints, --bend-degrees and --lean."""
        return cls(swap=args.swap, jitter=args.jitter, bend=args.bend, bend_joints=tuple(args.bend_joints),
                   bend_degrees=args.bend_degrees, transfer=args.transfer, lean=args.lean)

    def record(self):
        """The settings for a training record (JSON; joints by name)."""
        return {"part_swap": self.swap, "jitter": self.jitter, "bend": self.bend, "bone_spread": self.bone_spread,
                "bend_joints": [JOINT_NAMES[j] for j in self.bend_joints], "bend_degrees": self.bend_degrees,
                "transfer": self.transfer, "lean": self.lean, "lean_degrees": list(self.lean_degrees)}


def sample_batch(data, body, size, gen, augment=Augmentation()):
    """Random poses on random bodies, mirrored half the time, at random headings, varied as
    `augment` says: local rotations (B, 24, 3, 3), rest joints (B, 24, 3)."""
    swap, jitter, bend = augment.swap, augment.jitter, augment.bend
    if data.weight is None:
        idx = torch.randint(len(data.poses), (size,), generator=gen)
    else:
        idx = torch.multinomial(data.weight, size, replacement=True, generator=gen)
    aa = data.poses[idx].clone()
    if swap > 0:
        for part in PARTS:
            other = data.poses[torch.randint(len(data.poses), (size,), generator=gen)][:, list(part)]
            take = torch.rand(size, generator=gen) < swap
            aa[:, list(part)] = torch.where(take[:, None, None], other, aa[:, list(part)])
    flip = torch.rand(size, generator=gen) < 0.5
    mirrored = aa[:, list(MIRROR)] * torch.tensor([1.0, -1.0, -1.0])
    aa = torch.where(flip[:, None, None], mirrored, aa)
    rot = axis_angle_to_matrix(aa)
    heading = torch.rand(size, generator=gen) * 2 * np.pi
    yaw = axis_angle_to_matrix(torch.stack([torch.zeros(size), heading, torch.zeros(size)], -1))
    rot = torch.cat([(yaw @ rot[:, 0])[:, None], rot[:, 1:]], 1)
    betas = torch.randn(size, NUM_BETAS, generator=gen)
    if jitter > 0:  # drawn last, so the poses, headings and shapes match a run without it
        u = torch.rand(size, NUM_JOINTS, generator=gen)
        u[:, 0] = 1.0
        axis = torch.nn.functional.normalize(torch.randn(size, NUM_JOINTS, 3, generator=gen), dim=-1)
        turn = axis_angle_to_matrix(axis * torch.rand(size, NUM_JOINTS, 1, generator=gen) * np.radians(45.0))
    # the body, its shape's spread and its bones' lengths: drawn after the rest, so that the
    # poses match a run on one body
    which = torch.randint(len(body), (size,), generator=gen)
    spread = 0.5 + 1.25 * torch.rand(size, 1, generator=gen)
    bones = (1.0 + augment.bone_spread * torch.randn(size, NUM_JOINTS, generator=gen)).clamp(0.85, 1.15)
    bones = 0.5 * (bones + bones[:, list(MIRROR)])   # left and right alike
    rest = vary_bones(body.rest_joints(betas * spread, which), bones)
    if augment.transfer and data.rest is not None:   # before jitter: a rig's missing joint is missing on this body
        source = data.rest[torch.as_tensor(data.clip)[idx]]
        source = torch.where(flip[:, None, None], source[:, list(MIRROR)] * torch.tensor([-1.0, 1.0, 1.0]), source)
        rot = transfer_pose(rot, source, rest)
    if jitter > 0:
        rot = torch.where((u < jitter)[..., None, None], torch.eye(3),
                          torch.where((u < 2 * jitter)[..., None, None], turn @ rot, rot))
    if bend > 0:
        rot = bend_bones(rot, rest, bend, gen, augment.bend_joints, augment.bend_degrees)
    if augment.lean > 0:
        lo, hi = augment.lean_degrees
        angle = torch.deg2rad(lo + (hi - lo) * torch.rand(size, generator=gen))
        angle = torch.where(torch.rand(size, generator=gen) < augment.lean, angle, torch.zeros(()))
        rot = lean_at_hips(rot, angle)
    return rot, rest


HIPS = (JOINT_INDEX["left_hip"], JOINT_INDEX["right_hip"])


def lean_at_hips(rot, angle):
    """Local rotations (B, 24, 3, 3) with the trunk leaned by `angle` (B,) radians about the
    pelvis's left-right axis (+ forward) and the thighs turned back by as much, so the legs keep
    their world orientation and only the trunk, arms and head lean."""
    turn = axis_angle_to_matrix(torch.stack([angle, torch.zeros_like(angle), torch.zeros_like(angle)], -1))
    out = rot.clone()
    out[:, 0] = rot[:, 0] @ turn
    out[:, list(HIPS)] = turn.transpose(-1, -2)[:, None] @ rot[:, list(HIPS)]
    return out



class PlacedBatch(NamedTuple):
    """Poses placed in the world (`placed_batch`): local rotations rot (B, 24, 3, 3), rest
    joints (B, 24, 3), root translations trans (B, 3) metres, and the posed world rotations
    world (B, 24, 3, 3) and joint positions pos (B, 24, 3)."""

    rot: torch.Tensor
    rest: torch.Tensor
    trans: torch.Tensor
    world: torch.Tensor
    pos: torch.Tensor


def placed_batch(data, body, size, gen, augment=Augmentation()):
    """sample_batch's poses placed in the world, a PlacedBatch: local rotations (B, 24, 3, 3),
    rest joints (B, 24, 3), root translations (B, 3) (metres: x and z in -1..1, y in
    -0.2..0.2), and the posed world rotations (B, 24, 3, 3) and joint positions (B, 24, 3)."""
    rot, rest = sample_batch(data, body, size, gen, augment)
    trans = torch.stack([2 * torch.rand(size, generator=gen) - 1, 0.4 * torch.rand(size, generator=gen) - 0.2,
                         2 * torch.rand(size, generator=gen) - 1], -1)
    world, pos = fk(rot, rest, trans)
    return PlacedBatch(rot, rest, trans, world, pos)

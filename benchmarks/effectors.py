"""Effector sets the IK benchmarks solve from, drawn from true poses, and their joints and worst errors."""
import numpy as np

from models.ik.effectors import KINDS, Effector, EffectorKind, joint_of

RANDOM_KIND_SHARES = ((0.6, EffectorKind.POSITION), (0.85, EffectorKind.ROTATION))   # cumulative; the rest LOOK_AT


def true_effector(kind, j, pos, world, rng):
    """An Effector of `kind` (EffectorKind) on joint index j that a true pose meets: pos (24, 3)
    joint positions, world (24, 3, 3) world rotations; a LOOK_AT takes a random unit local
    axis (from rng) and a target 0.3-2 m along it."""
    if kind is EffectorKind.POSITION:
        return Effector(j, EffectorKind.POSITION, tuple(pos[j]))
    if kind is EffectorKind.ROTATION:
        return Effector(j, EffectorKind.ROTATION, world[j])
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    return Effector(j, EffectorKind.LOOK_AT, tuple(pos[j] + world[j] @ axis * rng.uniform(0.3, 2)), tuple(axis))


def random_kind(u):
    """The EffectorKind a uniform draw u in [0, 1) picks: positions 60%, rotations 25%, look-ats 15%."""
    return next((kind for share, kind in RANDOM_KIND_SHARES if u < share), EffectorKind.LOOK_AT)


def random_effectors(pos, world, rng):
    """Per frame of pos (N, 24, 3) and world (N, 24, 3, 3), 3-12 effectors on distinct joints of
    random kinds (random_kind); the first is always a position, since without one the body's
    place is unknown."""
    sets = []
    for n in range(len(pos)):
        k = rng.integers(3, 13)
        effs = []
        for i, j in enumerate(rng.permutation(24)[:k]):
            u = 0.0 if i == 0 else rng.random()
            effs.append(true_effector(random_kind(u), int(j), pos[n], world[n], rng))
        sets.append(effs)
    return sets


def protocol_effectors(pos, world, rng):
    """SMPL-IK's random protocol per frame of pos (N, 24, 3) and world (N, 24, 3, 3): 3-16
    effectors on distinct joints, the first three positions (so the body's place is known), the
    others of the three kinds equally likely."""
    sets = []
    for n in range(len(pos)):
        effs = []
        for i, j in enumerate(rng.permutation(24)[:rng.integers(3, 17)]):
            kind = EffectorKind.POSITION if i < 3 else KINDS[int(rng.integers(3))]
            effs.append(true_effector(kind, int(j), pos[n], world[n], rng))
        sets.append(effs)
    return sets


def position_joints(sets):
    """Per effector set, the joint indices of its POSITION effectors."""
    return [[joint_of(e, n) for n, e in enumerate(effs) if e.kind == EffectorKind.POSITION] for effs in sets]


def worst_errors(effectors, errors):
    """(largest position error in mm, largest rotation or look-at error in degrees) of
    per-effector errors (metres for positions, radians otherwise; 0 where there is none of a kind)."""
    # a mask from `is`, not np.array of the kinds: EffectorKind is a str enum, which numpy
    # turns into truncated strings that all compare equal
    position = np.array([e.kind is EffectorKind.POSITION for e in effectors])
    errors = np.asarray(errors, dtype=np.float64)
    mm = errors[position].max() * 1e3 if position.any() else 0.0
    deg = np.degrees(errors[~position].max()) if (~position).any() else 0.0
    return float(mm), float(deg)

"""The IK benchmark's balance and self-collision figures: the add-on's solves with and without those
terms, and the mocap's own poses."""
import statistics
import time

import numpy as np

from models.core.kinematics import FKResult
from models.core.skeleton import JOINT_INDEX
from models.ik.cost import (HAND_AND_FOREARM, SUPPORT_HEIGHT, BodyParts, PinnedJoints, balance_distance,
                            collision_depth, pinned_depth)
from models.ik.effectors import Effector, EffectorKind
from models.ik.options import ALTERNATIVES_SEED, SampleOptions, SolveOptions
from models.ik.refine import RefineOptions
from models.ik.residuals import effector_errors

from .effectors import protocol_effectors, worst_errors

DEEP_M = 0.01        # an arm capsule this far inside the trunk or a thigh counts as a collision
OVER_SUPPORT_M = 1e-3   # a centre of mass this near the support polygon counts as over it


def deep(solution, parts, pins=None):
    """Whether a hand or forearm capsule of `solution` (an IkSolution) is more than DEEP_M
    inside the trunk or a thigh of `parts` (cost.BodyParts); with pins ({joint: position},
    {joint: rotation}), also whether one is where the pins do not put it (cost.pinned_depth)."""
    args = (solution.local_rot, solution.trans, solution.rest, parts)
    inside = collision_depth(*args, HAND_AND_FOREARM) > DEEP_M
    if pins is None:
        return bool(inside.any())
    unforced = pinned_depth(*args, PinnedJoints(*pins), joints=HAND_AND_FOREARM) <= DEEP_M
    return bool(inside.any()), bool((inside & unforced).any())


def fraction(flags):
    """The share of true values in `flags`, or None when there are none."""
    return float(np.mean(flags)) if len(flags) else None


def balance_collision(net, body, truth, world, frames, samples=8):
    """{"smplik_balance", "smplik_collision"} on a GroundTruth with world rotations (N, 24, 3, 3):
    the add-on's solves (refined with RefineOptions' defaults, balance and self-collision on)
    beside the same solves with both terms off (`*_without_terms`) and the mocap's own poses
    (`*_truth`), measured on the body's own cost.BodyParts. Balance, on `frames` frames whose
    true feet both stand (their lowest sole points within cost.SUPPORT_HEIGHT of each other):
    the protocol's effectors with both ankles pinned by position where they truly are; the
    fraction of natural and deterministic solves whose centre of mass is over the support
    polygon of both soles (within OVER_SUPPORT_M, cost.balance_distance). Self-collision, on
    `frames` protocol frames: the fraction of natural, deterministic and alternative poses
    (`samples` each) that are `deep`; `*_unforced` counts only those whose pins do not put the
    arm there."""
    gt_rot, rest, pos = truth.local_rot, truth.rest, truth.positions
    reference = BodyParts.from_body(body)
    rng = np.random.default_rng(11)
    soles = reference.soles.positions(FKResult(rotations=world, positions=pos))          # (N, K, 3)
    lowest = np.stack([soles[:, reference.sole_foot == f, 1].min(-1) for f in (0, 1)], -1)
    standing = np.flatnonzero(np.abs(lowest[:, 0] - lowest[:, 1]) < SUPPORT_HEIGHT)
    # as the add-on solves: with the body's own parts (scaled to each frame's rest joints)
    settings = {"": RefineOptions(body_parts=reference),
                "_without_terms": RefineOptions(balance=False, self_collision=False, body_parts=reference)}
    ankles = {JOINT_INDEX["left_ankle"], JOINT_INDEX["right_ankle"]}

    inside = {f"{m}{s}": [] for m in ("natural", "deterministic", "truth") for s in settings if m != "truth" or not s}
    ms = {f"natural{s}": [] for s in settings}
    worst_mm, worst_deg = 0.0, 0.0
    idx = np.sort(rng.choice(standing, min(frames, len(standing)), replace=False)) if len(standing) else []
    for i, effs in zip(idx, protocol_effectors(pos[idx], world[idx], np.random.default_rng(12))):
        parts = reference.scaled_to(rest[i])
        effs = [e for e in effs if not (int(e.joint) in ankles and e.kind is EffectorKind.POSITION)]
        effs += [Effector(j, EffectorKind.POSITION, tuple(pos[i, j])) for j in sorted(ankles)]
        truth_distance = balance_distance(gt_rot[i], pos[i, 0] - rest[i, 0], rest[i], parts, pinned=(True, True))
        inside["truth"].append(truth_distance <= OVER_SUPPORT_M)
        for suffix, refine in settings.items():
            for mode in ("natural", "deterministic"):
                t = time.perf_counter()
                solution = net.solve(effs, rest[i], SolveOptions(mode=mode, refine=refine))
                if mode == "natural":
                    ms[f"natural{suffix}"].append(time.perf_counter() - t)
                out = balance_distance(solution.local_rot, solution.trans, rest[i], parts, pinned=(True, True))
                inside[f"{mode}{suffix}"].append(out <= OVER_SUPPORT_M)
                if not suffix:
                    mm, deg = worst_errors(effs, effector_errors(effs, solution.local_rot, solution.trans, rest[i]))
                    worst_mm, worst_deg = max(worst_mm, mm), max(worst_deg, deg)
    balance = {f"inside_fraction_{k}": fraction(v) for k, v in inside.items()}
    balance.update({f"ms_{k}": statistics.median(v) * 1e3 if v else None for k, v in ms.items()})
    balance.update({"effector_mm_max": worst_mm, "effector_deg_max": worst_deg, "frames": len(idx)})

    flagged = {f"{m}{s}": [] for m in ("natural", "alternatives", "deterministic", "truth") for s in settings
               if m != "truth" or not s}
    flagged.update({f"{m}_unforced": [] for m in ("natural", "alternatives", "deterministic")})
    idx = np.sort(rng.choice(len(pos), min(frames, len(pos)), replace=False))
    for i, effs in zip(idx, protocol_effectors(pos[idx], world[idx], np.random.default_rng(13))):
        parts = reference.scaled_to(rest[i])
        pins = ({int(e.joint): e.target for e in effs if e.kind is EffectorKind.POSITION},
                {int(e.joint): e.target for e in effs if e.kind is EffectorKind.ROTATION})
        flagged["truth"].append(bool(collision_depth(gt_rot[i], pos[i, 0] - rest[i, 0], rest[i], parts,
                                                     HAND_AND_FOREARM).max() > DEEP_M))
        for suffix, refine in settings.items():
            solutions = {mode: [net.solve(effs, rest[i], SolveOptions(mode=mode, refine=refine))]
                         for mode in ("natural", "deterministic")}
            solutions["alternatives"] = net.sample(effs, rest[i], SampleOptions(count=samples, seed=ALTERNATIVES_SEED,
                                                                             refine=refine))
            for mode, poses in solutions.items():
                for pose in poses:
                    if suffix:
                        flagged[f"{mode}{suffix}"].append(deep(pose, parts))
                    else:   # with the terms: also whether the pins force it
                        any_deep, not_forced = deep(pose, parts, pins)
                        flagged[mode].append(any_deep)
                        flagged[f"{mode}_unforced"].append(not_forced)
    collision = {f"fraction_{k}": fraction(v) for k, v in flagged.items()}
    collision.update({"frames": len(idx), "samples": samples})
    return {"smplik_balance": balance, "smplik_collision": collision}

"""The poses a photo fit starts from: the lift (MediaPipe's 3D directions at the body's bone
lengths, turned into a pose by IK-GAT or SMPL-IK), the lifter's joints turned into a pose, and
a video's warm start.

From targets to a pose: `body_targets` keeps the detection's bone directions and gives the
bones the body's lengths, walking the tree from the pelvis. With all 24 joints confident,
IK-GAT turns them into rotations in one pass; otherwise SMPL-IK solves from the confident
joints only (position effectors, refined). The result stands at the origin: the pelvis at
x = z = 0 and the lowest ankle or foot joint at the height it has in the body's rest pose.
"""
from dataclasses import dataclass

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.skeleton import JOINT_NAMES, NUM_JOINTS, PARENTS
from ..ik.effectors import Effector, EffectorKind
from ..ik.ikgat import load_ikgat
from ..ik.refine import RefineOptions
from ..ik.options import SolveOptions
from ..ik.smplik import load_smplik
from .lifter import lift_detection
from .scene import to_the_origin
from .targets import body_targets, smpl_targets

MIN_JOINTS = 4   # fewer joints (or fitted keypoints) seen than this: no pose is solved


@dataclass(frozen=True, eq=False)
class PhotoPose:
    """A pose solved from a detection for a body with rest joints (24, 3).

    local_rot: (24, 3, 3); trans: (3,) metres (SMPL's root translation); method: "ikgat"
    (all joints seen) or "smplik" (some joints guessed), "lifter" (the lifter's joints, the
    fit's second start) or "warm" (a video's previous frame); confident: (24,) bool, the joints
    that were seen; targets: (24, 3) where the seen joints were asked to go (NaN rows for the
    others), in the same frame as the pose.
    """

    local_rot: np.ndarray
    trans: np.ndarray
    method: str
    confident: np.ndarray
    targets: np.ndarray


def _seen_targets(detection, min_visibility):
    """smpl_targets, or SmplIkError when fewer than MIN_JOINTS joints were seen."""
    positions, confident = smpl_targets(detection, min_visibility)
    count = int(confident.sum())
    if count < MIN_JOINTS:
        raise SmplIkError(f"cannot pose a body from this person: only {count} joints were visible "
                          f"(at least {MIN_JOINTS} are needed); try a photo showing more of the body "
                          f"or a lower minimum visibility")
    return positions, confident


def pose_from_detection(detection, rest, min_visibility=0.5):
    """Solve a body's pose from a detection. rest: (24, 3) the body's rest joints.

    IK-GAT when all 24 joints are confident, else SMPL-IK on the confident ones (at least
    MIN_JOINTS). The result stands with its pelvis at x = z = 0 and its lowest ankle/foot joint
    at the rest pose's lowest ankle/foot height. Returns PhotoPose; SmplIkError when too few
    joints are seen.
    """
    rest = np.asarray(rest, dtype=np.float64)
    positions, confident = _seen_targets(detection, min_visibility)
    targets = body_targets(positions, confident, rest)
    if confident.all():
        local_rot = load_ikgat()(targets, rest)
        trans = targets[0] - rest[0]
        method = "ikgat"
    else:
        effectors = [Effector(JOINT_NAMES[j], EffectorKind.POSITION, tuple(targets[j]))
                     for j in np.flatnonzero(confident)]
        # every detected joint is a little off and none is surer than the rest: each gives a
        # little (no give-way); no balance, the photo says where the weight is
        # (docs/training_log.md, "The lift's refinement")
        solution = load_smplik().solve(effectors, rest,
                                       SolveOptions(refine=RefineOptions(give_way=False, balance=False)))
        local_rot, trans = solution.local_rot, np.asarray(solution.trans, dtype=np.float64)
        method = "smplik"
    shift = to_the_origin(local_rot, trans, rest)
    return PhotoPose(local_rot=local_rot, trans=trans + shift, method=method,
                     confident=confident, targets=targets + shift)


def warm_start(detection, rest, min_visibility, pose):
    """The PhotoPose a warm start stands for: `pose` (local_rot (24, 3, 3), trans (3,)) as given,
    the joints the detection shows confident, and their body_targets (the detection's own 3D
    directions at the body's bone lengths) moved to the pose's pelvis. SmplIkError for a pose
    of other shapes, or when too few joints are seen, as pose_from_detection."""
    local_rot, trans = (np.asarray(a, dtype=np.float64) for a in pose)
    if local_rot.shape != (NUM_JOINTS, 3, 3) or trans.shape != (3,):
        raise SmplIkError(f"a warm start is local_rot (24, 3, 3) and trans (3,); got {local_rot.shape}, {trans.shape}")
    positions, confident = _seen_targets(detection, min_visibility)
    placed = body_targets(positions, np.ones(NUM_JOINTS, dtype=bool), rest)
    pelvis = forward_kinematics(local_rot, rest, PARENTS, trans).positions[0]
    targets = np.where(confident[:, None], placed - placed[0] + pelvis, np.nan)
    return PhotoPose(local_rot=local_rot, trans=trans, method="warm", confident=confident, targets=targets)


def lifter_targets(detection, rest, camera, lifter=None):
    """(24, 3) the joints a lifter (models.photo.lifter; None: the shipped one) lifts from the
    detection's 2D keypoints through `camera`, at the body's bone lengths (body_targets), in
    the camera's axes. SmplIkError when too few keypoints are seen to lift."""
    return body_targets(lift_detection(detection, camera, lifter), np.ones(NUM_JOINTS, dtype=bool), rest)


def lifter_pose(keyed, rest, lift):
    """The PhotoPose of the lifter's joints `keyed` (24, 3) (IK-GAT turns them into a pose),
    standing at the origin as pose_from_detection's do; the joints the photo shows confident
    and the targets are the lift's (`lift`, a PhotoPose)."""
    local_rot = load_ikgat()(keyed, rest)
    trans = keyed[0] - rest[0]
    return PhotoPose(local_rot=local_rot, trans=trans + to_the_origin(local_rot, trans, rest), method="lifter",
                     confident=lift.confident, targets=lift.targets)

"""Pose edits that keep the effectors pinned: mirror the pose, reset it to the rest pose."""
import numpy as np

from ...models.core.kinematics import mirror_pose as mirrored
from ...models.core.skeleton import JOINT_NAMES
from ..com import bridge
from .effectors import effectors_of, pin
from .solving import restart_alternatives


def mirror_pose(arm):
    """Swap the pose's left and right sides (about the body's own YZ plane)."""
    axes = bridge.bone_axes(arm)
    local, trans = bridge.read_pose(arm, axes)
    local, trans = mirrored(local, trans, bridge.rest_joints(arm)[0])
    bridge.write_pose(arm, local, trans, axes)
    pin(arm, effectors_of(arm, enabled_only=False))
    restart_alternatives(arm)


def reset_pose(arm):
    """The rest pose (T-pose) at the body's origin."""
    axes = bridge.bone_axes(arm)
    bridge.write_pose(arm, np.broadcast_to(np.eye(3), (len(JOINT_NAMES), 3, 3)), np.zeros(3), axes)
    pin(arm, effectors_of(arm, enabled_only=False))
    restart_alternatives(arm)

"""Scores of IK answers against true poses: joint and rotation errors, joints inside their limits."""
import numpy as np

from models.core.kinematics import forward_kinematics
from models.core.rotations import geodesic_angle
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES, PARENTS
from models.ik.limits import JOINT_LIMITS


def score(pred_rot, rest, pos, gt_rot, trans=None, effectors=None):
    """{"mpjpe_mm", "geodesic_deg", "geodesic_deg_by_joint"} of predicted local rotations
    pred_rot (N, 24, 3, 3) against gt_rot on rest joints (N, 24, 3) and true positions pos
    (N, 24, 3): forward kinematics' mean joint error (mm) and the mean local rotation error
    (degrees; per joint rounded to 0.1). Without `trans` (N, 3) the root is put at the true
    pelvis (position-to-rotation methods). effectors: per frame, the joint indices with
    position effectors, for "effector_mm"."""
    trans = pos[:, 0] - rest[:, 0] if trans is None else trans
    fk = forward_kinematics(pred_rot, rest, PARENTS, trans).positions
    angle = np.degrees(geodesic_angle(pred_rot, gt_rot))
    out = {"mpjpe_mm": float(np.linalg.norm(fk - pos, axis=-1).mean() * 1000), "geodesic_deg": float(angle.mean()),
           "geodesic_deg_by_joint": {name: round(float(a), 1) for name, a in zip(JOINT_NAMES, angle.mean(0))}}
    if effectors is not None:
        err = [np.linalg.norm(fk[n, e] - pos[n, e], axis=-1) for n, e in enumerate(effectors) if len(e)]
        out["effector_mm"] = float(np.concatenate(err).mean() * 1000)
    return out


def inside_limits(local_rot):
    """Fraction of poses (N, 24, 3, 3) whose knees and elbows are all inside the documented
    ranges (models.ik.limits.JOINT_LIMITS), read with scipy's Euler decomposition."""
    from scipy.spatial.transform import Rotation

    ok = np.ones(len(local_rot), bool)
    for lim in JOINT_LIMITS:
        angles = Rotation.from_matrix(local_rot[:, JOINT_INDEX[lim.joint]]).as_euler(lim.order, degrees=True)
        ok &= np.all((angles >= np.array(lim.low) - 1e-6) & (angles <= np.array(lim.high) + 1e-6), axis=1)
    return float(ok.mean())

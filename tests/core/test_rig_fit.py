"""Fitting an SMPL proxy to a custom rig (bpy-free): exact landing, T-pose rest, bad rigs."""
import numpy as np
import pytest

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.motion.rig_fit import fit_rig
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES, PARENTS

# an SMPL-named rig that lacks the hands and the upper spine (like many game skeletons)
DROP = ("left_hand", "right_hand", "spine3")


def a_posed_rig(open_body, rng, drop=DROP, units=100.0):
    """A rig built from a random body in an A-pose, in centimetres, Z up (Blender's axes)."""
    betas = rng.normal(size=10)
    rest = open_body.rest_joints(betas)
    aa = np.zeros((24, 3))
    aa[JOINT_INDEX["left_shoulder"]] = (0, 0, -0.7)
    aa[JOINT_INDEX["right_shoulder"]] = (0, 0, 0.7)
    posed = forward_kinematics(axis_angle_to_matrix(aa), rest, PARENTS).positions
    keep = [j for j in range(24) if JOINT_NAMES[j] not in drop]
    parents = []
    for j in keep:
        p = PARENTS[j]
        while p >= 0 and p not in keep:
            p = PARENTS[p]
        parents.append(keep.index(p) if p >= 0 else -1)
    heads = posed[keep] @ np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]]).T * units  # Y up -> Z up
    return [JOINT_NAMES[j] for j in keep], parents, heads, posed


def test_proxy_lands_on_the_rig_and_rests_in_a_t_pose(open_body, rng):
    names, parents, heads, posed = a_posed_rig(open_body, rng)
    fit = fit_rig(names, parents, heads, open_body)
    assert fit.unit_name == "cm" and fit.unit == pytest.approx(0.01)
    landed = forward_kinematics(fit.rig_pose, fit.proxy_rest, PARENTS).positions
    assert np.abs(landed - fit.rig_joints).max() < 1e-9
    for j, name in enumerate(JOINT_NAMES):   # every joint the rig has is where the rig has it
        if name not in DROP:
            assert np.linalg.norm(fit.rig_joints[j] - (posed[j] - posed[0] + fit.rig_joints[0])) < 1e-6
    # the proxy's rest arms are horizontal (T-pose) though the rig's hang 40 degrees down
    for side in ("left", "right"):
        arm = fit.proxy_rest[JOINT_INDEX[f"{side}_wrist"]] - fit.proxy_rest[JOINT_INDEX[f"{side}_shoulder"]]
        rig_arm = fit.rig_joints[JOINT_INDEX[f"{side}_wrist"]] - fit.rig_joints[JOINT_INDEX[f"{side}_shoulder"]]
        assert abs(arm[1]) / np.linalg.norm(arm) < 0.05 < 0.5 < abs(rig_arm[1]) / np.linalg.norm(rig_arm)
    for j in range(1, 24):   # every segment keeps the rig's length
        seg = np.linalg.norm(fit.proxy_rest[j] - fit.proxy_rest[PARENTS[j]])
        assert seg == pytest.approx(np.linalg.norm(fit.rig_joints[j] - fit.rig_joints[PARENTS[j]]), rel=1e-9)
    assert fit.bone_for("left_hand") is None and fit.bone_for("left_wrist") == "left_wrist"


def test_a_bone_mapped_twice_and_missing_joints_are_refused(open_body, rng):
    names, parents, heads, _ = a_posed_rig(open_body, rng)
    with pytest.raises(SmplIkError, match="'left_elbow' is mapped to both left_elbow and left_wrist"):
        fit_rig(names, parents, heads, open_body, overrides={"left_wrist": "left_elbow"})
    names, parents, heads, _ = a_posed_rig(open_body, rng, drop=DROP + ("right_knee",))
    with pytest.raises(SmplIkError, match="no joints found for right_knee"):
        fit_rig(names, parents, heads, open_body)
    with pytest.raises(SmplIkError, match="must be finite"):
        fit_rig(names, parents, heads * np.nan, open_body)


def test_a_rig_resting_in_neither_t_nor_a_pose_fits_the_same_body(open_body, rng):
    """Arms reaching forward, elbows and knees bent at rest: the same proxy body as the T-pose
    rig (lengths do not depend on the rest pose), landing on the rig's own joints."""
    names, parents, _, _ = a_posed_rig(open_body, rng)
    betas = rng.normal(size=10)
    rest = open_body.rest_joints(betas)
    bent = np.zeros((24, 3))
    for joint, aa in (("left_shoulder", (0, 1.3, 0)), ("right_shoulder", (0, -1.3, 0)),
                      ("left_elbow", (0, 0.9, 0)), ("right_elbow", (0, -0.9, 0)),
                      ("left_knee", (0.7, 0, 0)), ("right_knee", (0.7, 0, 0)),
                      ("left_hip", (-0.5, 0, 0)), ("right_hip", (-0.5, 0, 0))):
        bent[JOINT_INDEX[joint]] = aa
    keep = [JOINT_NAMES.index(n) for n in names]
    to_z_up = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    fits = []
    for pose in (np.zeros((24, 3)), bent):
        posed = forward_kinematics(axis_angle_to_matrix(pose), rest, PARENTS).positions
        fits.append(fit_rig(names, parents, posed[keep] @ to_z_up.T, open_body))
    t_fit, bent_fit = fits
    assert np.abs(bent_fit.betas - t_fit.betas).max() < 1e-6
    assert np.allclose(bent_fit.to_smpl, t_fit.to_smpl)
    landed = forward_kinematics(bent_fit.rig_pose, bent_fit.proxy_rest, PARENTS).positions
    assert np.abs(landed - bent_fit.rig_joints).max() < 1e-9
    assert np.abs(bent_fit.proxy_rest - t_fit.proxy_rest).max() < 1e-6   # the same T-pose proxy
    # the rig fits at its size: no rescaling of the body needed
    assert bent_fit.mesh_scale == pytest.approx(1.0, abs=0.03)


def test_helper_rest_puts_the_helper_on_the_rig_bone_in_the_rig_pose(rng):
    """With its joint moved from rest to the rig's pose, a helper parented to the joint must lie
    on the rig's bone (rotation and head); a bone matrix carrying a rig's scale still gives a
    rotation."""
    from models.core.rotations import axis_angle_to_matrix
    from models.motion.rig_fit import helper_rest

    def matrix(rot, at):
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = rot, at
        return m

    joint_rest = matrix(axis_angle_to_matrix(rng.normal(size=3)), rng.normal(size=3))
    joint_posed = matrix(axis_angle_to_matrix(rng.normal(size=3)), rng.normal(size=3))
    bone_rot = axis_angle_to_matrix(rng.normal(size=3))
    bone = matrix(bone_rot * 100.0, rng.normal(size=3))     # a centimetre rig's matrix_local
    helper = helper_rest(joint_rest, joint_posed, bone)
    assert np.allclose(helper[:3, :3].T @ helper[:3, :3], np.eye(3), atol=1e-12)
    posed_helper = joint_posed @ np.linalg.inv(joint_rest) @ helper   # the helper follows its joint
    assert np.allclose(posed_helper[:3, :3], bone_rot, atol=1e-12)
    assert np.allclose(posed_helper[:3, 3], bone[:3, 3], atol=1e-12)

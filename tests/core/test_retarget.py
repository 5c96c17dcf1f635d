"""Shape inversion and retargeting: make SMPL motion, disguise it as another rig, recover it."""
from pathlib import Path

import numpy as np
import pytest

from models.motion.bvh import Skeleton, read_bvh, write_bvh
from models.core.kinematics import forward_kinematics
from models.motion.retarget import invert_shape, retarget, smpl_bvh_skeleton, write_smpl_bvh
from models.core.rotations import axis_angle_to_matrix, geodesic_angle
from models.core.skeleton import JOINT_NAMES, PARENTS

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "mocap"
MIXAMO = {"pelvis": "Hips", "spine1": "Spine", "spine2": "Spine1", "spine3": "Spine2", "neck": "Neck",
          "head": "Head", "left_collar": "LeftShoulder", "left_shoulder": "LeftArm",
          "left_elbow": "LeftForeArm", "left_wrist": "LeftHand", "left_hand": "LeftHandMiddle1",
          "left_hip": "LeftUpLeg", "left_knee": "LeftLeg", "left_ankle": "LeftFoot", "left_foot": "LeftToeBase"}
MIXAMO.update({k.replace("left", "right"): v.replace("Left", "Right") for k, v in MIXAMO.items() if "left" in k})
BETAS = np.array([1.0, -0.5, 0.8, 0, 0.3, 0, 0, 0, 0, 0])


def smpl_motion(rng, frames=40):
    aa = rng.normal(scale=0.25, size=(frames, 24, 3))
    aa[:, 0] = rng.normal(scale=0.6, size=(frames, 3))
    trans = np.cumsum(rng.normal(scale=0.02, size=(frames, 3)), axis=0)
    return axis_angle_to_matrix(aa), trans


def disguise(path, body, local_rot, trans, a_pose_deg=45.0, units=100.0):
    """Write SMPL motion as a Mixamo-named, A-pose-rest, Z-up BVH with the same joint motion."""
    rest = body.rest_joints(BETAS)
    sk, where = smpl_bvh_skeleton(rest)
    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    glob = np.broadcast_to(np.eye(3), (len(trans), len(sk.names), 3, 3)).copy()
    glob[:, where] = fk.rotations
    # End Sites take their parent's rotation
    for k, p in enumerate(sk.parents):
        if sk.end_site[k]:
            glob[:, k] = glob[:, p]
    offsets = sk.offsets.copy() / 100.0
    # A-pose rest: each arm's offsets turned down about the body's forward axis; the
    # animation compensates (G' = G S^T) so every joint keeps its world position
    for side, sign in (("left", -1.0), ("right", 1.0)):
        a = np.radians(a_pose_deg) * sign
        s = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
        arm = [sk.names.index(f"{side}_{n}") for n in ("shoulder", "elbow", "wrist", "hand")]
        for j in arm:
            glob[:, j] = glob[:, j] @ s.T
        for k, p in enumerate(sk.parents):
            if p in arm:
                offsets[k] = s @ offsets[k]
    # Z-up world, centimetres, Mixamo names
    w = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    glob = w @ glob @ w.T
    offsets = units * offsets @ w.T
    local = glob.copy()
    for k, p in enumerate(sk.parents):
        if p >= 0:
            local[:, k] = np.swapaxes(glob[:, p], -1, -2) @ glob[:, k]
    names = tuple("mixamorig:" + MIXAMO[n] if n in MIXAMO else "mixamorig:" + n for n in sk.names)
    disguised = Skeleton(names=names, parents=sk.parents, offsets=offsets, channels=sk.channels,
                         end_site=sk.end_site)
    write_bvh(path, disguised, local, units * fk.positions[:, 0] @ w.T, 1 / 30)
    return fk.positions


def test_recovers_smpl_motion_from_a_disguised_rig(open_body, tmp_path, rng):
    rot, trans = smpl_motion(rng)
    truth = disguise(tmp_path / "mixamo.bvh", open_body, rot, trans)
    motion = read_bvh(tmp_path / "mixamo.bvh")
    for polish in (True, False):
        r = retarget(motion, open_body, polish=polish)
        assert r.rig.unit_name == "cm" and r.rig.mapping.convention == "motionbuilder"
        assert np.allclose(r.rig.to_smpl, [[1, 0, 0], [0, 0, 1], [0, -1, 0]])  # Z up found
        assert not r.rig.mapping.notes  # all 24 joints mapped
        got = forward_kinematics(axis_angle_to_matrix(r.poses), open_body.rest_joints(r.betas), PARENTS, r.trans)
        mpjpe = np.linalg.norm(got.positions - truth, axis=-1).mean()
        geo = np.degrees(geodesic_angle(axis_angle_to_matrix(r.poses), rot)).mean()
        # the fitted shape is not the true one, so joints sit a few mm apart; rotations agree
        assert mpjpe < 0.025, (polish, mpjpe)
        assert geo < 1.0, (polish, geo)
        assert r.mean_limb_error_deg < 2.0


def test_shape_inversion_recovers_lengths_and_units(open_body, tmp_path):
    rest = open_body.rest_joints(BETAS)
    sk, _ = smpl_bvh_skeleton(rest)  # centimetres
    fit, rig = invert_shape(sk, open_body)
    assert rig.unit_name == "cm"
    assert abs(fit.scale - 1.0) < 0.03
    assert np.all(np.abs(fit.length_ratio - 1.0) < 0.02), dict(zip(fit.names, fit.length_ratio))
    truth = open_body.rest_joints(BETAS)
    got = open_body.rest_joints(fit.betas)
    assert np.linalg.norm(got - got[0] - fit.scale * (truth - truth[0]), axis=1).max() < 0.02


def test_smpl_bvh_round_trip(open_body, tmp_path, rng):
    rot, trans = smpl_motion(rng, frames=10)
    rest = open_body.rest_joints(BETAS)
    write_smpl_bvh(tmp_path / "smpl.bvh", rot, trans, rest, 30.0)
    back = read_bvh(tmp_path / "smpl.bvh")
    idx = [back.skeleton.names.index(n) for n in JOINT_NAMES]
    got = back.forward().positions[:, idx] / 100.0
    want = forward_kinematics(rot, rest, PARENTS, trans).positions
    assert np.abs(got - want).max() < 1e-4


needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/mocap is not here (shared data)")


@needs_shared
@pytest.mark.parametrize("folder", ["cmu_train", "m21"])
def test_every_shared_clip_retargets_within_5_degrees(open_body, folder):
    for path in sorted((SHARED / folder).glob("*.bvh")):
        r = retarget(read_bvh(path), open_body)
        assert r.mean_limb_error_deg < 5.0, (path.name, r.limb_error_deg)
        mapped = sum(s is not None for s in r.rig.mapping.source)
        assert mapped + len(r.rig.mapping.notes) == 24
        assert np.all(np.isfinite(r.poses)) and np.all(np.isfinite(r.trans))


@needs_shared
@pytest.mark.parametrize("clip", ["m21/m21_data_t.bvh", "cmu_train/cmu_walking_1.bvh"])
def test_shape_inversion_on_shared_skeletons(open_body, clip):
    fit, _ = invert_shape(read_bvh(SHARED / clip).skeleton, open_body)
    limbs = [q for n, q in zip(fit.names, fit.length_ratio) if n.split()[-1] in ("thigh", "shin", "arm", "forearm")]
    assert len(limbs) == 8
    assert np.all(np.abs(np.array(limbs) - 1) < 0.05), fit.report()

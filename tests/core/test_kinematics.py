"""Forward kinematics and skinning against a plain 4x4-matrix implementation."""
import numpy as np

from models.core.kinematics import forward_kinematics, linear_blend_skinning, skinning_transforms
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_NAMES, NUM_JOINTS, PARENTS, joint_index


def reference_fk(local_rot, rest, parents, trans):
    """One pose, one joint at a time, with homogeneous matrices."""
    world = []
    for j, p in enumerate(parents):
        t = np.eye(4)
        t[:3, :3] = local_rot[j]
        t[:3, 3] = rest[j] - (rest[p] if p >= 0 else 0)
        world.append(t if p < 0 else world[p] @ t)
    world = np.array(world)
    return world[:, :3, :3], world[:, :3, 3] + trans


def test_fk_matches_reference(rng):
    rot = axis_angle_to_matrix(rng.normal(scale=0.6, size=(5, NUM_JOINTS, 3)))
    rest = rng.normal(size=(5, NUM_JOINTS, 3))
    trans = rng.normal(size=(5, 3))
    fk = forward_kinematics(rot, rest, PARENTS, trans)
    for b in range(5):
        r, p = reference_fk(rot[b], rest[b], PARENTS, trans[b])
        assert np.allclose(fk.rotations[b], r) and np.allclose(fk.positions[b], p)


def test_fk_matches_reference_on_another_skeleton(rng):
    """A tree other than SMPL's (branches at several depths, joints listed parents first)."""
    parents = (-1, 0, 1, 0, 3, 4, 1, 6, 2, 8, 8)
    rot = axis_angle_to_matrix(rng.normal(scale=0.8, size=(len(parents), 3)))
    rest, trans = rng.normal(size=(len(parents), 3)), rng.normal(size=3)
    fk = forward_kinematics(rot, rest, parents, trans)
    r, p = reference_fk(rot, rest, parents, trans)
    assert np.allclose(fk.rotations, r) and np.allclose(fk.positions, p)


def test_fk_identity_is_rest_and_broadcasts(rng):
    rest = rng.normal(size=(NUM_JOINTS, 3))
    fk = forward_kinematics(np.broadcast_to(np.eye(3), (3, NUM_JOINTS, 3, 3)), rest, PARENTS)
    assert fk.positions.shape == (3, NUM_JOINTS, 3)
    assert np.allclose(fk.positions, rest)


def test_skinning_rigid_and_blended(rng):
    rest = rng.normal(size=(NUM_JOINTS, 3))
    rot = axis_angle_to_matrix(rng.normal(size=(NUM_JOINTS, 3)))
    fk = forward_kinematics(rot, rest, PARENTS)
    r, t = skinning_transforms(fk, rest)
    # a joint's own rest position lands on its posed position
    assert np.allclose(np.einsum("jab,jb->ja", r, rest) + t, fk.positions)
    verts = rng.normal(size=(10, 3))
    w = np.zeros((10, NUM_JOINTS))
    w[:5, 4] = 1.0
    w[5:, 4] = w[5:, 7] = 0.5
    out = linear_blend_skinning(verts, w, r, t)
    assert np.allclose(out[:5], verts[:5] @ r[4].T + t[4])
    half = 0.5 * (verts[5:] @ r[4].T + t[4]) + 0.5 * (verts[5:] @ r[7].T + t[7])
    assert np.allclose(out[5:], half)


def test_joint_names():
    assert JOINT_NAMES[0] == "pelvis" and JOINT_NAMES[-1] == "right_hand"
    assert joint_index("left_wrist") == 20
    import pytest
    from models.core.errors import SmplIkError

    with pytest.raises(SmplIkError, match="unknown SMPL joint 'left_wirst'"):
        joint_index("left_wirst")


def test_mirror_pose_reflects_every_joint_onto_its_mirror_joint(open_body, rng):
    from models.core.kinematics import mirror_pose
    from models.core.skeleton import MIRROR

    rest = open_body.rest_joints(np.zeros(10))
    assert np.abs(rest[list(MIRROR)] * [-1, 1, 1] - rest).max() < 1e-3   # the open body is symmetric
    rest = 0.5 * (rest + rest[list(MIRROR)] * [-1, 1, 1])                 # exactly so, for the check
    local = axis_angle_to_matrix(rng.normal(scale=0.5, size=(3, NUM_JOINTS, 3)))
    trans = rng.normal(scale=0.3, size=(3, 3))
    m_local, m_trans = mirror_pose(local, trans, rest[0])
    before = forward_kinematics(local, rest, PARENTS, trans)
    after = forward_kinematics(m_local, rest, PARENTS, m_trans)
    flip = np.diag([-1.0, 1.0, 1.0])
    # each joint lands where its mirror joint was, reflected in x, and turns the mirrored way
    assert np.abs(after.positions - before.positions[:, list(MIRROR)] @ flip).max() < 1e-9
    assert np.abs(after.rotations - flip @ before.rotations[:, list(MIRROR)] @ flip).max() < 1e-9
    assert np.abs(after.positions - before.positions).max() > 0.05        # a real change, not the pose back
    again = mirror_pose(m_local, m_trans, rest[0])
    assert np.allclose(again[0], local, atol=1e-12) and np.allclose(again[1], trans, atol=1e-12)


def test_parents_first_orders_any_listing_and_names_a_loop():
    import pytest

    from models.core.skeleton import parents_first

    parents = [3, -1, 1, 2, 0]   # listed out of order: the root second, bone 0 under bone 3
    order = parents_first(parents)
    assert order == [1, 2, 3, 0, 4]
    assert sorted(order) == list(range(5))
    seen = set()
    for j in order:
        assert parents[j] < 0 or parents[j] in seen, (j, order)
        seen.add(j)
    assert parents_first(list(PARENTS)) == list(range(NUM_JOINTS))   # already in order: kept
    with pytest.raises(ValueError, match="joint 1"):
        parents_first([-1, 2, 1])

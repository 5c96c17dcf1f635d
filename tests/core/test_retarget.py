"""Shape inversion and retargeting: make SMPL motion, disguise it as another rig, recover it."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from models.body.measure import measure
from models.core.errors import SmplIkError
from models.motion.bvh import Skeleton, read_bvh, smpl_bvh_skeleton, write_bvh, write_smpl_bvh
from models.core.kinematics import forward_kinematics
from models.motion.mapping import build_mapping
from models.motion.retarget import retarget
from models.motion.shape_fit import AT_BOUND_SD, BETA_BOUND, BONES, LEAN_LIMIT_DEG, check_body, invert_shape
from models.motion.source_rig import (REST_POSE_LIMIT_DEG, TRUNK, rest_pose_departure, resample_trunk,
                                      smpl_positions, zero_pose_positions)
from models.motion.units import LENGTH_UNITS
from models.core.rotations import axis_angle_to_matrix, geodesic_angle
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES, PARENTS

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


@pytest.mark.parametrize("unit", ["m", "cm", "inch", "cmu"])
@pytest.mark.parametrize("beta0", [-2.5, 0.0, 2.5])   # about 1.47, 1.71 and 1.95 m tall
def test_shape_inversion_finds_the_unit_and_the_absolute_size(open_body, unit, beta0):
    betas = BETAS.copy()
    betas[0] = beta0
    truth = open_body.rest_joints(betas)
    sk, _ = smpl_bvh_skeleton(truth)  # centimetres
    sk = dataclasses.replace(sk, offsets=sk.offsets * 0.01 / LENGTH_UNITS[unit])
    fit, rig = invert_shape(sk, open_body)
    assert rig.unit_name == unit
    assert np.all(np.abs(fit.length_ratio - 1.0) < 0.02), dict(zip(fit.names, fit.length_ratio))
    got = open_body.rest_joints(fit.betas)   # no scale: the body itself has the source's size
    assert np.linalg.norm((got - got[0]) - (truth - truth[0]), axis=1).max() < 0.02
    assert measure(open_body, fit.betas).height == pytest.approx(measure(open_body, betas).height, abs=0.02)


def test_a_given_unit_overrides_the_inferred_one(open_body):
    sk, _ = smpl_bvh_skeleton(open_body.rest_joints(BETAS))  # centimetres
    _, rig = invert_shape(sk, open_body, length_unit="inch")
    assert rig.unit == pytest.approx(0.0254) and rig.unit_given
    _, rig = invert_shape(sk, open_body, length_unit="0.005")
    assert rig.unit == pytest.approx(0.005)
    with pytest.raises(SmplIkError, match="unit 'furlong'.*cmu"):
        invert_shape(sk, open_body, length_unit="furlong")


def with_rest_orientations(skeleton, local_rot, rng):
    """The same motion on a rig whose every bone carries a random rest orientation B_j (an
    FBX-style export): offsets B_parent^T o, rotations B_parent^T R B_j, so every joint keeps
    its world position while the zero-rotation pose becomes a heap of bones."""
    b = axis_angle_to_matrix(rng.normal(scale=1.5, size=(len(skeleton.names), 3)))
    b[list(skeleton.end_site)] = np.eye(3)
    offsets, local = skeleton.offsets.copy(), local_rot.copy()
    for j, p in enumerate(skeleton.parents):
        parent = b[p] if p >= 0 else np.eye(3)
        if p >= 0:
            offsets[j] = parent.T @ offsets[j]
        local[:, j] = parent.T @ local_rot[:, j] @ b[j]
    return dataclasses.replace(skeleton, offsets=offsets), local


def two_rigs(tmp_path, body, rng, opens_in_rest_pose, frames=30):
    """One SMPL motion written on an identity-rest rig and on two rest-oriented rigs."""
    rest = body.rest_joints(BETAS)
    sk, where = smpl_bvh_skeleton(rest)
    rot, trans = smpl_motion(rng, frames)
    if opens_in_rest_pose:   # like CMU's clips: frame 0 is the rig's rest pose
        rot[0], trans[0] = np.eye(3), 0.0
    local = np.broadcast_to(np.eye(3), (frames, len(sk.names), 3, 3)).copy()
    local[:, where] = rot
    root = 100 * (rest[0] + trans)
    paths = [tmp_path / f"{name}.bvh" for name in ("identity", "oriented_a", "oriented_b")]
    write_bvh(paths[0], sk, local, root, 1 / 30)
    for path in paths[1:]:
        write_bvh(path, *with_rest_orientations(sk, local, rng), root, 1 / 30)
    return [retarget(read_bvh(p), body) for p in paths]


def joints_of(r, body):
    return forward_kinematics(axis_angle_to_matrix(r.poses), body.rest_joints(r.betas), PARENTS, r.trans).positions


@pytest.mark.parametrize("opens_in_rest_pose", [True, False])
def test_bones_with_rest_orientations_retarget_as_the_same_rig_without(open_body, tmp_path, rng,
                                                                        opens_in_rest_pose):
    plain, oriented, other = two_rigs(tmp_path, open_body, rng, opens_in_rest_pose)
    assert plain.rig.reference == -1   # a T-pose zero pose is trusted ...
    assert oriented.rig.reference >= 0 and other.rig.reference >= 0   # ... a heap of bones is not
    assert "rest orientations" in " ".join(oriented.notes)
    for r in (oriented, other):
        assert r.rig.unit_name == "cm" and np.allclose(r.rig.to_smpl, np.eye(3))
        # the same body and the same joints in every frame (positions never see the orientations)
        body_joints = open_body.rest_joints(r.betas) - open_body.rest_joints(plain.betas)
        assert np.abs(body_joints).max() < 1e-3
        assert np.linalg.norm(joints_of(r, open_body) - joints_of(plain, open_body), axis=-1).max() < 1e-3
    # two rigs with different rest orientations: the same reference, hence the same rotations
    assert oriented.rig.reference == other.rig.reference
    assert np.degrees(geodesic_angle(axis_angle_to_matrix(oriented.poses),
                                     axis_angle_to_matrix(other.poses))).max() < 0.5
    if opens_in_rest_pose:   # a clip that opens in its rest pose: the very rotations of the plain rig
        assert oriented.rig.reference == 0
        assert np.degrees(geodesic_angle(axis_angle_to_matrix(oriented.poses),
                                         axis_angle_to_matrix(plain.poses))).max() < 0.5


def test_a_rest_oriented_rig_takes_the_twist_of_its_limbs_from_their_hinges(open_body, tmp_path, rng):
    """Knees and elbows that bend as hinges (as CMU's do): without a rest pose in the clip, the
    rest-oriented rig's hips, knees, shoulders and elbows still turn as the plain rig's."""
    rest = open_body.rest_joints(BETAS)
    sk, where = smpl_bvh_skeleton(rest)
    frames = 40
    aa = rng.normal(scale=0.2, size=(frames, 24, 3))
    aa[:, 0] = rng.normal(scale=0.4, size=(frames, 3))
    bend = rng.uniform(0.2, 1.6, size=(frames, 4))
    for k, (joint, axis) in enumerate((("left_knee", (1, 0, 0)), ("right_knee", (1, 0, 0)),
                                       ("left_elbow", (0, -1, 0)), ("right_elbow", (0, 1, 0)))):
        aa[:, JOINT_NAMES.index(joint)] = bend[:, k, None] * np.array(axis, float)
    local = np.broadcast_to(np.eye(3), (frames, len(sk.names), 3, 3)).copy()
    local[:, where] = axis_angle_to_matrix(aa)
    root = 100 * (rest[0] + np.cumsum(rng.normal(scale=0.02, size=(frames, 3)), axis=0))
    write_bvh(tmp_path / "plain.bvh", sk, local, root, 1 / 30)
    write_bvh(tmp_path / "oriented.bvh", *with_rest_orientations(sk, local, rng), root, 1 / 30)
    plain, oriented = (retarget(read_bvh(tmp_path / f"{n}.bvh"), open_body) for n in ("plain", "oriented"))
    assert plain.rig.reference == -1 and oriented.rig.reference >= 0

    def world(r):
        return forward_kinematics(axis_angle_to_matrix(r.poses), open_body.rest_joints(r.betas), PARENTS).rotations

    limbs = [JOINT_NAMES.index(f"{s}_{n}") for s in ("left", "right") for n in ("hip", "knee", "shoulder", "elbow")]
    angle = np.degrees(geodesic_angle(world(oriented)[:, limbs], world(plain)[:, limbs]))
    assert angle.max() < 0.5, angle.max(axis=0)


def test_the_zero_pose_of_a_rest_oriented_rig_is_refused_as_a_rest_pose(open_body, rng):
    sk, where = smpl_bvh_skeleton(open_body.rest_joints(BETAS))
    t_pose = smpl_positions(zero_pose_positions(sk.parents, sk.offsets)[where], identity_mapping(), {})
    oriented, _ = with_rest_orientations(sk, np.eye(3)[None, None].repeat(len(sk.names), 1), rng)
    heap = smpl_positions(zero_pose_positions(oriented.parents, oriented.offsets)[where], identity_mapping(), {})
    assert rest_pose_departure(t_pose) < 30.0 < REST_POSE_LIMIT_DEG < rest_pose_departure(heap)


def identity_mapping():
    return build_mapping(JOINT_NAMES)


def test_the_report_flags_a_body_outside_the_shape_space(open_body, tmp_path, rng):
    """Arms twice as long as the legs allow: the betas hit their bound, the bones miss, and the report says so."""
    rest = open_body.rest_joints(BETAS)
    sk, where = smpl_bvh_skeleton(rest)
    arms = [sk.names.index(f"{s}_{n}") for s in ("left", "right") for n in ("elbow", "wrist")]
    offsets = sk.offsets.copy()
    offsets[arms] *= 2.0
    rot, trans = smpl_motion(rng, 10)
    local = np.broadcast_to(np.eye(3), (10, len(sk.names), 3, 3)).copy()
    local[:, where] = rot
    write_bvh(tmp_path / "long_arms.bvh", dataclasses.replace(sk, offsets=offsets), local,
              100 * (rest[0] + trans), 1 / 30)
    r = retarget(read_bvh(tmp_path / "long_arms.bvh"), open_body)
    assert r.shape.at_bound and r.check.max_abs_beta == pytest.approx(BETA_BOUND, abs=AT_BOUND_SD)
    assert any("at their bound" in w for w in r.check.warnings), r.check.warnings
    assert any("bone lengths miss" in w for w in r.check.warnings), r.check.warnings
    # a plausible body says nothing
    sk_ok, _ = smpl_bvh_skeleton(rest)
    write_bvh(tmp_path / "plain.bvh", sk_ok, local, 100 * (rest[0] + trans), 1 / 30)
    plain = retarget(read_bvh(tmp_path / "plain.bvh"), open_body)
    assert plain.check.warnings == () and plain.check.length_residual_pct < 2.0
    assert abs(plain.check.lean_body_deg - plain.check.lean_source_deg) < 3.0


def test_the_report_flags_a_height_no_adult_has_unless_the_unit_was_given(open_body, tmp_path):
    """A 2.6 m skeleton in metres: too tall for an adult; with --unit m the height is the user's."""
    rest = open_body.rest_joints(BETAS)
    sk, _ = smpl_bvh_skeleton(rest)
    giant = dataclasses.replace(sk, offsets=sk.offsets * 0.01 * 2.6 / measure(open_body, BETAS).height)
    fit, rig = invert_shape(giant, open_body)
    check = check_body(open_body, fit, rig, 0.0, 0.0)
    assert rig.unit_name == "m" and any("outside 1.4-2.1 m" in w for w in check.warnings), check.warnings
    fit, rig = invert_shape(giant, open_body, length_unit="m")
    check = check_body(open_body, fit, rig, 0.0, 0.0)
    assert not any("outside 1.4-2.1 m" in w for w in check.warnings) and any("bound" in w for w in check.warnings)


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
@pytest.mark.parametrize("folder", ["cmu_train", "m21", "cmu_varied"])
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


@needs_shared
def test_character_creator_clips_come_out_one_plausible_body_at_their_size(open_body):
    """cmu_varied: a Character Creator export whose bones carry rest orientations (its zero
    pose points every bone along +Y). Every clip is the same skeleton, so the same body; it
    is an adult's size, its limbs the source's lengths, and the knees bend as hinges."""
    heights = []
    for path in sorted((SHARED / "cmu_varied").glob("*.bvh"))[:6]:
        motion = read_bvh(path)
        r = retarget(motion, open_body)
        assert r.rig.reference >= 0 and r.rig.unit_name == "cm", path.name
        assert r.check.warnings == (), (path.name, r.check.warnings)
        limbs = [q for n, q in zip(r.shape.names, r.shape.length_ratio) if n in BONES]
        assert np.all(np.abs(np.array(limbs) - 1) < 0.02), (path.name, r.shape.report())
        assert abs(r.check.lean_body_deg - r.check.lean_source_deg) < LEAN_LIMIT_DEG
        knee = r.poses[:, JOINT_NAMES.index("left_knee")]
        bent = np.linalg.norm(knee, axis=1) > np.radians(20)
        off_axis = np.degrees(np.arccos(np.abs(knee[bent, 0]) / np.linalg.norm(knee[bent], axis=1)))
        assert np.median(off_axis) < 6.0, (path.name, np.median(off_axis))
        heights.append(r.check.height_m)
    assert 1.4 < min(heights) and max(heights) < 2.1 and max(heights) - min(heights) < 0.005, heights


def with_spread_toes(motion, spread_cm=3.0):
    """The same motion with each toe base's End Site replaced by five toes spread across the
    foot, as Character Creator's toe bases carry them: their offsets point mostly sideways,
    none along the foot."""
    sk = motion.skeleton
    names, parents, offsets = list(sk.names), list(sk.parents), [o for o in sk.offsets]
    channels, end_site = list(sk.channels), list(sk.end_site)
    up = np.array([0.0, 0.0, 1.0])   # the disguised rig is Z up
    for side in ("Left", "Right"):
        base = names.index(f"mixamorig:{side}ToeBase")
        tip = next(k for k, p in enumerate(sk.parents) if p == base)
        forward = offsets[tip] / np.linalg.norm(offsets[tip])
        across = np.cross(up, forward)
        for i, (s, f) in enumerate(zip((-1.3, -0.6, 0.0, 0.6, 1.3), (0.1, 0.6, 1.0, 0.8, 0.4))):
            names.append(f"mixamorig:{side}Digit{i}"), parents.append(base), channels.append(())
            offsets.append(spread_cm * (s * across + 0.5 * f * forward)), end_site.append(True)
    keep = [k for k in range(len(names)) if not (k < len(sk.names) and parents[k] >= 0
                                                 and names[parents[k]].endswith("ToeBase") and sk.end_site[k])]
    index = {k: n for n, k in enumerate(keep)}
    skeleton = Skeleton(names=tuple(names[k] for k in keep), parents=tuple(index.get(parents[k], -1) for k in keep),
                        offsets=np.array([offsets[k] for k in keep]), channels=tuple(channels[k] for k in keep),
                        end_site=tuple(end_site[k] for k in keep))
    return dataclasses.replace(motion, skeleton=skeleton)


def test_a_toe_base_with_toes_spread_across_the_foot_keeps_the_toes_rotation(open_body, tmp_path, rng):
    """A leaf whose children point every which way (five toes across the foot) has no direction
    of its own: SMPL's toes keep their relation to the foot instead of turning towards the
    first toe listed."""
    rot, trans = smpl_motion(rng)
    disguise(tmp_path / "mixamo.bvh", open_body, rot, trans)
    motion = with_spread_toes(read_bvh(tmp_path / "mixamo.bvh"))
    toes = [JOINT_NAMES.index(n) for n in ("left_foot", "right_foot")]
    assert sum(p == motion.skeleton.index("mixamorig:LeftToeBase") for p in motion.skeleton.parents) == 5
    r = retarget(motion, open_body)
    assert [motion.skeleton.names[r.rig.mapping.source[j]] for j in toes] == ["mixamorig:LeftToeBase",
                                                                               "mixamorig:RightToeBase"]
    geo = np.degrees(geodesic_angle(axis_angle_to_matrix(r.poses), rot))
    assert geo[:, toes].max() < 1.0, geo[:, toes].max(0)
    assert geo.mean() < 1.0


@needs_shared
def test_character_creator_toes_follow_the_foot(open_body):
    """cmu_varied's toe bases carry five toes across the foot and no motion of their own: the
    retargeted toes stay near their rest against the foot (before, they were turned about 85
    degrees sideways, towards the first toe listed)."""
    for path in sorted((SHARED / "cmu_varied").glob("*.bvh"))[:4]:
        r = retarget(read_bvh(path), open_body)
        for name in ("left_foot", "right_foot"):
            angle = np.degrees(np.linalg.norm(r.poses[:, JOINT_NAMES.index(name)], axis=1))
            assert np.median(angle) < 20.0, (path.name, name, np.median(angle))


def test_the_spines_joints_sit_on_the_source_trunk_where_smpl_has_them(open_body):
    """SMPL's spine1-3 are placed on the source's trunk (the polyline from the joint mapped to
    the pelvis to the one mapped to the neck, every source joint between) at SMPL's own rest
    arc-length fractions, so a short source bone bent across the trunk (Character Creator's
    waist) does not become a long SMPL bone pointing the same way."""
    rest = open_body.rest_joints(np.zeros(10))
    idx = [JOINT_INDEX[n] for n in TRUNK]
    lengths = np.linalg.norm(np.diff(rest[idx], axis=0), axis=1)
    fractions = np.cumsum(lengths)[:-1] / lengths.sum()
    # source trunk: up 8 cm, a 5 cm bone 47 degrees forward, up 15 cm, up 27 cm
    kink = 0.05 * np.array([0.0, np.cos(np.radians(47)), np.sin(np.radians(47))])
    source = np.cumsum([[0, 0, 0], [0, 0.08, 0], kink, [0, 0.15, 0], [0, 0.27, 0]], axis=0)
    frames = np.stack([source, source + [0.3, 0, 0]])          # (2, 5, 3): moved frames too
    points = np.full((2, 24, 3), np.nan)
    placed = resample_trunk(points, frames, [0, 1, 2, 3, 4], rest)
    seg = np.linalg.norm(np.diff(source, axis=0), axis=1)
    cum = np.concatenate([[0], np.cumsum(seg)])
    for j, f in zip(idx[1:-1], fractions):
        s_at = f * cum[-1]
        k = np.searchsorted(cum, s_at) - 1
        expected = source[k] + (s_at - cum[k]) / seg[k] * (source[k + 1] - source[k])
        np.testing.assert_allclose(placed[0, j], expected, atol=1e-9)
        np.testing.assert_allclose(placed[1, j], expected + [0.3, 0, 0], atol=1e-9)
    assert np.isnan(placed[:, JOINT_INDEX["head"]]).all()          # other joints untouched
    # the SMPL bone spine1 -> spine2 leans far less than the 47-degree source bone
    bone = placed[0, idx[2]] - placed[0, idx[1]]
    assert np.degrees(np.arctan2(bone[2], bone[1])) < 30.0


@needs_shared
def test_character_creator_spines_do_not_zigzag(open_body):
    """cmu_varied's spines: SMPL's spine2 stays a moderate bend (before, spine1 bent about 45
    degrees forward and spine2 as far back, copying the waist's short bone), and the trunk from
    pelvis to neck still points as the source's does."""
    for path in sorted((SHARED / "cmu_varied").glob("*.bvh"))[:4]:
        r = retarget(read_bvh(path), open_body)
        spine2 = np.degrees(np.linalg.norm(r.poses[:, JOINT_INDEX["spine2"]], axis=1))
        assert np.median(spine2) < 30.0, (path.name, np.median(spine2))
        assert r.limb_error_deg["pelvis->neck"] < 3.0, (path.name, r.limb_error_deg["pelvis->neck"])


@needs_shared
def test_a_head_with_no_direction_of_its_own_faces_as_in_the_rest_pose(open_body):
    """m21's head ends in a zero-length End Site: in its trusted zero pose it faces as SMPL's
    rest head does, whatever the neck's bone is turned by (before it took the neck's turn and
    looked 35 degrees up in the T-pose clip, 21 degrees up walking)."""
    for name in ("m21_data_t.bvh", "m21_data_content_walk.bvh"):
        r = retarget(read_bvh(SHARED / "m21" / name), open_body)
        local = axis_angle_to_matrix(r.poses)
        world = forward_kinematics(local, open_body.rest_joints(r.betas), PARENTS, r.trans).rotations
        forward = world[:, JOINT_INDEX["head"]] @ np.array([0.0, 0.0, 1.0])
        elevation = np.degrees(np.arcsin(np.clip(forward[:, 1], -1, 1)))
        assert abs(np.median(elevation)) < 15.0, (name, np.median(elevation))

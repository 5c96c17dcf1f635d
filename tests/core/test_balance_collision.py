"""Balance and self-collision: the cost J's terms (centre of mass over the feet that carry
weight, arm capsules out of the trunk and thighs) and the refinement's soft rows for them."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from models.core.kinematics import forward_kinematics
from models.core.rotations import geodesic_angle
from models.core.skeleton import JOINT_INDEX as J
from models.core.skeleton import PARENTS
from models.ik.cost import (BALANCE_UNIT, COLLISION_UNIT, HAND_AND_FOREARM, BodyParts, CostOptions, PinnedJoints,
                            balance_distance, carrying_feet, collision_depth, pinned_depth, pose_cost)
from models.ik.effectors import Effector, EffectorKind
from models.ik.geometry import closest_on_segments, convex_hull, outside_polygon, pair_depths
from models.ik.refine import RefineOptions, arm_in_body, refine_many, refine_pose
from models.ik.residuals import Targets, effector_errors
from models.ik.soft_terms import BALANCE_MARGIN, BALANCE_REACH, COLLISION_ALLOWANCE, SoftTerms
from models.ik.solver import apply_step

P, R = EffectorKind.POSITION, EffectorKind.ROTATION
OFF = RefineOptions(balance=False, self_collision=False)


@pytest.fixture(scope="module")
def body(open_body):
    """(rest joints, BodyParts) of the open body at zero betas."""
    return open_body.rest_joints(np.zeros(10)), BodyParts.from_body(open_body)


def a_pose():
    local = np.tile(np.eye(3), (24, 1, 1))
    local[J["left_shoulder"]], local[J["right_shoulder"]] = (
        Rotation.from_euler("z", [[-60], [60]], degrees=True).as_matrix())
    return local


def arm_across(elbow_deg):
    """The A-pose with the left arm brought forward across the chest, the elbow bent by
    elbow_deg (-80: the hand in front of the chest; -110 and beyond: the forearm through it)."""
    local = a_pose()
    local[J["left_shoulder"]] = Rotation.from_euler("zy", [-40, -90], degrees=True).as_matrix()
    local[J["left_elbow"]] = Rotation.from_euler("y", elbow_deg, degrees=True).as_matrix()
    return local


def positions(local, rest, trans=np.zeros(3)):
    return forward_kinematics(local, rest, PARENTS, trans).positions


def pins(local, rest, names):
    p = positions(local, rest)
    return [Effector(n, P, tuple(p[J[n]])) for n in names]


def planted(local, rest):
    """Both ankles pinned by position and both feet by rotation, where they are in the pose."""
    world = forward_kinematics(local, rest, PARENTS, np.zeros(3)).rotations
    return pins(local, rest, ("left_ankle", "right_ankle")) + [
        Effector(n, R, world[J[n]]) for n in ("left_ankle", "right_ankle", "left_foot", "right_foot")]


def hand_depth(local, trans, rest, parts):
    return float(collision_depth(local, trans, rest, parts, HAND_AND_FOREARM).max())


def pins_met(effectors, out, rest):
    errors = effector_errors(effectors, out.local_rot, out.trans, rest)
    kinds = np.array([e.kind is P for e in effectors])
    return errors[kinds].max() < 1e-3 and (not (~kinds).any() or np.degrees(errors[~kinds].max()) < 1.0)


def test_segment_distance_and_capsule_depth_by_hand(rng):
    # crossing axes 0.15 apart, radii 0.1 each: 0.05 deep; parallel ones 0.12 apart, radii 0.05: apart
    ends = np.array([[[0, 0, 0], [1, 0, 0]], [[0.5, 0.15, -1], [0.5, 0.15, 1]], [[0.5, 0.12, 0], [2, 0.12, 0]],
                     [[1.1, 0, 0], [1.1, 0, 0]]], dtype=float)
    radius = np.array([0.1, 0.1, 0.05, 0.05])
    depth, pa, pb = pair_depths(ends, radius, np.array([[0, 1], [0, 2], [2, 0], [0, 3]]))
    assert depth == pytest.approx([0.05, 0.03, 0.03, 0.05])
    assert pa[0] == pytest.approx([0.5, 0, 0]) and pb[0] == pytest.approx([0.5, 0.15, 0])
    assert pa[3] == pytest.approx([1, 0, 0]) and pb[3] == pytest.approx([1.1, 0, 0])   # a sphere past the end cap
    radius[2] = 0.01
    assert pair_depths(ends, radius, np.array([[0, 2]]))[0] == pytest.approx([0.0])   # 0.12 apart, 0.11 of radii
    # random segments: the closest points are never farther than a dense sampling's nearest pair
    p1, q1, p2, q2 = rng.normal(size=(4, 300, 3))
    s, t = closest_on_segments(p1, q1, p2, q2)
    exact = np.linalg.norm(p1 + s[:, None] * (q1 - p1) - p2 - t[:, None] * (q2 - p2), axis=1)
    u = np.linspace(0, 1, 401)
    a = p1[:, None] + u[None, :, None] * (q1 - p1)[:, None]
    b = p2[:, None] + u[None, :, None] * (q2 - p2)[:, None]
    sampled = np.linalg.norm(a[:, :, None] - b[:, None], axis=-1).min((1, 2))
    assert np.all(exact <= sampled + 1e-12) and np.all(sampled - exact < 0.02)


def test_support_polygon_distances_by_hand():
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5], [0.5, 0]], dtype=float)
    corners = convex_hull(square)
    assert sorted(corners) == [0, 1, 2, 3]                       # the inner and edge points are no corners
    assert outside_polygon(np.array([0.5, 0.2]), corners, square).distance == pytest.approx(-0.2)
    assert outside_polygon(np.array([0.5, -0.3]), corners, square).distance == pytest.approx(0.3)
    corner = outside_polygon(np.array([1.3, 1.4]), corners, square)
    assert corner.distance == pytest.approx(0.5) and corner.normal == pytest.approx([0.6, 0.8])
    # a pinned foot carries weight unless lifted as in a kick; an unpinned one only near the lowest
    assert carrying_feet((0.0, 0.04)) == (True, True)
    assert carrying_feet((0.0, 0.2)) == (True, False)
    assert carrying_feet((0.0, 0.2), pinned=(True, True)) == (True, True)
    assert carrying_feet((0.0, 0.4), pinned=(True, True)) == (True, False)
    assert carrying_feet((0.5, 0.6), floor=0.0) == (False, False)                   # off the floor: not standing
    assert carrying_feet((0.0, 0.2), on_lowest=False) == (False, False)             # nothing holds it up


def test_terms_are_zero_on_the_rest_pose_and_standing(body):
    rest, parts = body
    hanging = a_pose()
    for side, sign in (("left", 1), ("right", -1)):   # arms hanging at the sides, 75 degrees down
        hanging[J[f"{side}_shoulder"]] = Rotation.from_euler("z", -sign * 75, degrees=True).as_matrix()
    poses = np.stack([np.tile(np.eye(3), (24, 1, 1)), a_pose(), hanging])
    assert np.all(balance_distance(poses, np.zeros(3), rest, parts) == 0)
    assert np.all(balance_distance(poses, np.zeros(3), rest, parts, pinned=(True, True)) == 0)
    assert np.all(collision_depth(poses, np.zeros(3), rest, parts) == 0)
    # and the refinement leaves a met, balanced, collision-free pose exactly as it was
    effs = pins(hanging, rest, ("pelvis", "head", "left_wrist", "right_wrist", "left_ankle", "right_ankle"))
    terms = SoftTerms(RefineOptions(), Targets(effs), rest)
    assert len(terms.rows(forward_kinematics(hanging, rest, PARENTS, np.zeros(3)))[0]) == 0
    out = refine_pose(hanging, np.zeros(3), rest, effs)
    assert np.array_equal(out.local_rot, refine_pose(hanging, np.zeros(3), rest, effs, OFF).local_rot)


def test_the_measures_see_a_lean_and_a_forearm_in_the_chest(body):
    rest, parts = body
    leaning = a_pose()
    leaning[0] = Rotation.from_euler("x", 25, degrees=True).as_matrix()   # the whole body tipped forward
    assert balance_distance(leaning, np.zeros(3), rest, parts) > 0.1
    assert hand_depth(arm_across(-80), np.zeros(3), rest, parts) == 0
    assert hand_depth(arm_across(-120), np.zeros(3), rest, parts) > 0.04
    # J counts both, in their documented units
    mean, std = np.zeros(69), np.ones(69)
    seg = parts.segments
    costs = pose_cost(np.stack([a_pose(), arm_across(-120), leaning]), np.zeros(3), rest,
                      CostOptions(seg, mean, std, parts=parts))
    assert costs["balance_m"][0] == 0 == costs["collision_m"][0] and costs["balance_m"][2] > 0.1
    assert costs["collision_m"][1] > 0.04
    rest_terms = costs["prior"] + costs["effort_nm"] / 10.0 + 100.0 * costs["limit_excess"]
    assert costs["cost"] == pytest.approx(rest_terms + costs["balance_m"] / BALANCE_UNIT
                                          + costs["collision_m"] / COLLISION_UNIT)


def leaning_out(rest, forward):
    """A-pose start, feet planted, the neck pinned `forward` metres ahead (and a little down):
    the effectors and the pose refined without balance."""
    start = a_pose()
    effs = planted(start, rest) + [Effector("neck", P, tuple(positions(start, rest)[J["neck"]]
                                                             + [0.0, -0.05, forward]))]
    return start, effs, refine_pose(start, np.zeros(3), rest, effs, OFF)


def test_a_pose_leaning_past_its_feet_is_pulled_back_over_them(body):
    rest, parts = body
    start, effs, loose = leaning_out(rest, 0.35)
    outside = balance_distance(loose.local_rot, loose.trans, rest, parts, pinned=(True, True))
    assert outside > 0.03 and pins_met(effs, loose, rest)     # without balance it tips over its toes
    out = refine_pose(start, np.zeros(3), rest, effs)
    assert balance_distance(out.local_rot, out.trans, rest, parts, pinned=(True, True)) == 0
    assert pins_met(effs, out, rest) and out.misses == ()
    # it stands over its feet by pushing the hips back, not by leaving the neck
    assert positions(out.local_rot, rest, out.trans)[0, 2] < positions(loose.local_rot, rest, loose.trans)[0, 2] - 0.03
    # a body pinned by a hand alone does not stand: nothing pulls it over its feet
    hand = [Effector("left_wrist", P, tuple(positions(loose.local_rot, rest, loose.trans)[J["left_wrist"]]))]
    free = refine_pose(loose.local_rot, loose.trans, rest, hand, RefineOptions(self_collision=False))
    assert np.array_equal(free.local_rot, refine_pose(loose.local_rot, loose.trans, rest, hand, OFF).local_rot)


def test_a_start_far_off_balance_is_left_as_its_pins_hold_it(body):
    rest, parts = body
    leaning = a_pose()
    leaning[0] = Rotation.from_euler("x", 25, degrees=True).as_matrix()
    p = positions(leaning, rest)
    assert balance_distance(leaning, np.zeros(3), rest, parts, pinned=(True, True)) > BALANCE_REACH
    effs = [Effector(n, P, tuple(p[J[n]])) for n in ("pelvis", "neck", "left_ankle", "right_ankle")]
    out = refine_pose(leaning, np.zeros(3), rest, effs)
    assert np.array_equal(out.local_rot, refine_pose(leaning, np.zeros(3), rest, effs, OFF).local_rot)


def test_a_forearm_through_the_chest_comes_out_with_the_pins_met(body):
    rest, parts = body
    for elbow in (-110, -140):
        start = arm_across(elbow)
        effs = pins(start, rest, ("pelvis", "head", "left_ankle", "right_ankle", "right_wrist"))
        assert hand_depth(start, np.zeros(3), rest, parts) > 0.04
        out = refine_pose(start, np.zeros(3), rest, effs)
        assert hand_depth(out.local_rot, out.trans, rest, parts) < COLLISION_ALLOWANCE + 1e-3
        assert pins_met(effs, out, rest) and out.misses == ()
        kept = refine_pose(start, np.zeros(3), rest, effs, OFF)
        assert hand_depth(kept.local_rot, kept.trans, rest, parts) > 0.04
    # the batched refinement (alternatives) mends the same pose
    starts = np.stack([arm_across(-110), arm_across(-140)])
    for out in refine_many(starts, np.zeros((2, 3)), rest, effs):
        assert hand_depth(out.local_rot, out.trans, rest, parts) < COLLISION_ALLOWANCE + 1e-3
        assert pins_met(effs, out, rest)


def test_an_arm_still_inside_when_the_budget_runs_out_gets_more_steps(body, monkeypatch):
    """One iteration does not bring a forearm through the chest out; the extra steps an arm
    still inside gets (COLLISION_EXTRA times the budget) do, with the pins met. A pose with no
    arm inside takes none: the same answer with and without them."""
    import models.ik.refine as refine

    rest, parts = body
    start = arm_across(-140)
    effs = pins(start, rest, ("pelvis", "head", "left_ankle", "right_ankle", "right_wrist"))
    short = RefineOptions(iterations=1)
    out = refine_pose(start, np.zeros(3), rest, effs, short)
    assert hand_depth(out.local_rot, out.trans, rest, parts) < COLLISION_ALLOWANCE + 1e-3 and pins_met(effs, out, rest)
    monkeypatch.setattr(refine, "COLLISION_EXTRA", 0)
    stuck = refine_pose(start, np.zeros(3), rest, effs, short)
    assert hand_depth(stuck.local_rot, stuck.trans, rest, parts) > COLLISION_ALLOWANCE + 0.01
    clear = arm_across(-80)
    moved = pins(clear, rest, ("pelvis", "left_ankle", "right_ankle"))
    moved.append(Effector("head", P, tuple(positions(clear, rest)[J["head"]] + [0.05, 0.0, 0.0])))
    without = refine_pose(clear, np.zeros(3), rest, moved, short)
    monkeypatch.setattr(refine, "COLLISION_EXTRA", 2)
    with_extra = refine_pose(clear, np.zeros(3), rest, moved, short)
    assert hand_depth(without.local_rot, without.trans, rest, parts) < COLLISION_ALLOWANCE
    np.testing.assert_array_equal(with_extra.local_rot, without.local_rot)


def test_arm_in_body_is_an_arm_capsule_inside_pinned_there_or_not(body):
    """arm_in_body: a forearm through the chest is, with the arm free or held there by its pins
    (the trunk may still move off it); the arm in front of the chest is not; nor is any pose
    with self-collision off."""
    rest, _ = body
    through, clear = arm_across(-140), arm_across(-80)
    free = pins(through, rest, ("pelvis", "head", "left_ankle", "right_ankle", "right_wrist"))
    assert arm_in_body(through, np.zeros(3), rest, free)
    assert not arm_in_body(clear, np.zeros(3), rest, free)
    assert not arm_in_body(through, np.zeros(3), rest, free, OFF)
    held = pins(through, rest, ("pelvis", "left_elbow", "left_wrist", "left_hand"))
    assert arm_in_body(through, np.zeros(3), rest, held)


def test_a_hand_pushed_into_the_chest_stops_at_it_and_says_so(body):
    rest, parts = body
    start = arm_across(-80)
    effs = pins(start, rest, ("pelvis", "head", "left_ankle", "right_ankle", "right_wrist"))
    target = positions(start, rest)[J["left_wrist"]] + [0.0, 0.0, -0.2]   # 20 cm back: through the chest
    pushed = effs + [Effector("left_wrist", P, tuple(target), soft=True)]
    out = refine_pose(start, np.zeros(3), rest, pushed)
    assert collision_depth(out.local_rot, out.trans, rest, parts).max() < COLLISION_ALLOWANCE + 2e-3
    assert pins_met(effs, out, rest)
    assert [m.joint for m in out.misses] == ["left_wrist"] and out.misses[0].error > 0.02
    through = refine_pose(start, np.zeros(3), rest, pushed, OFF)
    assert hand_depth(through.local_rot, through.trans, rest, parts) > 0.02 and through.misses == ()


def test_a_wrist_pinned_inside_the_chest_is_the_pins_collision(body):
    rest, parts = body
    through, clear = arm_across(-140), arm_across(-80)
    wrist, elbow = J["left_wrist"], J["left_elbow"]
    inside = positions(through, rest)
    assert hand_depth(through, np.zeros(3), rest, parts) > 0.04
    held = {wrist: inside[wrist], J["pelvis"]: inside[J["pelvis"]]}
    depth = pinned_depth(through, np.zeros(3), rest, parts, PinnedJoints(held), joints=HAND_AND_FOREARM)
    assert depth.max() > 0.02
    # the pins elsewhere, or the wrist pinned in front of the chest, put no arm inside
    free = {J["pelvis"]: inside[J["pelvis"]], J["left_ankle"]: inside[J["left_ankle"]]}
    assert pinned_depth(through, np.zeros(3), rest, parts, PinnedJoints(free), joints=HAND_AND_FOREARM).max() == 0
    front = {wrist: positions(clear, rest)[wrist]}
    assert pinned_depth(through, np.zeros(3), rest, parts, PinnedJoints(front), joints=HAND_AND_FOREARM).max() <= 0.01
    # the trunk moves off the pinned wrist where its own pins let it: with the pelvis, head and
    # ankles pinned in place it turns away until the arm is out, the pins met
    effs = pins(through, rest, ("pelvis", "head", "left_ankle", "right_ankle", "left_wrist"))
    out = refine_pose(through, np.zeros(3), rest, effs)
    assert pins_met(effs, out, rest) and hand_depth(out.local_rot, out.trans, rest, parts) < COLLISION_ALLOWANCE + 1e-3
    assert np.degrees(geodesic_angle(out.local_rot[J["pelvis"]], through[J["pelvis"]])) > 2.0
    # with the elbow pinned too and the trunk's turns pinned it cannot: the forearm stays where
    # the pins hold it, the pins met
    world = forward_kinematics(through, rest, PARENTS, np.zeros(3)).rotations
    effs += pins(through, rest, ("left_elbow",))
    effs += [Effector(n, R, world[J[n]]) for n in ("pelvis", "spine1", "spine2", "spine3")]
    out = refine_pose(through, np.zeros(3), rest, effs)
    assert pins_met(effs, out, rest) and hand_depth(out.local_rot, out.trans, rest, parts) > 0.02
    # the elbow and wrist both pinned: the forearm lies along the bone between the pins
    both = {wrist: inside[wrist], elbow: inside[elbow]}
    assert pinned_depth(through, np.zeros(3), rest, parts, PinnedJoints(both),
                        joints=HAND_AND_FOREARM).max() >= depth.max() - 1e-9
    # the elbow pinned in place and turned as it is: the forearm is fixed, and as deep as the pose has it
    world = forward_kinematics(through, rest, PARENTS, np.zeros(3)).rotations
    forearm = [n for n, (a, _) in enumerate(parts.capsules.pairs) if parts.capsules.names[a] == "left_elbow"]
    actual = collision_depth(through, np.zeros(3), rest, parts)[forearm].max()
    assert actual > 0.02
    fixed = pinned_depth(through, np.zeros(3), rest, parts,
                         PinnedJoints({elbow: inside[elbow]}, {elbow: world[elbow]}))[forearm]
    assert fixed.max() == pytest.approx(actual, abs=1e-9)
    # the same rotation pinned with the wrist (the elbow's child) in place instead
    fixed = pinned_depth(through, np.zeros(3), rest, parts,
                         PinnedJoints({wrist: inside[wrist]}, {elbow: world[elbow]}))[forearm]
    assert fixed.max() == pytest.approx(actual, abs=1e-9)
    # turned otherwise (the forearm pointing out to the side), the pins no longer put it inside
    out_turn = forward_kinematics(a_pose(), rest, PARENTS, np.zeros(3)).rotations[elbow]
    loose = pinned_depth(through, np.zeros(3), rest, parts,
                         PinnedJoints({elbow: inside[elbow]}, {elbow: out_turn}))[forearm]
    assert loose.max() < actual - 0.01


def test_the_rows_jacobian_matches_finite_differences(body):
    rest, parts = body
    _, effs, loose = leaning_out(rest, 0.3)
    local = loose.local_rot.copy()
    arm = arm_across(-120)
    local[J["left_shoulder"]], local[J["left_elbow"]] = arm[J["left_shoulder"]], arm[J["left_elbow"]]
    trans = loose.trans
    fk = forward_kinematics(local, rest, PARENTS, trans)
    outside = balance_distance(local, trans, rest, parts, pinned=(True, True))
    assert -BALANCE_MARGIN < outside < BALANCE_REACH and hand_depth(local, trans, rest, parts) > 0.02
    terms = SoftTerms(RefineOptions(), Targets(effs), rest)
    r0, jac = terms.rows(fk)
    assert len(r0) >= 3 and np.all(r0 > 0)          # the balance row and at least two arm capsules
    eps, numeric = 1e-6, np.zeros_like(jac)
    for i in range(jac.shape[1]):
        step = np.zeros(jac.shape[1])
        step[i] = eps
        moved_local, moved_trans = apply_step(local, trans, fk, step)
        r1 = terms.rows(forward_kinematics(moved_local, rest, PARENTS, moved_trans))[0]
        numeric[:, i] = (r1 - r0) / eps
    assert np.abs(jac - numeric).max() < 1e-4 * max(1.0, np.abs(jac).max())


def test_parts_follow_the_body_size(open_body, body):
    rest, parts = body
    tall = parts.scaled_to(rest * 1.1)
    assert tall.capsules.radius == pytest.approx(parts.capsules.radius * 1.1)
    assert tall.segments.mass == pytest.approx(parts.segments.mass * 1.1 ** 3)
    assert balance_distance(a_pose(), np.zeros(3), rest * 1.1, tall) == 0
    # every SMPL-family body gets its arm, trunk and thigh capsules, radii a few centimetres
    radius = dict(zip(parts.capsules.names, parts.capsules.radius))
    assert 0.02 < radius["left_elbow"] < 0.05 < radius["left_hip"] < 0.12 and len(parts.capsules.pairs) >= 30

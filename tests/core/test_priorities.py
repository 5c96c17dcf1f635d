"""The prioritised refinement: hard pins hold, soft targets come as close as they can and
say how far they miss, knees and elbows stay in range, feet stay planted and above a floor."""
from pathlib import Path

import numpy as np
import pytest
from conftest import measured_effector_errors
from scipy.spatial.transform import Rotation

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.skeleton import JOINT_INDEX, PARENTS
from models.ik.effectors import Effector, EffectorKind, encode_effectors
from models.ik.effectors import six_point_effectors
from models.ik.limits import JOINT_LIMITS
from models.ik.options import SampleOptions, SolveOptions
from models.ik.refine import RefineOptions, refine_pose
from models.ik.smplik import SmplIk

P = EffectorKind.POSITION
DEFAULTS = ("pelvis", "head", "left_wrist", "right_wrist", "left_ankle", "right_ankle")


@pytest.fixture(scope="module")
def standing(open_body):
    """The open body standing at rest: (local, trans, rest, fk)."""
    rest = open_body.rest_joints(np.zeros(10))
    local, trans = np.tile(np.eye(3), (24, 1, 1)), np.zeros(3)
    arms_down = Rotation.from_euler("z", [[-60], [60]], degrees=True).as_matrix()   # A-pose: arms 60 degrees down
    local[JOINT_INDEX["left_shoulder"]], local[JOINT_INDEX["right_shoulder"]] = arms_down
    return local, trans, rest, forward_kinematics(local, rest, PARENTS, trans)


def pins(fk, moved=None, soft=()):
    out = []
    for name in DEFAULTS:
        target = fk.positions[JOINT_INDEX[name]] if moved is None or name not in moved else moved[name]
        out.append(Effector(name, P, tuple(target), soft=name in soft))
    return out


def limb_euler(local, limit):
    """The joint's local rotation as intrinsic Euler angles (degrees) by scipy, the outside reference."""
    return Rotation.from_matrix(local[JOINT_INDEX[limit.joint]]).as_euler(limit.order, degrees=True)


def inside(local, slack=1e-6):
    return all(np.all(limb_euler(local, lim) >= np.array(lim.low) - slack)
               and np.all(limb_euler(local, lim) <= np.array(lim.high) + slack) for lim in JOINT_LIMITS)


def arm_stretch(out, rest):
    """The left wrist's distance from the shoulder over the arm's length (1: straight)."""
    posed = forward_kinematics(out.local_rot, rest, PARENTS, out.trans).positions
    shoulder, elbow, wrist = (JOINT_INDEX[n] for n in ("left_shoulder", "left_elbow", "left_wrist"))
    reach = np.linalg.norm(rest[elbow] - rest[shoulder]) + np.linalg.norm(rest[wrist] - rest[elbow])
    return np.linalg.norm(posed[wrist] - posed[shoulder]) / reach


def reach_gap(out, rest, target):
    """How far the target is beyond the left arm's reach from where the shoulder ends (metres):
    the wrist's distance from it when the arm points straight at it."""
    posed = forward_kinematics(out.local_rot, rest, PARENTS, out.trans).positions
    shoulder, elbow, wrist = (JOINT_INDEX[n] for n in ("left_shoulder", "left_elbow", "left_wrist"))
    reach = np.linalg.norm(rest[elbow] - rest[shoulder]) + np.linalg.norm(rest[wrist] - rest[elbow])
    return np.linalg.norm(target - posed[shoulder]) - reach


@pytest.fixture(scope="module")
def far_wrist(standing):
    """A left-wrist target far beyond the arm, and the nearest the wrist gets to it with the head,
    pelvis, other wrist and ankles held: the best of refinements from four jittered starts, ten
    times the iterations each (metres)."""
    from models.core.rotations import axis_angle_to_matrix

    local, trans, rest, fk = standing
    far = fk.positions[JOINT_INDEX["left_wrist"]] + [0.6, 0.5, 0.9]
    effs = pins(fk, {"left_wrist": far}, soft=("left_wrist",))
    rng = np.random.default_rng(0)
    nearest = min(refine_pose(local @ axis_angle_to_matrix(rng.normal(scale=0.3, size=(24, 3))), trans, rest, effs,
                              RefineOptions(iterations=300)).errors[2] for _ in range(4))
    return far, nearest


def test_a_soft_target_out_of_reach_never_moves_a_hard_pin(standing, far_wrist):
    local, trans, rest, fk = standing
    far, nearest = far_wrist
    effs = pins(fk, {"left_wrist": far}, soft=("left_wrist",))
    out = refine_pose(local, trans, rest, effs)
    errors = measured_effector_errors(effs, out.local_rot, out.trans, rest)
    hard = [n for n, e in enumerate(effs) if not e.soft]
    assert errors[hard].max() < 1e-4, errors                              # every hard pin holds (0.1 mm)
    # the wrist went as far as the pins let it, to the millimetre (it once stopped 31 cm short,
    # each step toward it leaving the pins a little further off until none was taken), with the
    # arm straight at the target
    assert abs(errors[2] - nearest) < 1e-3, (errors[2], nearest)
    assert abs(errors[2] - reach_gap(out, rest, far)) < 1e-3
    # and the solve says which effector misses, by how much, and why (the pelvis pin is further
    # from the target than the trunk and arm reach)
    (miss,) = out.misses
    assert miss.joint == "left_wrist" and miss.soft and np.isclose(miss.error, errors[2], atol=1e-9)
    gap = np.linalg.norm(np.subtract(far, fk.positions[0]))
    assert miss.describe().startswith(f"left_wrist is {errors[2] * 100:.1f} cm from its target: its target is "
                                      f"{gap:.2f} m from pelvis's, further than the body reaches between them")
    assert inside(out.local_rot)


def test_a_pin_out_of_reach_gives_way_alone_and_the_others_hold(standing, far_wrist):
    """Every effector a pin and the left wrist's far beyond the arm: the pins cannot all be held,
    so the wrist gives way (nothing says which first: the one furthest from its target) and
    gets as near as the others let it; they stay where they are, and the miss says how far."""
    local, trans, rest, fk = standing
    far = fk.positions[JOINT_INDEX["left_wrist"]] + [0.6, 0.5, 0.9]
    all_hard = pins(fk, {"left_wrist": far})
    out = refine_pose(local, trans, rest, all_hard)
    errors = measured_effector_errors(all_hard, out.local_rot, out.trans, rest)
    assert np.delete(errors, 2).max() < 1e-4, errors                     # the other pins hold (0.1 mm)
    (miss,) = out.misses
    assert miss.joint == "left_wrist" and miss.gave_way and not miss.soft
    assert np.isclose(miss.error, errors[2], atol=1e-9)
    assert miss.describe().startswith(f"left_wrist is {errors[2] * 100:.1f} cm from its target (it gave way to the "
                                      "other pins): its target is ")
    assert arm_stretch(out, rest) > 0.97                                 # reaching out straight toward it
    assert abs(errors[2] - far_wrist[1]) < 1e-3, errors[2]                # as near as the other pins let it
    assert inside(out.local_rot)


def test_without_give_way_every_pin_gives_a_little(standing):
    """The contrast (and the solver before pins gave way): one level, every pin is pulled."""
    local, trans, rest, fk = standing
    far = fk.positions[JOINT_INDEX["left_wrist"]] + [0.6, 0.5, 0.9]
    all_hard = pins(fk, {"left_wrist": far})
    out = refine_pose(local, trans, rest, all_hard, RefineOptions(give_way=False))
    errors = measured_effector_errors(all_hard, out.local_rot, out.trans, rest)
    assert np.delete(errors, 2).max() > 2e-3            # the other pins drift by millimetres
    assert len(out.misses) > 1 and not any(m.soft or m.gave_way for m in out.misses)


@pytest.mark.parametrize("first", ["pelvis", "head"])
def test_the_pin_marked_to_give_way_first_is_the_one_that_gives(standing, first):
    """Only the pelvis and head pinned, the head 20 cm above where the spine reaches: either
    pin giving way ends the conflict. Marked, the pelvis gives way (the body rises to the head)
    or the head does (the pelvis stays); the other one holds."""
    local, trans, rest, fk = standing
    head = fk.positions[JOINT_INDEX["head"]] + [0.0, 0.2, 0.0]
    effs = [Effector("pelvis", P, tuple(fk.positions[0]), give_way_first=first == "pelvis"),
            Effector("head", P, tuple(head), give_way_first=first == "head")]
    out = refine_pose(local, trans, rest, effs)
    errors = measured_effector_errors(effs, out.local_rot, out.trans, rest)
    (miss,) = out.misses
    assert miss.joint == first and miss.gave_way
    other = 1 if first == "pelvis" else 0
    assert errors[other] < 1e-4
    rise = forward_kinematics(out.local_rot, rest, PARENTS, out.trans).positions[0, 1] - fk.positions[0, 1]
    assert rise > 0.15 if first == "pelvis" else abs(rise) < 1e-4


def test_a_marked_pin_that_does_not_end_the_conflict_is_held_again(standing):
    """The pelvis marked to give way first, but the conflict is the far wrist's: the pelvis
    giving way cannot bring the wrist within reach (the ankles hold the legs), so it is held
    again and the wrist gives way alone."""
    local, trans, rest, fk = standing
    far = fk.positions[JOINT_INDEX["left_wrist"]] + [0.6, 0.5, 0.9]
    effs = [Effector(e.joint, P, e.target, give_way_first=e.joint == "pelvis") for e in pins(fk, {"left_wrist": far})]
    out = refine_pose(local, trans, rest, effs)
    errors = measured_effector_errors(effs, out.local_rot, out.trans, rest)
    assert np.delete(errors, 2).max() < 1e-4, errors
    assert [(m.joint, m.gave_way) for m in out.misses] == [("left_wrist", True)]


def test_two_pins_out_of_reach_both_give_way_and_the_rest_hold(standing):
    local, trans, rest, fk = standing
    moved = {"left_wrist": fk.positions[JOINT_INDEX["left_wrist"]] + [0.6, 0.5, 0.9],
             "right_wrist": fk.positions[JOINT_INDEX["right_wrist"]] + [-0.6, 0.5, 0.9]}
    effs = pins(fk, moved)
    out = refine_pose(local, trans, rest, effs)
    errors = measured_effector_errors(effs, out.local_rot, out.trans, rest)
    assert errors[[0, 1, 4, 5]].max() < 1e-4, errors
    assert {m.joint for m in out.misses} == set(moved) and all(m.gave_way for m in out.misses)


def test_a_reachable_soft_target_is_met(standing):
    local, trans, rest, fk = standing
    near = fk.positions[JOINT_INDEX["left_wrist"]] + [0.05, 0.15, 0.2]
    effs = pins(fk, {"left_wrist": near}, soft=("left_wrist",))
    out = refine_pose(local, trans, rest, effs)
    assert measured_effector_errors(effs, out.local_rot, out.trans, rest).max() < 1e-4
    assert out.misses == ()


def test_knees_and_elbows_stay_in_range_when_stretched(standing):
    local, trans, rest, fk = standing
    # the hands pulled far out, and a start pose (a network's guess, say) with the left knee
    # bent forward and the right elbow past straight
    start = local.copy()
    start[JOINT_INDEX["left_knee"]] = Rotation.from_euler("x", -40, degrees=True).as_matrix()
    start[JOINT_INDEX["right_elbow"]] = Rotation.from_euler("y", -30, degrees=True).as_matrix()
    assert not inside(start)
    moved = {"left_wrist": fk.positions[JOINT_INDEX["left_wrist"]] + [0.8, 0.3, 0.2],
             "right_wrist": fk.positions[JOINT_INDEX["right_wrist"]] + [-1.0, 0.3, 0.0]}
    effs = pins(fk, moved, soft=tuple(moved))
    out = refine_pose(start, trans, rest, effs)
    assert inside(out.local_rot)
    assert measured_effector_errors(effs, out.local_rot, out.trans, rest)[[0, 1, 4, 5]].max() < 1e-4
    free = refine_pose(start, trans, rest, effs, RefineOptions(joint_limits=False))
    assert not inside(free.local_rot)            # without the ranges the wrong-way bends stay


def test_refined_random_sets_stay_in_range(open_body, rng):
    from models.core.rotations import axis_angle_to_matrix
    from models.ik.limits import clamp_to_limits

    net = SmplIk.load()
    for _ in range(10):
        rest = open_body.rest_joints(rng.normal(size=10))
        true = clamp_to_limits(axis_angle_to_matrix(rng.normal(scale=0.4, size=(24, 3))))
        fk = forward_kinematics(true, rest, PARENTS, rng.normal(scale=0.2, size=3))
        sol = net.solve(six_point_effectors(fk.positions), rest)
        assert inside(sol.local_rot)
        assert sol.misses == () and sol.errors.max() < 1e-4


def test_planted_feet_keep_their_orientation_while_a_hand_moves(open_body, standing):
    local, trans, rest, fk = standing
    net = SmplIk.load()
    contacts = open_body.foot_contacts(np.zeros(10))
    before = contacts.positions(fk)
    target = fk.positions[JOINT_INDEX["left_wrist"]] + [0.0, 0.3, 0.3]
    effs = pins(fk, {"left_wrist": target}, soft=("left_wrist",))
    planted = net.solve(effs, rest, SolveOptions(current_pose=(local, trans)))
    loose = net.solve(effs, rest, SolveOptions(refine=RefineOptions(plant_feet=False), current_pose=(local, trans)))
    lift = lambda sol: np.abs(contacts.positions(forward_kinematics(sol.local_rot, rest, PARENTS, sol.trans))  # noqa: E731
                              - before)[:, 1].max()
    assert lift(planted) < 1e-3                  # heels, balls and toes stay within a millimetre of their height
    assert lift(loose) > 5e-3                    # the network's own feet would lift the toes
    assert planted.misses == ()


def test_contact_points_stay_above_the_floor(open_body, standing):
    local, trans, rest, fk = standing
    contacts = open_body.foot_contacts(np.zeros(10))
    floor = contacts.positions(fk)[:, 1].min()
    # only the ankles pinned, 3 cm lower than standing: meeting them would sink the feet
    effs = [Effector(name, P, tuple(fk.positions[JOINT_INDEX[name]] + [0.0, -0.03, 0.0]), soft=True)
            for name in ("left_ankle", "right_ankle")]
    options = RefineOptions(floor=floor, contacts=contacts)
    out = refine_pose(local, trans, rest, effs, options)
    heights = contacts.positions(forward_kinematics(out.local_rot, rest, PARENTS, out.trans))[:, 1]
    assert heights.min() > floor - 1e-4
    assert {m.joint for m in out.misses} == {"left_ankle", "right_ankle"}   # they are reported instead
    sunk = refine_pose(local, trans, rest, effs)
    assert contacts.positions(forward_kinematics(sunk.local_rot, rest, PARENTS, sunk.trans))[:, 1].min() < floor - 0.01



@pytest.mark.parametrize("bend", [10.0, 20.0])
def test_soft_targets_drawn_down_toward_a_floor_are_reached(open_body, bend):
    """The pelvis and head drawn 10 cm down and 2 cm forward, soft (as a drag makes them), the
    knees bent a little and the feet free but for the floor: a step would take the heels and
    toes under it, so they must join the hard level within the step, or the solve refuses
    every step that gains and stalls centimetres short (41 and 57 mm before)."""
    from models.ik.cost import BodyParts

    rest = open_body.rest_joints(np.zeros(10))
    contacts = open_body.foot_contacts(np.zeros(10))
    upright = forward_kinematics(np.tile(np.eye(3), (24, 1, 1)), rest, PARENTS, np.zeros(3))
    floor = contacts.positions(upright)[:, 1].min()
    local = np.tile(np.eye(3), (24, 1, 1))
    for side in ("left", "right"):
        local[JOINT_INDEX[f"{side}_knee"]] = Rotation.from_euler("x", bend, degrees=True).as_matrix()
        local[JOINT_INDEX[f"{side}_hip"]] = Rotation.from_euler("x", -bend / 2, degrees=True).as_matrix()
    start = forward_kinematics(local, rest, PARENTS, np.zeros(3))
    trans = np.array([0.0, floor - contacts.positions(start)[:, 1].min(), 0.0])   # standing on the floor
    effs = [Effector(j, P, tuple(upright.positions[JOINT_INDEX[j]] + [0.0, -0.1, 0.02]), soft=True)
            for j in ("pelvis", "head")]
    options = RefineOptions(floor=floor, contacts=contacts, body_parts=BodyParts.from_body(open_body, np.zeros(10)))
    out = refine_pose(local, trans, rest, effs, options)
    heights = contacts.positions(forward_kinematics(out.local_rot, rest, PARENTS, out.trans))[:, 1]
    assert out.errors.max() < 1e-3 and out.misses == ()
    assert heights.min() > floor - 1e-4


def test_a_floor_the_pins_push_the_feet_through_is_reported_point_by_point(open_body, standing):
    """Both ankles pinned hard 3 cm into the floor, turned as they stand (so the feet cannot
    tip their points over it), no pin allowed to give way: pins and floor share the miss, and
    every contact point left more than a millimetre under the floor is named with its depth,
    as the pose has it."""
    local, trans, rest, fk = standing
    contacts = open_body.foot_contacts(np.zeros(10))
    floor = contacts.positions(fk)[:, 1].min()
    ankles = ("left_ankle", "right_ankle")
    effs = [Effector(name, P, tuple(fk.positions[JOINT_INDEX[name]] + [0.0, -0.03, 0.0])) for name in ankles]
    effs += [Effector(name, EffectorKind.ROTATION, fk.rotations[JOINT_INDEX[name]]) for name in ankles]
    out = refine_pose(local, trans, rest, effs, RefineOptions(floor=floor, contacts=contacts, give_way=False))
    heights = contacts.positions(forward_kinematics(out.local_rot, rest, PARENTS, out.trans))[:, 1]
    under = {name: floor - h for name, h in zip(contacts.names, heights) if h < floor - 1e-3}
    reported = {m.joint: m for m in out.misses if m.floor}
    assert under and set(reported) == set(under)
    for name, depth in under.items():
        assert reported[name].error == pytest.approx(depth) and not reported[name].soft
        assert reported[name].describe() == f"{name} is {depth * 1000:.1f} mm below the floor"
    assert set(contacts.names) == {f"{s} {p}" for s in ("left", "right")
                                   for p in ("heel", "ball", "toe", "sole inner", "sole outer",
                                             "toes inner", "toes outer")}

def test_rotation_and_look_at_misses_are_in_degrees(standing):
    local, trans, rest, fk = standing
    twisted = Rotation.from_euler("y", 170, degrees=True).as_matrix() @ fk.rotations[JOINT_INDEX["left_elbow"]]
    effs = pins(fk) + [Effector("left_elbow", EffectorKind.ROTATION, twisted, soft=True, tolerance=0.01)]
    out = refine_pose(local, trans, rest, effs)
    assert out.misses and out.misses[0].joint == "left_elbow"
    assert (out.misses[0].describe().startswith("left_elbow is turned ")
            and "degrees from its target" in out.misses[0].describe())


@pytest.mark.parametrize("tolerance", [np.nan, -0.01, np.inf])
def test_a_bad_tolerance_is_refused(tolerance):
    with pytest.raises(SmplIkError, match="effector on head: tolerance must be a number of 0 or more"):
        encode_effectors([Effector("head", P, (0, 1.6, 0), soft=True, tolerance=tolerance)])


def test_a_far_soft_target_is_followed_while_the_hard_pin_is_mended(open_body):
    """The network's start misses the hard pin (the far target drags its guess along): the steps
    that mend the pin must not end the soft level's progress."""
    rest = open_body.rest_joints(np.zeros(10))
    pelvis, target = np.array([0.0, 0.95, 0.0]), np.array([2.0, 1.3, 0.3])
    sol = SmplIk.load().solve([Effector("pelvis", P, tuple(pelvis)),
                               Effector("left_wrist", P, tuple(target), soft=True)], rest)
    assert np.linalg.norm(sol.positions[0] - pelvis) < 1e-4
    (miss,) = sol.misses
    # the arm and the trunk reach most of a metre from the pelvis toward the target
    assert miss.joint == "left_wrist" and miss.error < np.linalg.norm(target - pelvis) - 0.8


def test_a_joint_folded_past_its_range_goes_to_the_nearer_bound_around_the_circle():
    """A network may fold a knee to -178 degrees, which is 182 of flexion: into range it goes
    to the 160 bound (a deep bend), not to -15 (a straight, hyperextended leg)."""
    from models.ik.limits import clamp_to_limits

    local = np.tile(np.eye(3), (24, 1, 1))
    local[JOINT_INDEX["left_knee"]] = Rotation.from_euler("x", -178, degrees=True).as_matrix()
    local[JOINT_INDEX["right_knee"]] = Rotation.from_euler("x", -20, degrees=True).as_matrix()
    out = clamp_to_limits(local)
    left = Rotation.from_matrix(out[JOINT_INDEX["left_knee"]]).as_euler("XYZ", degrees=True)
    right = Rotation.from_matrix(out[JOINT_INDEX["right_knee"]]).as_euler("XYZ", degrees=True)
    assert np.allclose(left, [160, 0, 0], atol=1e-6) and np.allclose(right, [-15, 0, 0], atol=1e-6)


STALLS = Path(__file__).parent / "data" / "refine_stalls.npz"
BASINS = Path(__file__).parent / "data" / "refine_basins.npz"
ARM_RESTARTS = Path(__file__).parent / "data" / "arm_restarts.npz"
TRUNK_MOVES_OFF = Path(__file__).parent / "data" / "trunk_moves_off.npz"


def stalled_cases(path=STALLS):
    """Refinements that once stopped short of pins a real pose meets (the held-out CMU clips and
    m21 on the three open bodies, from the network's or a flow sample's start, or the start a
    first solve left): (start (local, trans), rest, effectors, body, cause) each. BASINS holds
    one the refinement still misses from the network's start (m21's female body, protocol
    frame 270: every start the network gives falls in one basin). ARM_RESTARTS holds natural
    solves of held-out varied protocol frames (the neutral body) whose descent left a forearm
    in the trunk where no pin holds it (before the extra steps started from the hard level made
    exact), with the fewest of the frame's pins that keep it there. TRUNK_MOVES_OFF holds natural
    solves (held-out varied protocol frames on the neutral body, held-out CMU on the female)
    whose arm stayed in the trunk or a thigh because a pinned joint of it was inside there."""
    from models.ik.effectors import KINDS

    with np.load(path, allow_pickle=False) as d:
        for k in range(len(d["count"])):
            effs = []
            for m in range(d["count"][k]):
                kind = KINDS[d["kind"][k, m]]
                target = d["target"][k, m] if kind is EffectorKind.ROTATION else tuple(d["target"][k, m, 0])
                axis = tuple(d["axis"][k, m]) if kind is EffectorKind.LOOK_AT else (0.0, 0.0, 1.0)
                effs.append(Effector(int(d["joint"][k, m]), kind, target, axis))
            yield ((d["start_local"][k], d["start_trans"][k]), d["rest"][k], effs, str(d["body"][k]),
                   str(d["cause"][k]))


@pytest.mark.parametrize("case", list(stalled_cases()), ids=lambda c: f"{c[3]} body, {c[4]}")
def test_reachable_pins_stalled_once_are_met(case):
    """'long steps': from a start far off, a Gauss-Newton step cut to the step limit is mostly
    its near-singular part and gains next to nothing, so the iterations ran out (a step too long
    is now solved again more damped). 'folded': an elbow or knee held at a corner of its range
    (folded shut, or straight and bent the wrong way round) keeps the pins it carries short, so
    some gave way by up to 45 cm (it is now refined again from a bent limb). Every pin is met."""
    start, rest, effs, _, _ = case
    out = refine_pose(*start, rest, effs)
    errors = measured_effector_errors(effs, out.local_rot, out.trans, rest)
    position = np.array([e.kind is P for e in effs])
    assert out.misses == ()
    assert errors[position].max() < 1e-3 and (errors[~position].max(initial=0.0) < np.radians(1.0)), errors
    assert inside(out.local_rot)


@pytest.mark.parametrize("case", list(stalled_cases(ARM_RESTARTS)), ids=lambda c: c[4])
def test_an_arm_left_in_the_trunk_comes_out_in_the_extra_steps_with_every_pin_met(case, open_body, monkeypatch):
    """The extra steps an arm still inside gets (COLLISION_EXTRA), started where the soft
    descent stopped, left these arms 1-6 cm in: four of those descents end with a pin off by
    more than the slack, and then only steps bringing the pin back count. Started once the hard
    level is exact again, they bring every arm out with every pin met; without them it stays in."""
    import models.ik.refine as refine
    from models.ik.cost import HAND_AND_FOREARM, BodyParts, collision_depth

    start, rest, effs, _, _ = case
    parts = BodyParts.from_body(open_body).scaled_to(rest)
    out = refine_pose(*start, rest, effs)
    assert collision_depth(out.local_rot, out.trans, rest, parts, HAND_AND_FOREARM).max() < refine.COLLISION_DEEP
    assert out.misses == () and met(out, effs, rest)
    monkeypatch.setattr(refine, "COLLISION_EXTRA", 0)
    stuck = refine_pose(*start, rest, effs)
    assert collision_depth(stuck.local_rot, stuck.trans, rest, parts, HAND_AND_FOREARM).max() > refine.COLLISION_DEEP


@pytest.mark.parametrize("case", list(stalled_cases(TRUNK_MOVES_OFF)), ids=lambda c: c[4])
def test_a_trunk_or_thigh_moves_off_an_arm_pinned_inside_it(case):
    """Where an arm's pinned joint (a wrist, an elbow) lies inside the trunk or a thigh, the arm
    cannot leave, but the trunk or the thigh can move off it and the arm can swing about the
    pin. These arms the refinement used to leave 1.6-15 cm in ("held there by the pins": it
    dropped their collision rows); each now ends outside with every pin met."""
    import models.ik.refine as refine
    from models.body.model import load_body_model, open_body_path
    from models.ik.cost import HAND_AND_FOREARM, BodyParts, collision_depth

    start, rest, effs, body, _ = case
    reference = BodyParts.from_body(load_body_model(open_body_path(body)))
    parts = reference.scaled_to(rest)
    out = refine_pose(*start, rest, effs, RefineOptions(body_parts=reference))
    assert collision_depth(out.local_rot, out.trans, rest, parts, HAND_AND_FOREARM).max() < refine.COLLISION_DEEP
    assert out.misses == () and met(out, effs, rest)


def test_the_descent_keeps_rotations_orthonormal():
    """A network's rotations are orthonormal to float32 precision; a step turns a joint by its
    parent's world rotation and back, a product along the chain, so such an error grew with every
    step (to 0.7 off orthonormal within 30 steps on the collected cases) and the rounding back
    to rotations at the end moved the pins off again."""
    from models.ik.refine import refine_levels

    for start, rest, effs, _, _ in stalled_cases():
        local = start[0].astype(np.float32).astype(np.float64)
        out, _ = refine_levels(local, start[1], rest, effs, [False] * len(effs), RefineOptions())
        assert np.abs(out @ np.swapaxes(out, -1, -2) - np.eye(3)).max() < 1e-9


def met(out, effs, rest):
    """Whether a refined pose meets every effector to 1 mm and 1 degree, by the outside measure."""
    errors = measured_effector_errors(effs, out.local_rot, out.trans, rest)
    position = np.array([e.kind is P for e in effs])
    return errors[position].max() < 1e-3 and errors[~position].max(initial=0.0) < np.radians(1.0)


def test_a_start_in_the_wrong_basin_meets_every_pin_with_the_root_turned():
    """From the network's start a pelvis pin gives way by 1.8 mm (the hips and spine settle 30
    degrees off the pose that holds every pin); refined again with the root turned, every pin
    is met inside the joint ranges."""
    from models.ik.solving import root_turned

    ((start, rest, effs, _, _),) = stalled_cases(BASINS)
    plain = refine_pose(*start, rest, effs)
    assert [(m.joint, m.gave_way) for m in plain.misses] == [("pelvis", True)] and not met(plain, effs, rest)
    out, turn = root_turned(start, lambda s: refine_pose(*s, rest, effs))
    assert turn is not None and out.misses == () and met(out, effs, rest) and inside(out.local_rot)


def test_solve_and_every_alternative_leave_the_wrong_basin():
    """The same set through the shipped network: the deterministic and natural solves and all
    eight alternatives meet every pin (before the root turns, all ten gave the pelvis way)."""
    ((_, rest, effs, _, _),) = stalled_cases(BASINS)
    net = SmplIk.load()
    solutions = [net.solve(effs, rest, SolveOptions(mode=m)) for m in ("deterministic", "natural")]
    solutions += net.sample(effs, rest, SampleOptions(count=8, seed=0))
    for solution in solutions:
        assert solution.misses == () and met(solution, effs, rest)


def test_pins_out_of_the_bodys_reach_are_named_with_the_reason_and_no_restart_is_tried(standing, monkeypatch):
    """A wrist pinned 2 m beyond what the arm, trunk and leg reach from the pinned ankle: the
    miss names the other pin, the distance between the targets and the body's span between the
    joints (the bone lengths along the path, summed here by hand), and neither solve nor
    sample spend the root-turn restarts on it (no start can meet it)."""
    import models.ik.sampling as sampling
    import models.ik.solving as solving
    from models.ik.reach import out_of_reach

    _, _, rest, fk = standing
    chain = ["left_wrist", "left_elbow", "left_shoulder", "left_collar", "spine3", "spine2", "spine1", "pelvis",
             "left_hip", "left_knee", "left_ankle"]
    ids = [JOINT_INDEX[n] for n in chain]
    span = sum(np.linalg.norm(rest[a] - rest[b]) for a, b in zip(ids, ids[1:]))
    ankle = fk.positions[JOINT_INDEX["left_ankle"]]
    near = ankle + (fk.positions[JOINT_INDEX["left_wrist"]] - ankle) * 0.9
    far = ankle + np.array([0.0, span + 0.3, 0.0])
    effs = [Effector("left_ankle", P, tuple(ankle)),
            Effector("right_ankle", P, tuple(fk.positions[JOINT_INDEX["right_ankle"]])),
            Effector("left_wrist", P, tuple(far))]
    reasons = out_of_reach(effs, rest)
    assert {0, 2} <= set(reasons) and f"({span:.2f} m)" in reasons[2] and "left_ankle's" in reasons[2]
    assert out_of_reach(effs[:2] + [Effector("left_wrist", P, tuple(near))], rest) == {}

    calls = []
    for module in (solving, sampling):
        monkeypatch.setattr(module, "root_turned", lambda *a, **k: calls.append(1) or (None, None))
    net = SmplIk.load()
    solutions = [net.solve(effs, rest, SolveOptions(mode=m)) for m in ("deterministic", "natural")]
    solutions += net.sample(effs, rest, SampleOptions(count=4, seed=0))
    for solution in solutions:
        (miss,) = solution.misses
        assert miss.joint == "left_wrist" and f"{span + 0.3:.2f} m from left_ankle's" in miss.describe()
    assert calls == []


def test_pins_that_only_a_knee_bent_backwards_meets_say_so(standing):
    """The pelvis pinned in place and turn, the left thigh's turn pinned and the ankle where a
    knee bent 45 degrees backwards puts it (30 past its range, which stops at 15): no start
    meets every pin inside the ranges, so the solve and each alternative report the miss with
    the reason, the knee named; out of reach by distance it is not."""
    from models.ik.reach import out_of_reach

    local, trans, rest, _ = standing
    bent = local.copy()
    bent[JOINT_INDEX["left_knee"]] = Rotation.from_euler("x", -45, degrees=True).as_matrix()
    fk = forward_kinematics(bent, rest, PARENTS, trans)
    effs = [Effector("pelvis", P, tuple(fk.positions[0])), Effector("pelvis", EffectorKind.ROTATION, fk.rotations[0]),
            Effector("left_hip", EffectorKind.ROTATION, fk.rotations[JOINT_INDEX["left_hip"]]),
            Effector("left_ankle", P, tuple(fk.positions[JOINT_INDEX["left_ankle"]]))]
    assert out_of_reach(effs, rest) == {}
    net = SmplIk.load()
    solutions = [net.solve(effs, rest, SolveOptions(mode=m)) for m in ("deterministic", "natural")]
    solutions += net.sample(effs, rest, SampleOptions(count=3, seed=0))
    for solution in solutions:
        assert solution.misses and all(not m.soft for m in solution.misses)
        for miss in solution.misses:
            assert miss.reason.startswith("the pins meet only with left_knee"), miss.describe()
            assert "past its range (about x)" in miss.reason
        assert inside(solution.local_rot)
    # with the ranges off the same pins are met, and no reason is looked for
    free = net.solve(effs, rest, SolveOptions(refine=RefineOptions(joint_limits=False)))
    assert free.misses == ()


def test_pins_that_may_not_give_way_are_a_fit_and_get_no_restarts(monkeypatch):
    """The basin case: with give_way off (a fit to targets that disagree, as the photo lift's)
    a miss is the compromise asked for, and no root turn is tried; with it on, one is."""
    import models.ik.sampling as sampling
    import models.ik.solving as solving

    ((_, rest, effs, _, _),) = stalled_cases(BASINS)
    calls = []
    for module in (solving, sampling):
        monkeypatch.setattr(module, "root_turned", lambda *a, **k: calls.append(1) or (None, None))
    monkeypatch.setattr(SmplIk, "range_reason", lambda *a, **k: "")
    net = SmplIk.load()
    fit = net.solve(effs, rest, SolveOptions(refine=RefineOptions(give_way=False)))
    fit_samples = net.sample(effs, rest, SampleOptions(count=8, seed=0, refine=RefineOptions(give_way=False)))
    assert fit.misses and any(s.misses for s in fit_samples) and calls == []
    assert net.solve(effs, rest).misses and calls == [1]


def test_restarts_off_tries_no_other_start(monkeypatch):
    """SolveOptions(restarts=False), as Bake asks once a frame's pins proved out of reach: the
    basin case keeps its miss, and neither solve nor sample turns the root or looks for a reason."""
    import models.ik.sampling as sampling
    import models.ik.solving as solving

    ((_, rest, effs, _, _),) = stalled_cases(BASINS)
    calls = []
    for module in (solving, sampling):
        monkeypatch.setattr(module, "root_turned", lambda *a, **k: calls.append("turn") or (None, None))
    monkeypatch.setattr(SmplIk, "range_reason", lambda *a, **k: calls.append("reason") or "")
    retries = []
    refine = refine_pose
    for module in (solving, sampling):
        monkeypatch.setattr(module, "refine_pose", lambda *a, **k: retries.append(1) or refine(*a, **k))
    net = SmplIk.load()
    off = SolveOptions(restarts=False)
    assert net.solve(effs, rest, off).misses and calls == []
    samples = net.sample(effs, rest, SampleOptions(count=8, seed=0, restarts=False))
    assert calls == []
    # each alternative that misses still tries its other starts (nearer the natural pose)
    assert len(retries) >= sum(bool(s.misses) for s in samples) > 0
    assert net.solve(effs, rest).misses and calls == ["turn", "reason"]

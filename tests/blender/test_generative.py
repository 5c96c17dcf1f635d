"""The generative model in Blender: Natural, Alternatives, Keep Pose While Dragging, a bake
that follows the path with one latent, and the refusals (bad settings, no effectors, no
generative weights)."""
import importlib

from benchmarks import blender_session
import bpy
import numpy as np
import pytest
from mathutils import Vector
from scene import joint_world, quats, update
from test_pins import body_directions, off_by, stated_distance
from test_posing import channelbag_fcurves, drawn

from models.core.skeleton import JOINT_NAMES
from models.ik.flow import DEFAULT_FLOW_WEIGHTS

needs_flow = pytest.mark.skipif(not DEFAULT_FLOW_WEIGHTS.exists(),
                                reason="the generative weights models/ik/weights/smplik_flow.npz are not trained yet")
PINNED = ("pelvis", "head", "left_wrist", "right_wrist", "left_ankle", "right_ankle")   # the posed fixture's
FREE = tuple(n for n in JOINT_NAMES if n not in PINNED)
MET = 1e-3   # metres: an effector is met


def ext(module):
    return importlib.import_module(f"{blender_session.MODULE}.addon.{module}")


def net():
    """The add-on's own SMPL-IK (the extension imports the core under its package name)."""
    return importlib.import_module(f"{blender_session.MODULE}.models.ik.smplik").load_smplik()


def solve_options(**kwargs):
    """The add-on's own models.ik.options.SolveOptions (its RefineOptions are the add-on's)."""
    return importlib.import_module(f"{blender_session.MODULE}.models.ik.options").SolveOptions(**kwargs)


def make_active(obj):
    bpy.context.view_layer.objects.active = obj


def world_joints(arm, names=JOINT_NAMES):
    """(N, 3) world positions of joints in the pose on screen."""
    return np.array([joint_world(arm, n) for n in names])


def solution_world(arm, solution, names=JOINT_NAMES):
    """(N, 3) world positions of joints of a core IkSolution posed on this body."""
    bridge = ext("com.bridge")
    world = np.array(arm.matrix_world)
    points = bridge.to_blender(solution.positions[[JOINT_NAMES.index(n) for n in names]])
    return points @ world[:3, :3].T + world[:3, 3]


def channels(arm):
    return ext("com.bridge").read_channels(arm)


def worst_miss(arm):
    """Metres: the largest distance between an enabled position effector and its joint."""
    return max(float(np.linalg.norm(joint_world(arm, o.smpl_ik_effector.joint) - np.array(o.matrix_world.translation)))
               for o in ext("pose.effectors").effectors_of(arm) if o.smpl_ik_effector.kind == "POSITION")


def core_problem(arm, dragged=()):
    """(core effectors, rest joints, refine options, pose on screen) as the add-on solves them."""
    eff = ext("pose.effectors")
    bridge = ext("com.bridge")
    return (eff.core_effectors(arm, eff.effectors_of(arm), dragged), ext("com.bridge").rest_joints(arm),
            ext("pose.solving").refine_options(arm), bridge.read_pose(arm, bridge.bone_axes(arm)))


def reach_in(effs):
    """Move the left wrist in and up (within reach) and let live solving pose the body."""
    effs["left_wrist"].location += Vector((-0.1, -0.1, 0.15))
    update()


# --- Natural --------------------------------------------------------------------------------

@needs_flow
def test_natural_writes_the_flows_natural_pose_and_undo_restores_the_pose(posed):
    arm, effs = posed
    reach_in(effs)
    name, before = arm.name, quats(arm)
    effectors_, rest, options, on_screen = core_problem(arm)
    natural = net().solve(effectors_, rest, solve_options(refine=options, current_pose=on_screen, mode="natural"))
    deterministic = net().solve(effectors_, rest, solve_options(refine=options, current_pose=on_screen))
    # the comparison below tells the modes apart: the natural pose is not the network's answer
    assert np.abs(solution_world(arm, natural) - solution_world(arm, deterministic)).max() > 1e-3
    bpy.ops.ed.undo_push(message="before Natural")
    make_active(arm)
    assert bpy.ops.smpl_ik.natural_pose() == {"FINISHED"}
    update()                                     # writing the pose starts no live solve
    assert np.abs(world_joints(arm) - solution_world(arm, natural)).max() < 1e-4
    assert worst_miss(arm) < MET
    assert arm.smpl_ik.status == ""
    bpy.ops.ed.undo_push(message="Natural")    # as the operator's UNDO flag does when run from the UI
    assert bpy.ops.ed.undo() == {"FINISHED"}
    arm = bpy.data.objects[name]
    update()
    assert np.allclose(quats(arm), before, atol=1e-6)


def test_natural_without_effectors_or_generative_weights_says_what_is_missing(posed, monkeypatch):
    arm, effs = posed
    make_active(arm)
    monkeypatch.setattr(net(), "flow", None)     # as an installation without smplik_flow.npz
    with pytest.raises(RuntimeError, match="needs the generative pose weights"):
        bpy.ops.smpl_ik.natural_pose()
    with pytest.raises(RuntimeError, match="needs the generative pose weights"):
        bpy.ops.smpl_ik.alternative(direction="NEXT")
    assert np.allclose(quats(arm), [1, 0, 0, 0], atol=1e-9)
    for obj in effs.values():
        bpy.data.objects.remove(obj)
    with pytest.raises(RuntimeError, match="no enabled effectors.*add some with Add Effector"):
        bpy.ops.smpl_ik.natural_pose()
    with pytest.raises(RuntimeError, match="no enabled effectors.*add some with Add Effector"):
        bpy.ops.smpl_ik.alternative()
    assert np.allclose(quats(arm), [1, 0, 0, 0], atol=1e-9)


# --- Alternatives ---------------------------------------------------------------------------

@needs_flow
def test_alternatives_differ_meet_the_effectors_and_step_back_exactly(posed):
    arm, effs = posed
    reach_in(effs)
    arm.smpl_ik.alternatives_count = 4
    make_active(arm)
    original = channels(arm)
    seen = {0: original}
    poses = []
    for i in (1, 2, 3):
        assert bpy.ops.smpl_ik.alternative(direction="NEXT") == {"FINISHED"}
        update()                                 # no live solve undoes the alternative
        assert arm.smpl_ik.alternative_index == i
        assert worst_miss(arm) < MET, i
        seen[i] = channels(arm)
        poses.append(world_joints(arm, FREE))
    for a in range(3):
        assert not np.array_equal(seen[a + 1][0], original[0])
        for b in range(a + 1, 3):
            assert np.abs(poses[a] - poses[b]).max() > 0.01, (a, b)   # a different pose, not a nudge
    for i in (2, 1, 0):
        assert bpy.ops.smpl_ik.alternative(direction="PREVIOUS") == {"FINISHED"}
        update()
        assert arm.smpl_ik.alternative_index == i
    for got, want in zip(channels(arm), original):
        assert np.array_equal(got, want)          # the pose before the alternatives, bit for bit
    for _ in range(2):
        bpy.ops.smpl_ik.alternative(direction="NEXT")
    for got, want in zip(channels(arm), seen[2]):
        assert np.array_equal(got, want)          # the same alternative as the first time
    bpy.ops.smpl_ik.alternative(direction="PREVIOUS")
    bpy.ops.smpl_ik.alternative(direction="PREVIOUS")
    assert bpy.ops.smpl_ik.alternative(direction="PREVIOUS") == {"FINISHED"}   # wraps round to the last
    assert arm.smpl_ik.alternative_index == 4
    assert bpy.ops.smpl_ik.alternative(direction="NEXT") == {"FINISHED"}
    assert arm.smpl_ik.alternative_index == 0
    assert all(np.array_equal(g, w) for g, w in zip(channels(arm), original))


@needs_flow
def test_alternatives_with_a_pin_out_of_reach_differ_where_the_other_pins_allow(posed):
    """The right hand dragged 20 cm in and 10 cm forward (its elbow bends, free to swing), then
    the left wrist's effector 30 cm up and 20 cm forward, out of reach. In every alternative
    the left wrist gives way alone (the other pins hold within 1 mm, the status says so), and
    the alternatives still differ where the pins leave the body free: any two are more than
    1 cm apart at some unpinned joint."""
    arm, effs = posed
    forward, up, towards_middle = body_directions(arm)
    for _ in range(5):
        effs["right_wrist"].location += Vector(-towards_middle * 0.04 + forward * 0.02)
        update()
    wrist = effs.pop("left_wrist")
    wrist.location += Vector(forward * 0.2 + up * 0.3)
    update()
    arm.smpl_ik.alternatives_count = 4
    make_active(arm)
    poses = []
    for i in range(1, 5):
        assert bpy.ops.smpl_ik.alternative(direction="NEXT") == {"FINISHED"}
        update()
        for joint, obj in effs.items():
            assert off_by(arm, obj) < MET, (i, joint, off_by(arm, obj))
        status = arm.smpl_ik.status
        assert status.startswith("Out of reach: left_wrist is") and "(it gave way to the other pins)" in status
        assert stated_distance(status) == pytest.approx(off_by(arm, wrist), abs=6e-4)
        poses.append(world_joints(arm, FREE))
    for a in range(4):
        for b in range(a):
            assert np.linalg.norm(poses[a] - poses[b], axis=1).max() > 0.01, (a, b)


@needs_flow
def test_a_new_variation_or_effector_move_starts_a_new_set_from_the_pose_on_screen(posed):
    arm, effs = posed
    reach_in(effs)
    make_active(arm)
    for _ in range(2):
        bpy.ops.smpl_ik.alternative(direction="NEXT")
    second, second_joints = channels(arm), world_joints(arm, FREE)
    arm.smpl_ik.variation = 0.5
    assert bpy.ops.smpl_ik.alternative(direction="NEXT") == {"FINISHED"}
    assert arm.smpl_ik.alternative_index == 1               # a new set: another pose, a free joint 1 cm off or more
    assert np.linalg.norm(world_joints(arm, FREE) - second_joints, axis=1).max() > 0.01
    assert bpy.ops.smpl_ik.alternative(direction="PREVIOUS") == {"FINISHED"}
    assert all(np.array_equal(g, w) for g, w in zip(channels(arm), second))   # ...that starts from alternative 2
    effs["right_wrist"].location.z += 0.05                   # a live solve: the counter starts again
    update()
    assert arm.smpl_ik.alternative_index == 0
    moved = channels(arm)
    assert bpy.ops.smpl_ik.alternative(direction="NEXT") == {"FINISHED"}
    assert arm.smpl_ik.alternative_index == 1
    assert worst_miss(arm) < MET
    bpy.ops.smpl_ik.alternative(direction="PREVIOUS")
    assert all(np.array_equal(g, w) for g, w in zip(channels(arm), moved))


@needs_flow
def test_undo_of_an_alternative_goes_back_one_and_the_set_carries_on(posed):
    arm, effs = posed
    reach_in(effs)
    make_active(arm)
    name = arm.name
    bpy.ops.smpl_ik.alternative(direction="NEXT")
    first = channels(arm)
    bpy.ops.ed.undo_push(message="Alternative 1")
    bpy.ops.smpl_ik.alternative(direction="NEXT")
    second = channels(arm)
    bpy.ops.ed.undo_push(message="Alternative 2")
    assert bpy.ops.ed.undo() == {"FINISHED"}
    arm = bpy.data.objects[name]
    update()
    assert arm.smpl_ik.alternative_index == 1
    assert all(np.array_equal(g, w) for g, w in zip(channels(arm), first))
    make_active(arm)
    assert bpy.ops.smpl_ik.alternative(direction="NEXT") == {"FINISHED"}
    assert arm.smpl_ik.alternative_index == 2
    assert all(np.array_equal(g, w) for g, w in zip(channels(arm), second))


@pytest.mark.parametrize("setting,value,message", [
    ("variation", float("nan"), "Variation must be a number from 0 to 2, got nan"),
    ("variation", -0.5, "Variation must be a number from 0 to 2, got -0.5"),
    ("alternatives_count", 1, "number of alternatives must be from 2 to 32, got 1"),
    ("alternatives_count", 50, "number of alternatives must be from 2 to 32, got 50"),
])
def test_bad_alternative_settings_are_refused_and_the_pose_stays(posed, setting, value, message):
    arm, effs = posed
    effs["left_wrist"].location.z += 0.1
    update()
    before = channels(arm)
    setattr(arm.smpl_ik, setting, value)
    make_active(arm)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.smpl_ik.alternative(direction="NEXT")
    assert message in arm.smpl_ik.status
    assert all(np.array_equal(g, w) for g, w in zip(channels(arm), before))
    assert arm.smpl_ik.alternative_index == 0


# --- Keep Pose While Dragging ---------------------------------------------------------------

@needs_flow
def test_keep_pose_while_dragging_carries_the_pose_on_screen(posed):
    """A drag step with Keep Pose keeps the last solution (an alternative here), as the core's
    SolveOptions.keep does: the joints without effectors move less than a fresh solve would
    move them, and a step where nothing moved leaves the pose as it is."""
    arm, effs = posed
    assert arm.smpl_ik.keep_pose
    reach_in(effs)
    make_active(arm)
    assert bpy.ops.smpl_ik.alternative(direction="NEXT") == {"FINISHED"}   # a pose of character
    before = world_joints(arm, FREE)
    on_screen = core_problem(arm)[3]
    last = ext("com.live").last[arm.session_uid]
    wrist = effs["right_wrist"]
    wrist.location += Vector((0.03, -0.03, 0.03))              # a little, within reach
    update()                                                    # the live solve of the drag
    effectors_, rest, options, _ = core_problem(arm, dragged={wrist.name})
    kept = net().solve(effectors_, rest,
                       solve_options(refine=options, current_pose=on_screen, mode="natural", keep=last))
    fresh = net().solve(core_problem(arm)[0], rest, solve_options(refine=options, current_pose=on_screen))
    assert np.abs(world_joints(arm) - solution_world(arm, kept)).max() < 1e-4   # it kept the last solution
    assert worst_miss(arm) < MET
    moved = np.linalg.norm(world_joints(arm, FREE) - before, axis=1).mean()
    moved_fresh = np.linalg.norm(solution_world(arm, fresh, FREE) - before, axis=1).mean()
    assert moved < moved_fresh                                  # the free joints stay nearer where they were
    still = world_joints(arm)
    for _ in range(3):
        ext("pose.solving").solve_body(arm, dragged={wrist.name})    # the drag's solve, nothing moved
        update()
        assert np.abs(world_joints(arm) - still).max() < 1e-4   # the pose stays (to the refinement's stop)


@needs_flow
def test_a_drag_with_keep_pose_runs_no_flow_within_reach_and_holds_the_pins(posed, monkeypatch):
    """Ten live drag steps of 1 cm within reach with Keep Pose on: each runs the network once
    and neither direction of the flow (the latent of the pose is found only when a step falls
    back on it), every pin and the dragged wrist are met within 1 mm, and the body's last
    solution, the pose on screen, is what the next step keeps."""
    arm, effs = posed
    assert arm.smpl_ik.keep_pose
    reach_in(effs)
    flow = net().flow
    calls = []
    for name in ("forward", "inverse"):
        original = getattr(flow, name)
        monkeypatch.setattr(flow, name, lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    network = net().network
    runs = []
    monkeypatch.setattr(net(), "network", lambda *a, **k: runs.append(1) or network(*a, **k))
    wrist = effs["right_wrist"]
    for _ in range(10):
        wrist.location += Vector((0.006, -0.006, 0.005))
        update()
        assert worst_miss(arm) < MET
        last = ext("com.live").last[arm.session_uid]
        assert last.condition is not None and np.abs(world_joints(arm) - solution_world(arm, last)).max() < 1e-4
    assert calls == [] and len(runs) == 10


@needs_flow
def test_keep_pose_takes_the_pose_on_screen_after_an_edit_and_off_warm_starts(posed):
    arm, effs = posed
    reach_in(effs)
    solving, eff = ext("pose.solving"), ext("pose.effectors")
    # an edit the last solve did not make: the wrist turns the hand (its position stays pinned)
    arm.pose.bones["left_wrist"].rotation_quaternion = (0.9, 0.0, 0.0, 0.43)
    arm.smpl_ik.live = False                     # the drag's solve is made here, by hand
    wrist = effs["right_wrist"]
    wrist.location += Vector((0.03, -0.03, 0.03))
    update()
    effectors_, rest, options, on_screen = core_problem(arm, dragged={wrist.name})
    assert solving.kept_pose(arm, on_screen, rest) is on_screen   # not the stale solution
    kept = net().solve(effectors_, rest,
                       solve_options(refine=options, current_pose=on_screen, mode="natural", keep=on_screen))
    warm = net().solve(effectors_, rest, solve_options(refine=options, current_pose=on_screen, warm_start=True))
    # a pose without a latent is kept by its own latent under the moved effectors, which decodes
    # to that very pose at its own place: the refinement then starts where the warm start does
    assert np.abs(solution_world(arm, kept) - solution_world(arm, warm)).max() < 1e-4
    assert kept.latent is not None and warm.latent is None
    solution = solving.solve_effectors(arm, eff.effectors_of(arm), solving.SolveRequest(frozenset({wrist.name})))
    assert np.abs(solution_world(arm, solution) - solution_world(arm, kept)).max() < 1e-6
    arm.smpl_ik.keep_pose = False
    solution = solving.solve_effectors(arm, eff.effectors_of(arm), solving.SolveRequest(frozenset({wrist.name})))
    assert np.abs(solution_world(arm, solution) - solution_world(arm, warm)).max() < 1e-6


def test_with_keep_pose_and_plant_feet_off_a_drag_still_refines_the_pose_on_screen(posed):
    """Without Plant Feet nothing else reads the pose on screen: the drag must, to start there
    (it solved afresh from the network's guess every step)."""
    arm, effs = posed
    reach_in(effs)
    solving, eff = ext("pose.solving"), ext("pose.effectors")
    arm.smpl_ik.live = False
    arm.smpl_ik.keep_pose = arm.smpl_ik.plant_feet = False
    wrist = effs["right_wrist"]
    wrist.location += Vector((0.03, -0.03, 0.03))
    update()
    effectors_, rest, options, on_screen = core_problem(arm, dragged={wrist.name})
    warm = net().solve(effectors_, rest, solve_options(refine=options, current_pose=on_screen, warm_start=True))
    fresh = net().solve(effectors_, rest, solve_options(refine=options))
    assert np.abs(solution_world(arm, warm) - solution_world(arm, fresh)).max() > 1e-4   # the two tell apart
    solution = solving.solve_effectors(arm, eff.effectors_of(arm), solving.SolveRequest(frozenset({wrist.name})))
    assert np.abs(solution_world(arm, solution) - solution_world(arm, warm)).max() < 1e-6


def test_without_generative_weights_a_drag_refines_the_pose_on_screen(posed, monkeypatch):
    arm, effs = posed
    reach_in(effs)
    monkeypatch.setattr(net(), "flow", None)
    arm.smpl_ik.live = False
    wrist = effs["right_wrist"]
    wrist.location += Vector((0.03, -0.03, 0.03))
    update()
    effectors_, rest, options, on_screen = core_problem(arm, dragged={wrist.name})
    warm = net().solve(effectors_, rest, solve_options(refine=options, current_pose=on_screen, warm_start=True))
    fresh = net().solve(effectors_, rest, solve_options(refine=options, current_pose=on_screen))
    assert np.abs(solution_world(arm, warm) - solution_world(arm, fresh)).max() > 1e-4   # the two tell apart
    arm.smpl_ik.live = True
    wrist.location.z += 1e-3                     # a live drag step, Keep Pose on but no flow to keep with
    update()
    effectors_ = core_problem(arm, dragged={wrist.name})[0]
    warm = net().solve(effectors_, rest, solve_options(refine=options, current_pose=on_screen, warm_start=True))
    assert np.abs(world_joints(arm) - solution_world(arm, warm)).max() < 1e-4
    assert worst_miss(arm) < MET


# --- Follow Path bake -----------------------------------------------------------------------

def animate_wrist(effs, frames=12):
    """The left wrist effector keyed along an arc in and up, frames 1..frames."""
    wrist = effs["left_wrist"]
    start = wrist.location.copy()
    for frame in range(1, frames + 1):
        t = (frame - 1) / (frames - 1)
        wrist.location = start + Vector((-0.12 * t, -0.1 * np.sin(np.pi * t), 0.2 * t))
        wrist.keyframe_insert("location", frame=frame)
    return wrist


def free_joint_jump(joints):
    """Metres: the mean frame-to-frame move of the joints without effectors in (frames, 24, 3)."""
    free = [JOINT_NAMES.index(n) for n in FREE]
    return float(np.linalg.norm(np.diff(np.asarray(joints)[:, free], axis=0), axis=2).mean())


def followed(arm, frames, smoothness):
    """(frames, 24, 3) world joints of the core's PathFollower over the animated effectors."""
    path = importlib.import_module(f"{blender_session.MODULE}.models.ik.path")
    eff = ext("pose.effectors")
    follower = path.PathFollower(net(), ext("com.bridge").rest_joints(arm), smoothness=smoothness,
                                 options=ext("pose.solving").refine_options(arm))
    out = []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        out.append(solution_world(arm, follower.step(eff.core_effectors(arm, eff.effectors_of(arm)))))
    return np.array(out)


@needs_flow
def test_follow_path_bake_keys_every_frame_as_the_path_follower_solves_it(posed):
    arm, effs = posed
    animate_wrist(effs)
    make_active(arm)
    bpy.context.scene.frame_set(5)
    frames = range(1, 13)
    baked = {}
    for mu in (0.0, 0.9):
        expected = followed(arm, frames, mu)
        bpy.context.scene.frame_set(5)
        assert bpy.ops.smpl_ik.bake(frame_start=1, frame_end=12, follow_path=True, path_smoothness=mu) == {"FINISHED"}
        assert bpy.context.scene.frame_current == 5
        curves = channelbag_fcurves(arm)
        for name in JOINT_NAMES:
            fc = curves[(f'pose.bones["{name}"].rotation_quaternion', 0)]
            assert [k.co[0] for k in fc.keyframe_points] == [float(f) for f in frames]
        baked[mu] = []
        for k, frame in enumerate(frames):
            bpy.context.scene.frame_set(frame)
            assert worst_miss(arm) < MET, (mu, frame)
            baked[mu].append(world_joints(arm))
            assert np.abs(baked[mu][-1] - expected[k]).max() < 1e-4, (mu, frame)
    assert np.abs(np.array(baked[0.9]) - np.array(baked[0.0])).max() > 1e-3   # the smoothness is used
    assert free_joint_jump(baked[0.9]) < free_joint_jump(baked[0.0])           # and steadies the free joints


def test_follow_path_without_generative_weights_keys_nothing(posed, monkeypatch):
    arm, effs = posed
    animate_wrist(effs, frames=3)
    make_active(arm)
    monkeypatch.setattr(net(), "flow", None)
    with pytest.raises(RuntimeError, match="Follow Path needs the generative pose weights"):
        bpy.ops.smpl_ik.bake(frame_start=1, frame_end=3, follow_path=True)
    assert arm.animation_data is None


# --- the panel and the selection ------------------------------------------------------------

def test_pose_panel_offers_natural_alternatives_and_keep_pose(posed):
    arm, _ = posed
    make_active(arm)
    pose = drawn("SMPL_IK_PT_pose")
    assert "smpl_ik.natural_pose" in pose and pose.count("smpl_ik.alternative") == 2
    for prop in ("keep_pose", "alternatives_count", "variation", "live", "refine"):
        assert f"SmplIkBodyProperties.{prop}" in pose


@pytest.mark.parametrize("name", ["natural_pose", "alternative"])
def test_new_operators_without_a_body_say_what_to_select(name):
    with pytest.raises(RuntimeError, match="select an SMPL-IK body"):
        getattr(bpy.ops.smpl_ik, name)()
    assert not bpy.data.objects

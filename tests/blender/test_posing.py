"""Posing in Blender: effectors, live solving, mirror/reset, keyframes, bake, bad input."""
import importlib

import bpy
import numpy as np
import pytest
from mathutils import Vector

from models.core.kinematics import forward_kinematics
from models.core.skeleton import JOINT_NAMES, PARENTS
from models.ik.options import SolveOptions
from models.ik.smplik import load_smplik

from benchmarks import blender_session
from scene import draw_into, effectors, joint_world, largest_turn_deg, object_fcurves, quats, update


MET = 1e-3   # metres: what the solver promises for a reachable pin (it reports a miss beyond 1 mm)
# A 20 cm (10 cm) wrist move with the pelvis held turns the chain pelvis..wrist, whose joints lie
# at most ~4.4 m from the wrist in all (summed): some joint turns at least 0.2 / 4.4 rad = 2.6 deg
# (0.1 / 4.4 = 1.3 deg); a solve that did not move the body turns none.
TURNED_DEG = 1.0


def add_body():
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    return bpy.context.active_object


def ext_effectors():
    return importlib.import_module(blender_session.MODULE + ".addon.pose.effectors")


def ext_bridge():
    return importlib.import_module(blender_session.MODULE + ".addon.com.bridge")


def make_active(obj):
    bpy.context.view_layer.objects.active = obj


def test_add_effector_makes_an_unparented_empty_on_the_joint(posed):
    arm, _ = posed
    looks = set()
    for kind in ("POSITION", "ROTATION", "LOOK_AT"):
        make_active(arm)
        assert bpy.ops.smpl_ik.add_effector(joint="left_elbow", kind=kind) == {"FINISHED"}
        obj = next(
            o for o in bpy.data.objects if o.type == "EMPTY" and o.smpl_ik_effector.kind == kind
            and o.smpl_ik_effector.joint == "left_elbow")
        props = obj.smpl_ik_effector
        assert obj.parent is None and props.body == arm and props.enabled and props.weight == 1.0
        looks.add(obj.empty_display_type)
        distance = np.linalg.norm(np.array(obj.matrix_world.translation) - joint_world(arm, "left_elbow"))
        if kind == "LOOK_AT":
            assert distance == pytest.approx(0.5, abs=1e-4)   # the target sits along the axis
        else:
            assert distance < 1e-5
    assert len(looks) == 3
    assert set(effectors(arm)) == {"pelvis", "head", "left_wrist", "right_wrist", "left_ankle",
                                   "right_ankle", "left_elbow"}


def test_adding_effectors_does_not_move_the_body(posed):
    arm, _ = posed
    assert np.allclose(quats(arm), [1, 0, 0, 0], atol=1e-6)


def test_moving_the_left_wrist_20cm_solves_the_body(posed):
    arm, effs = posed
    others = {j: np.array(o.matrix_world.translation) for j, o in effs.items() if j != "left_wrist"}
    move = Vector((-0.1, -0.1, 0.15))
    effs["left_wrist"].location += move * (0.2 / move.length)   # 20 cm, within reach
    update()
    target = np.array(effs["left_wrist"].matrix_world.translation)
    assert np.linalg.norm(joint_world(arm, "left_wrist") - target) < MET
    for joint, before in others.items():
        assert np.linalg.norm(np.array(effs[joint].matrix_world.translation) - before) < 1e-6  # not moved
        assert np.linalg.norm(joint_world(arm, joint) - before) < MET, joint                   # still met
    assert largest_turn_deg(arm) > TURNED_DEG   # the body moved to get there


def test_no_solve_without_a_relevant_change(posed):
    arm, effs = posed
    effs["left_wrist"].location.z += 0.1
    update()
    arm.pose.bones["left_knee"].rotation_quaternion = (0.9, 0.43, 0.0, 0.0)  # an artist's own edit
    other = bpy.data.objects.new("unrelated", None)
    bpy.context.collection.objects.link(other)
    other.location.x = 3
    update()
    effs["right_wrist"].smpl_ik_effector.enabled = False
    effs["right_wrist"].location.x += 0.3        # disabled: no solve
    update()
    update()
    assert tuple(arm.pose.bones["left_knee"].rotation_quaternion) == pytest.approx((0.9, 0.43, 0.0, 0.0))


def test_live_off_and_raw_network_toggle(posed):
    arm, effs = posed
    arm.smpl_ik.live = False
    effs["left_wrist"].location.z += 0.1
    update()
    assert np.allclose(quats(arm), [1, 0, 0, 0], atol=1e-6)
    arm.smpl_ik.refine = False
    make_active(arm)
    assert bpy.ops.smpl_ik.solve() == {"FINISHED"}
    raw = load_smplik().solve(ext_effectors().core_effectors(arm, ext_effectors().effectors_of(arm)),
                              ext_bridge().rest_joints(arm), SolveOptions(refine=None))
    local, _ = ext_bridge().read_pose(arm, ext_bridge().bone_axes(arm))
    assert np.allclose(local, raw.local_rot, atol=1e-5)


def test_enabling_an_effector_pins_it_without_a_jump(posed):
    arm, effs = posed
    effs["left_wrist"].location.z += 0.1
    update()
    wrist = effs["right_wrist"]
    wrist.smpl_ik_effector.enabled = False
    wrist.location.x += 0.4
    update()
    before = quats(arm)
    wrist.smpl_ik_effector.enabled = True
    update()
    assert np.allclose(quats(arm), before, atol=1e-6)
    assert np.linalg.norm(np.array(wrist.matrix_world.translation) - joint_world(arm, "right_wrist")) < 1e-4


def test_deleting_an_effector_only_removes_its_constraint(posed):
    arm, effs = posed
    effs["left_wrist"].location.z += 0.1
    update()
    before = quats(arm)
    bpy.data.objects.remove(effs["right_wrist"])
    update()
    assert np.allclose(quats(arm), before, atol=1e-6)
    effs["left_wrist"].location.z += 0.05
    update()
    assert np.linalg.norm(joint_world(arm, "left_wrist") - np.array(effs["left_wrist"].matrix_world.translation)) < MET


def test_rotation_and_look_at_effectors(posed):
    arm, effs = posed
    make_active(arm)
    assert bpy.ops.smpl_ik.add_effector(joint="left_wrist", kind="ROTATION") == {"FINISHED"}
    assert bpy.ops.smpl_ik.add_effector(joint="head", kind="LOOK_AT") == {"FINISHED"}
    rot = next(o for o in bpy.data.objects if o.smpl_ik_effector.kind == "ROTATION")
    look = next(o for o in bpy.data.objects if o.smpl_ik_effector.kind == "LOOK_AT")
    rot.rotation_euler.x += 0.6
    look.location.z += 0.25     # look up
    update()
    bone_world = (arm.matrix_world @ arm.pose.bones["left_wrist"].matrix).to_3x3().normalized()
    wanted = rot.matrix_world.to_3x3().normalized()
    angle = np.degrees((bone_world.to_quaternion().rotation_difference(wanted.to_quaternion())).angle)
    assert angle < 1.0
    # the head's forward axis: SMPL +Z, i.e. -Y in the armature at rest; posed by the bone
    posed = arm.pose.bones["head"].matrix.to_3x3() @ arm.data.bones["head"].matrix_local.to_3x3().inverted()
    forward = np.array(arm.matrix_world.to_3x3().normalized() @ posed @ Vector((0, -1, 0)))
    to_target = np.array(look.matrix_world.translation) - joint_world(arm, "head")
    cos = forward @ to_target / np.linalg.norm(forward) / np.linalg.norm(to_target)
    assert np.degrees(np.arccos(min(cos, 1.0))) < 2.0


def test_mirror_and_reset(posed):
    arm, effs = posed
    effs["left_wrist"].location += Vector((-0.1, -0.15, 0.1))
    update()
    make_active(arm)
    eff_mod = ext_effectors()
    _, before = eff_mod.posed_joints(arm)
    assert bpy.ops.smpl_ik.mirror_pose() == {"FINISHED"}
    update()
    _, after = eff_mod.posed_joints(arm)
    flip = np.array([-1.0, 1.0, 1.0])
    mirror = [JOINT_NAMES.index(n.replace("left", "right") if "left" in n else n.replace("right", "left"))
              for n in JOINT_NAMES]
    rest = ext_bridge().rest_joints(arm)
    # the open body is symmetric to a few mm: positions mirror through the body's own plane
    assert np.abs(after - (before * flip)[mirror]).max() < 0.01
    for j, obj in effs.items():  # effectors moved with their joints
        assert np.linalg.norm(np.array(obj.matrix_world.translation) - joint_world(arm, j)) < 1e-4
    assert bpy.ops.smpl_ik.mirror_pose() == {"FINISHED"}
    _, twice = eff_mod.posed_joints(arm)
    assert np.abs(twice - before).max() < 0.01
    assert bpy.ops.smpl_ik.reset_pose() == {"FINISHED"}
    update()
    assert np.allclose(quats(arm), [1, 0, 0, 0], atol=1e-9)
    _, now = eff_mod.posed_joints(arm)
    assert np.allclose(now, rest, atol=1e-6)
    assert np.linalg.norm(np.array(effs["left_wrist"].matrix_world.translation) - joint_world(arm, "left_wrist")) < 1e-4


def test_effectors_moved_by_a_pose_edit_start_no_solve(posed):
    """Mirror and Reset move the effectors onto their joints (pinning); live solving must see
    them as already solved, so an artist's edit made before the next update is kept."""
    arm, effs = posed
    effs["left_wrist"].location += Vector((-0.1, -0.15, 0.1))
    update()
    solving = importlib.import_module(blender_session.MODULE + ".addon.pose.edits")
    solving.mirror_pose(arm)     # as the operators do, without the update an operator ends with
    update()
    solving.reset_pose(arm)
    arm.pose.bones["left_knee"].rotation_quaternion = (0.9, 0.43, 0.0, 0.0)
    update()
    update()
    assert tuple(arm.pose.bones["left_knee"].rotation_quaternion) == pytest.approx((0.9, 0.43, 0.0, 0.0))
    effs["left_wrist"].location.z += 0.1          # and a real move still solves
    update()
    assert np.linalg.norm(joint_world(arm, "left_wrist") - np.array(effs["left_wrist"].matrix_world.translation)) < MET


def test_disabling_and_enabling_again_leaves_one_live_handler():
    import addon_utils

    def ours(handlers):
        return [h for h in handlers if getattr(h, "__module__", "").startswith(blender_session.MODULE)]

    addon_utils.disable(blender_session.MODULE, default_set=True)
    try:
        assert not hasattr(bpy.types.Object, "smpl_ik")
        assert not ours(bpy.app.handlers.depsgraph_update_post) and not ours(bpy.app.handlers.undo_post)
    finally:
        blender_session.start()                    # enables it again, modules in order
    assert len(ours(bpy.app.handlers.depsgraph_update_post)) == 1
    assert len(ours(bpy.app.handlers.load_post)) == 1
    arm = add_body()
    assert bpy.ops.smpl_ik.add_default_effectors() == {"FINISHED"}
    update()
    wrist = effectors(arm)["left_wrist"]
    wrist.location.z += 0.1
    update()
    assert np.linalg.norm(joint_world(arm, "left_wrist") - np.array(wrist.matrix_world.translation)) < MET
    assert largest_turn_deg(arm) > TURNED_DEG


def channelbag_fcurves(obj):
    """{(data path, index): F-curve} of the curves animating `obj` (its action slot's)."""
    ad = obj.animation_data
    assert ad is not None and ad.action is not None
    return {(f.data_path, f.array_index): f for f in object_fcurves(obj)}


def test_keyframe_pose_keys_every_bone_in_the_action_slot(posed):
    arm, effs = posed
    effs["left_wrist"].location.z += 0.1
    update()
    bpy.context.scene.frame_set(7)
    make_active(effs["left_wrist"])   # works from an effector too
    assert bpy.ops.smpl_ik.keyframe_pose() == {"FINISHED"}
    curves = channelbag_fcurves(arm)
    for name in JOINT_NAMES:
        for i in range(4):
            fc = curves[(f'pose.bones["{name}"].rotation_quaternion', i)]
            assert [k.co[0] for k in fc.keyframe_points] == [7.0]
            assert fc.keyframe_points[0].co[1] == pytest.approx(arm.pose.bones[name].rotation_quaternion[i], abs=1e-6)
    assert ('pose.bones["pelvis"].location', 2) in curves


def test_bake_solves_every_frame_from_animated_effectors(posed):
    arm, effs = posed
    wrist = effs["left_wrist"]
    start = wrist.location.copy()
    for frame, dz in ((1, 0.0), (9, 0.25)):
        wrist.location = start + Vector((-0.1, -0.1, dz))
        wrist.keyframe_insert("location", frame=frame)
    make_active(arm)
    assert bpy.ops.smpl_ik.bake(frame_start=1, frame_end=9) == {"FINISHED"}
    curves = channelbag_fcurves(arm)
    fc = curves[('pose.bones["left_elbow"].rotation_quaternion', 0)]
    assert [k.co[0] for k in fc.keyframe_points] == list(map(float, range(1, 10)))
    for frame in (1, 5, 9):
        bpy.context.scene.frame_set(frame)
        assert np.linalg.norm(joint_world(arm, "left_wrist") - np.array(wrist.matrix_world.translation)) < MET
    raw = np.array([[k.co[1] for k in curves[('pose.bones["left_elbow"].rotation_quaternion', i)].keyframe_points]
                    for i in range(4)])
    assert bpy.ops.smpl_ik.bake(frame_start=1, frame_end=9, smoothing=2.0) == {"FINISHED"}
    curves = channelbag_fcurves(arm)
    smooth = np.array([[k.co[1] for k in curves[('pose.bones["left_elbow"].rotation_quaternion', i)].keyframe_points]
                       for i in range(4)])
    jerk = lambda q: np.abs(np.diff(q, 2, axis=1)).sum()  # noqa: E731
    # a Gaussian of sigma 2 frames keeps a tenth or less of what changes from frame to frame
    # faster than every 6 frames; over 9 frames at least half the jerk must go
    assert jerk(smooth) < 0.5 * jerk(raw)


def test_effector_on_a_deleted_body_gives_a_message(posed):
    arm, effs = posed
    mesh = arm.smpl_ik.mesh
    bpy.data.objects.remove(mesh)
    bpy.data.objects.remove(arm)
    wrist = effs["left_wrist"]
    make_active(wrist)
    objects = set(bpy.data.objects)
    with pytest.raises(RuntimeError, match="its body was deleted"):
        bpy.ops.smpl_ik.solve()
    wrist.location.z += 0.2   # live solving ignores it
    update()
    assert set(bpy.data.objects) == objects


def test_bad_bake_range_and_no_effectors(posed):
    arm, effs = posed
    make_active(arm)
    with pytest.raises(RuntimeError, match="range 5-2 is empty"):
        bpy.ops.smpl_ik.bake(frame_start=5, frame_end=2)
    for obj in effs.values():
        bpy.data.objects.remove(obj)
    with pytest.raises(RuntimeError, match="no enabled effectors"):
        bpy.ops.smpl_ik.solve()
    assert arm.animation_data is None


def test_solved_pose_matches_forward_kinematics_of_the_core(posed):
    """The pose written to the bones is the core's pose: FK of the read-back pose puts every
    joint where Blender's evaluated bones are."""
    arm, effs = posed
    effs["right_ankle"].location += Vector((0.1, -0.2, 0.25))
    update()
    bridge = ext_bridge()
    ext_effectors()
    local, trans = bridge.read_pose(arm, bridge.bone_axes(arm))
    pos = forward_kinematics(local, ext_bridge().rest_joints(arm), PARENTS, trans).positions
    world = np.array(arm.matrix_world)
    blender = bridge.to_blender(pos) @ world[:3, :3].T + world[:3, 3]
    for j, name in enumerate(JOINT_NAMES):
        assert np.linalg.norm(blender[j] - joint_world(arm, name)) < 1e-4, name


def test_add_effector_on_the_active_pose_bone():
    arm = add_body()
    bpy.ops.object.mode_set(mode="POSE")
    arm.data.bones.active = arm.data.bones["right_elbow"]
    assert bpy.ops.smpl_ik.add_effector() == {"FINISHED"}       # joint defaults to the active bone
    assert set(effectors(arm)) == {"right_elbow"}
    arm.data.bones.active = None
    with pytest.raises(RuntimeError, match="select one of the body's bones"):
        bpy.ops.smpl_ik.add_effector()


def test_undo_and_redo_of_a_drag_restore_the_poses_without_solving(posed):
    arm, effs = posed
    name = arm.name
    bpy.ops.ed.undo_push(message="before the drag")
    effs["left_wrist"].location += Vector((-0.1, -0.1, 0.15))
    update()
    dragged = quats(arm)
    bpy.ops.ed.undo_push(message="drag")
    assert bpy.ops.ed.undo() == {"FINISHED"}
    arm = bpy.data.objects[name]               # undo reloads the data: look the objects up again
    update()
    assert np.allclose(quats(arm), [1, 0, 0, 0], atol=1e-6)   # as before the drag, not re-solved
    assert bpy.ops.ed.redo() == {"FINISHED"}
    arm = bpy.data.objects[name]
    update()
    assert np.allclose(quats(arm), dragged, atol=1e-6)
    wrist = effectors(arm)["left_wrist"]
    wrist.location.z += 0.05                    # and live solving carries on
    update()
    assert np.linalg.norm(joint_world(arm, "left_wrist") - np.array(wrist.matrix_world.translation)) < MET


def drawn(panel_name):
    """What a sidebar panel asks its layout for, drawn now (scene.DrawnLayout's log)."""
    return draw_into(getattr(bpy.types, panel_name).draw).log


def test_panels_offer_the_workflow(posed):
    arm, effs = posed
    make_active(arm)
    pose = drawn("SMPL_IK_PT_pose")
    for op in ("smpl_ik.add_effector", "smpl_ik.add_default_effectors", "smpl_ik.solve", "smpl_ik.mirror_pose",
               "smpl_ik.reset_pose", "smpl_ik.keyframe_pose", "smpl_ik.bake"):
        assert op in pose
    assert pose.count("SmplIkEffectorProperties.enabled") == len(effs)   # a row per effector
    assert "smpl_ik.pose_from_image" in drawn("SMPL_IK_PT_body")
    make_active(effs["head"])
    assert "SmplIkEffectorProperties.joint" in drawn("SMPL_IK_PT_pose")
    rig = bpy.data.objects.new("rig", bpy.data.armatures.new("rig"))
    bpy.context.collection.objects.link(rig)
    make_active(rig)
    assert {"smpl_ik.map_rig", "smpl_ik.fit_rig", "smpl_ik.transfer_to_rig"} <= set(drawn("SMPL_IK_PT_rig"))

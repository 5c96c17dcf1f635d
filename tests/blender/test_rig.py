"""Custom rigs: fit an SMPL proxy, drive the rig, transfer the motion, bad rigs."""
import math
import bpy
import numpy as np
import pytest
from mathutils import Matrix, Vector

from models.body.model import load_body_model
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES, PARENTS

from conftest import ROOT
from scene import fit, keys, update

M21 = ROOT.parent / "shared" / "data" / "mocap" / "m21" / "m21_data_t.bvh"
needs_m21 = pytest.mark.skipif(not M21.is_file(), reason=f"{M21} not found (the shared mocap data is absent)")

# A Mixamo-named humanoid: SMPL joint -> bone name.
MIXAMO = {"pelvis": "Hips", "spine1": "Spine", "spine2": "Spine1", "spine3": "Spine2", "neck": "Neck",
          "head": "Head"}
for _side, _S in (("left", "Left"), ("right", "Right")):
    MIXAMO.update({f"{_side}_hip": f"{_S}UpLeg", f"{_side}_knee": f"{_S}Leg", f"{_side}_ankle": f"{_S}Foot",
                   f"{_side}_foot": f"{_S}ToeBase", f"{_side}_collar": f"{_S}Shoulder",
                   f"{_side}_shoulder": f"{_S}Arm", f"{_side}_elbow": f"{_S}ForeArm", f"{_side}_wrist": f"{_S}Hand"})


def head(obj, bone):
    return np.array(obj.matrix_world @ obj.pose.bones[bone].head)


def a_pose_rig(name="character", arm_drop_deg=40.0, rename=None):
    """A Mixamo-named armature on the open body's joints, arms lowered into an A-pose, built
    in centimetres and turned 90 degrees, so units, rest pose and heading all differ from SMPL."""
    joints = load_body_model().rest_joints(np.zeros(10))
    pos = {j: Vector((x, -z, y)) * 100 for j, (x, y, z) in zip(JOINT_NAMES, joints)}  # Blender axes, cm
    for side, sign in (("left", 1), ("right", -1)):
        pivot = pos[f"{side}_shoulder"].copy()
        turn = Matrix.Rotation(math.radians(-sign * arm_drop_deg), 3, "Y")
        for j in ("elbow", "wrist"):
            pos[f"{side}_{j}"] = pivot + turn @ (pos[f"{side}_{j}"] - pivot)
    names = dict(MIXAMO, **(rename or {}))
    data = bpy.data.armatures.new(name)
    rig = bpy.data.objects.new(name, data)
    bpy.context.collection.objects.link(rig)
    rig.rotation_euler.z = math.radians(90)
    rig.location = (2.0, 1.0, 0.0)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    for j, joint in enumerate(JOINT_NAMES):
        if joint not in names:
            continue
        eb = data.edit_bones.new(names[joint])
        eb.head = pos[joint]
        kids = [k for k in range(24) if PARENTS[k] == j and JOINT_NAMES[k] in MIXAMO]
        eb.tail = pos[JOINT_NAMES[kids[0]]] if len(kids) == 1 else pos[joint] + Vector((0, 0, 8))
        p = PARENTS[j]
        while p >= 0 and JOINT_NAMES[p] not in names:
            p = PARENTS[p]
        if p >= 0:
            eb.parent = data.edit_bones[names[JOINT_NAMES[p]]]
    bpy.ops.object.mode_set(mode="OBJECT")
    return rig


def rest_heads(rig):
    return {b.name: np.array(rig.matrix_world @ b.head_local) for b in rig.data.bones}


def drag_left_wrist(proxy, offset):
    bpy.context.view_layer.objects.active = proxy
    assert bpy.ops.smpl_ik.add_default_effectors() == {"FINISHED"}
    wrist = next(o for o in bpy.data.objects if o.type == "EMPTY" and o.smpl_ik_effector.joint == "left_wrist")
    wrist.location += Vector(offset)
    update()
    return wrist


def test_fit_rig_leaves_the_rig_in_place_and_drives_it():
    rig = a_pose_rig()
    before = rest_heads(rig)
    proxy = fit(rig)
    assert proxy is not None and proxy.smpl_ik.rig == rig
    for name, h in before.items():           # fitting does not move the character
        assert np.linalg.norm(head(rig, name) - h) < 0.05, name   # cm
    for joint, bone in MIXAMO.items():       # the proxy stands on the rig's joints
        assert np.linalg.norm(head(proxy, joint) - before[bone]) < 0.05, joint
    # the proxy's rest is a T-pose: its arms are horizontal although the rig's hang down
    rest_l = np.array(proxy.matrix_world @ proxy.data.bones["left_wrist"].head_local)
    rest_s = np.array(proxy.matrix_world @ proxy.data.bones["left_shoulder"].head_local)
    assert abs(rest_l[2] - rest_s[2]) < 3.0 < abs(before["LeftHand"][2] - before["LeftArm"][2])
    names = {it.joint: it.bone for it in rig.smpl_ik_rig.mapping}
    assert names == {j: MIXAMO.get(j, "") for j in JOINT_NAMES}

    wrist = drag_left_wrist(proxy, (-10.0, -15.0, 15.0))   # cm: the rig is in centimetres, turned 90 deg
    target = np.array(wrist.matrix_world.translation)
    assert np.linalg.norm(head(proxy, "left_wrist") - target) < 1.0
    for side in ("Left", "Right"):
        joint = f"{side.lower()}_wrist"
        assert np.linalg.norm(head(rig, f"{side}Hand") - head(proxy, joint)) < 2.0
    assert np.linalg.norm(head(rig, "LeftHand") - before["LeftHand"]) > 20


def test_transfer_to_rig_bakes_the_motion_and_removes_the_drive():
    rig = a_pose_rig()
    proxy = fit(rig)
    wrist = drag_left_wrist(proxy, (0.0, 0.0, 0.0))
    start = wrist.location.copy()
    for frame, dz in ((1, 0.0), (5, 35.0)):
        wrist.location = start + Vector((-10.0, -10.0, dz))
        wrist.keyframe_insert("location", frame=frame)
    bpy.context.view_layer.objects.active = proxy
    assert bpy.ops.smpl_ik.bake(frame_start=1, frame_end=5) == {"FINISHED"}
    driven = {}
    for frame in (1, 3, 5):
        bpy.context.scene.frame_set(frame)
        driven[frame] = {b: head(rig, b) for b in ("LeftHand", "RightFoot", "Head")}
    bpy.context.view_layer.objects.active = rig
    assert bpy.ops.smpl_ik.transfer_to_rig(frame_start=1, frame_end=5, remove_drive=True) == {"FINISHED"}
    assert not any(c.name.startswith("SMPL-IK") for pb in rig.pose.bones for c in pb.constraints)
    assert rig.smpl_ik_rig.proxy is None
    for frame, heads in driven.items():   # the rig's own keys reproduce what the proxy drove
        bpy.context.scene.frame_set(frame)
        for bone, h in heads.items():
            assert np.linalg.norm(head(rig, bone) - h) < 0.5, (frame, bone)


@needs_m21
def test_m21_rig_hands_follow_the_proxy():
    bpy.ops.import_anim.bvh(filepath=str(M21))
    rig = bpy.context.active_object
    before = rest_heads(rig)
    proxy = fit(rig)
    assert sum(1 for it in rig.smpl_ik_rig.mapping if it.bone) >= 19
    for name, h in before.items():
        assert np.linalg.norm(head(rig, name) - h) < 0.05, name
    drag_left_wrist(proxy, (-15.0, -20.0, 25.0))
    for side in ("Left", "Right"):
        joint = JOINT_INDEX[f"{side.lower()}_wrist"]
        assert np.linalg.norm(head(rig, f"{side}Hand") - head(proxy, JOINT_NAMES[joint])) < 2.0


def test_non_humanoid_rig_is_refused_with_the_scene_untouched():
    data = bpy.data.armatures.new("crane")
    rig = bpy.data.objects.new("crane", data)
    bpy.context.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    for i, name in enumerate(("mast", "jib", "hook")):
        eb = data.edit_bones.new(name)
        eb.head, eb.tail = (0, 0, i), (0, 0, i + 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    objects = set(bpy.data.objects)
    with pytest.raises(RuntimeError, match="not a humanoid.*no legs found"):
        bpy.ops.smpl_ik.fit_rig()
    assert set(bpy.data.objects) == objects and not any(pb.constraints for pb in rig.pose.bones)


def test_a_bone_no_table_knows_is_found_and_the_mapping_list_overrides():
    rig = a_pose_rig(rename={"left_elbow": "arm_lower_L_x"})
    bpy.context.view_layer.objects.active = rig
    objects = set(bpy.data.objects)
    assert bpy.ops.smpl_ik.map_rig() == {"FINISHED"}   # found from the rig's shape, not its name
    items = {it.joint: it for it in rig.smpl_ik_rig.mapping}
    assert items["left_elbow"].bone == "arm_lower_L_x" and items["left_shoulder"].bone == "LeftArm"
    items["left_elbow"].bone = "LeftArm"      # a slip by hand is caught
    with pytest.raises(RuntimeError, match="LeftArm.*both left_shoulder and left_elbow"):
        bpy.ops.smpl_ik.fit_rig()
    assert set(bpy.data.objects) == objects
    items["left_elbow"].bone = "arm_lower_L_x"
    assert bpy.ops.smpl_ik.fit_rig() == {"FINISHED"}


def test_proxy_shape_follows_the_rig_only():
    rig = a_pose_rig()
    proxy = fit(rig)
    betas = proxy.smpl_ik.betas[:]
    proxy.smpl_ik.betas[0] = 3.0
    assert proxy.smpl_ik.betas[:] == pytest.approx(betas)
    assert "takes its shape" in proxy.smpl_ik.status


def add_twist_bones(rig):
    """Twist bones as Daz, CC or an exported Rigify rig have them: one in the middle of each
    upper arm and thigh, in the chain (the next joint's bone is connected to it), and a
    leaf beside the chain in each forearm, as Unreal's twist bones are."""
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    eb = rig.data.edit_bones
    for side in ("Left", "Right"):
        for upper, lower in (("Arm", "ForeArm"), ("UpLeg", "Leg")):
            a, b = eb[side + upper], eb[side + lower]
            mid = (a.head + b.head) / 2
            a.tail = mid
            twist = eb.new(f"{side}{upper}Twist")
            twist.head, twist.tail = mid, b.head.copy()
            twist.parent, twist.use_connect = a, True
            b.parent, b.use_connect = twist, True
        fore, hand = eb[side + "ForeArm"], eb[side + "Hand"]
        leaf = eb.new(f"{side}ForeArmTwist")
        leaf.head, leaf.tail, leaf.parent = (fore.head + hand.head) / 2, hand.head.copy(), fore
    bpy.ops.object.mode_set(mode="OBJECT")


def on_segment(p, a, b):
    """(distance of p from the line a-b, where along a-b it falls: 0 at a, 1 at b)."""
    seg = b - a
    f = float(np.dot(p - a, seg) / np.dot(seg, seg))
    return float(np.linalg.norm(a + f * seg - p)), f


def test_twist_bones_between_joints_follow_without_kinks():
    rig = a_pose_rig()
    add_twist_bones(rig)
    for side in ("Left", "Right"):   # stale keys on the twist bones would kink a plain chain
        for twist in ("ArmTwist", "UpLegTwist"):
            rig.pose.bones[side + twist].rotation_quaternion = (math.cos(0.35), math.sin(0.35), 0.0, 0.0)
    proxy = fit(rig)
    assert {it.bone for it in rig.smpl_ik_rig.mapping} == set(MIXAMO.values()) | {""}
    drag_left_wrist(proxy, (-10.0, -15.0, 15.0))
    joints = {j: head(proxy, j) for j in JOINT_NAMES}

    def straight_limbs():
        for side in ("Left", "Right"):
            s = side.lower()
            for bone, joint in (("ForeArm", "elbow"), ("Hand", "wrist"), ("Leg", "knee")):
                assert np.linalg.norm(head(rig, side + bone) - joints[f"{s}_{joint}"]) < 1.0, (side, bone)   # cm
            for twist, a, b in (("ArmTwist", "shoulder", "elbow"), ("UpLegTwist", "hip", "knee"),
                                ("ForeArmTwist", "elbow", "wrist")):
                off, f = on_segment(head(rig, side + twist), joints[f"{s}_{a}"], joints[f"{s}_{b}"])
                assert off < 0.2 and 0.4 < f < 0.6, (side, twist, off, f)

    straight_limbs()
    bpy.context.view_layer.objects.active = rig   # the twist bones are keyed with the rest
    assert bpy.ops.smpl_ik.transfer_to_rig(frame_start=1, frame_end=1, remove_drive=True) == {"FINISHED"}
    update()
    straight_limbs()


@needs_m21
def test_transfer_writes_a_new_action_and_leaves_the_imported_one_as_it_was():
    bpy.ops.import_anim.bvh(filepath=str(M21))
    rig = bpy.context.active_object
    imported = rig.animation_data.action
    before = keys(imported)
    assert len(before) > 50
    proxy = fit(rig)
    drag_left_wrist(proxy, (-15.0, -20.0, 25.0))
    bpy.context.view_layer.objects.active = rig
    assert "UNDO" in bpy.types.SMPL_IK_OT_transfer_to_rig.bl_options   # one undo step
    assert bpy.ops.smpl_ik.transfer_to_rig(frame_start=1, frame_end=3, remove_drive=True) == {"FINISHED"}
    action = rig.animation_data.action
    assert action is not imported and action.name == f"{rig.name} from {proxy.name}"   # the proxy has no action
    assert keys(imported) == before and imported.users >= 1
    bpy.context.scene.frame_set(2)
    for side in ("Left", "Right"):   # the new action alone holds the pose
        assert np.linalg.norm(head(rig, f"{side}Hand") - head(proxy, f"{side.lower()}_wrist")) < 1.0

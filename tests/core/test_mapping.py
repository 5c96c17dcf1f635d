"""Name-based mapping onto SMPL's joints (every convention, built from its own bone names),
namespace prefixes, JSON overrides and non-humanoid skeletons."""
import json

import numpy as np
import pytest

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES, PARENTS
from models.motion.bvh import Skeleton, read_bvh, write_bvh
from models.motion.mapping import build_mapping, load_overrides, rigify_controls
from models.motion.retarget import retarget
from models.motion.rig_fit import bones_between, fit_rig

CMU = ["root", "lhipjoint", "lfemur", "ltibia", "lfoot", "ltoes", "rhipjoint", "rfemur", "rtibia",
       "rfoot", "rtoes", "lowerback", "upperback", "thorax", "lowerneck", "upperneck", "head",
       "lclavicle", "lhumerus", "lradius", "lwrist", "lhand", "lfingers", "rclavicle", "rhumerus",
       "rradius", "rwrist", "rhand", "rfingers"]
MIXAMO = ["mixamorig:" + n for n in [
    "Hips", "Spine", "Spine1", "Spine2", "Neck", "Head", "LeftShoulder", "LeftArm", "LeftForeArm",
    "LeftHand", "LeftHandMiddle1", "RightShoulder", "RightArm", "RightForeArm", "RightHand",
    "RightHandMiddle1", "LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase", "RightUpLeg", "RightLeg",
    "RightFoot", "RightToeBase"]]
MAX = ["Hips", "Chest", "Chest2", "Neck", "Head", "LeftCollar", "LeftShoulder", "LeftElbow",
       "LeftWrist", "RightCollar", "RightShoulder", "RightElbow", "RightWrist", "LeftHip",
       "LeftKnee", "LeftAnkle", "RightHip", "RightKnee", "RightAnkle"]
RIGIFY = ["DEF-spine", "DEF-spine.001", "DEF-spine.002", "DEF-spine.003", "DEF-spine.004",
          "DEF-spine.006"] + [f"DEF-{b}.{s}" for s in "LR" for b in (
              "thigh", "shin", "foot", "toe", "shoulder", "upper_arm", "forearm", "hand", "f_middle.01")]
UNREAL = ["root", "pelvis", "spine_01", "spine_02", "spine_03", "neck_01", "head"] + [
    f"{b}_{s}" for s in "lr" for b in ("thigh", "calf", "foot", "ball", "clavicle", "upperarm",
                                       "lowerarm", "hand", "middle_01")]


def mapped_name(names, mapping, smpl_joint):
    s = mapping.source[JOINT_INDEX[smpl_joint]]
    return None if s is None else names[s]


@pytest.mark.parametrize("names,convention,expect", [
    (CMU, "cmu", {"pelvis": "root", "left_hip": "lfemur", "left_knee": "ltibia", "spine1": "upperback",
                  "left_collar": "lclavicle", "left_shoulder": "lhumerus", "left_hand": "lfingers"}),
    (MIXAMO, "motionbuilder", {"left_collar": "mixamorig:LeftShoulder", "left_shoulder": "mixamorig:LeftArm",
                               "spine3": "mixamorig:Spine2", "right_foot": "mixamorig:RightToeBase"}),
    (MAX, "3dsmax", {"left_collar": "LeftCollar", "left_shoulder": "LeftShoulder", "left_elbow": "LeftElbow",
                     "spine1": "Chest", "left_hip": "LeftHip"}),
    (RIGIFY, "rigify", {"pelvis": "DEF-spine", "head": "DEF-spine.006", "left_shoulder": "DEF-upper_arm.L",
                        "right_hand": "DEF-f_middle.01.R"}),
    (UNREAL, "unreal", {"pelvis": "pelvis", "left_knee": "calf_l", "right_collar": "clavicle_r",
                        "left_foot": "ball_l"}),
])
def test_conventions(names, convention, expect):
    m = build_mapping(names)
    assert m.convention == convention
    for smpl, src in expect.items():
        assert mapped_name(names, m, smpl) == src, smpl


def test_unmapped_joints_are_explained():
    m = build_mapping(MAX)
    assert mapped_name(MAX, m, "spine3") is None and mapped_name(MAX, m, "left_hand") is None
    assert any(n.startswith("spine3:") and "spine" in n for n in m.notes)
    assert any(n.startswith("left_hand:") and "follows its parent" in n for n in m.notes)
    assert len(m.notes) == sum(s is None for s in m.source)


def test_json_overrides(tmp_path):
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"left_hand": "lhand", "spine1": None}))
    m = build_mapping(CMU, overrides=load_overrides(path), overrides_source=str(path))
    assert mapped_name(CMU, m, "left_hand") == "lhand" and mapped_name(CMU, m, "spine1") is None
    assert "map.json" in m.convention
    with pytest.raises(SmplIkError, match=r"map.json: unknown SMPL joints 'left_palm'"):
        build_mapping(CMU, overrides={"left_palm": "lhand"}, overrides_source=str(path))
    with pytest.raises(SmplIkError, match=r"source joints not in .*'LHand'"):
        build_mapping(CMU, overrides={"left_hand": "LHand"}, overrides_source=str(path))
    path.write_text('{"left_hand": "lhand",\n "oops"}')
    with pytest.raises(SmplIkError, match=r"map.json:2: not valid JSON"):
        load_overrides(path)


def test_required_joint_removed_by_override_is_reported():
    with pytest.raises(SmplIkError, match="no joints found for left_knee"):
        build_mapping(CMU, overrides={"left_knee": None})


def test_non_humanoid_lists_missing_joints():
    names = ["Bone", "Bone.001", "Bone.002", "Tail", "Wing.L", "Wing.R"]
    with pytest.raises(SmplIkError) as err:
        build_mapping(names, "dragon.bvh")
    msg = str(err.value)
    assert msg.startswith("dragon.bvh: not a humanoid skeleton")
    for joint in ("pelvis", "left_hip", "right_knee", "left_elbow", "right_wrist"):
        assert joint in msg
    assert "Wing.L" in msg and "--mapping" in msg


# --- rigs artists bring: skeletons built from each convention's own bone names ----------------
#
# A rig is a list of (bone, parent, where): `where` is the SMPL joint the bone's head sits at,
# (a, b, f) for a point the fraction f along SMPL's segment a -> b (twist and helper bones), or
# None for a bone at the floor under the pelvis (a rig's root). Names with {L}/{l}/{Left}/{side}
# are expanded for both sides. EXPECT says which bone each SMPL joint must map to; every other
# bone is a helper that must never be chosen.

def both_sides(entries):
    out = []
    for entry in entries:
        text = "|".join(str(x) for x in entry)
        if "{" not in text:
            out.append(entry)
            continue
        for keys in ({"L": "L", "l": "l", "Left": "Left", "side": "left"},
                     {"L": "R", "l": "r", "Left": "Right", "side": "right"}):
            out.append(tuple(x.format(**keys) if isinstance(x, str) else
                             (tuple(y.format(**keys) for y in x[:2]) + x[2:] if isinstance(x, tuple) else x)
                             for x in entry))
    return out


def expect_both(table):
    out = {}
    for joint, bone in table.items():
        if "{" in joint:
            for keys in ({"L": "L", "l": "l", "Left": "Left", "side": "left"},
                         {"L": "R", "l": "r", "Left": "Right", "side": "right"}):
                out[joint.format(**keys)] = bone.format(**keys) if bone else None
        else:
            out[joint] = bone
    return out


SIDED_JOINTS = {"{side}_hip": "hip", "{side}_knee": "knee", "{side}_ankle": "ankle", "{side}_foot": "foot",
                "{side}_collar": "collar", "{side}_shoulder": "shoulder", "{side}_elbow": "elbow",
                "{side}_wrist": "wrist", "{side}_hand": "hand"}

RIGS = {
    # Unreal Engine 5 Manny / Quinn: clavicles and neck on spine_05, twist, corrective and IK
    # bones beside the chain
    "ue5_manny": ("unreal", both_sides([
        ("root", None, None), ("pelvis", "root", "pelvis"),
        ("spine_01", "pelvis", "spine1"), ("spine_02", "spine_01", ("spine1", "spine2", 0.5)),
        ("spine_03", "spine_02", "spine2"), ("spine_04", "spine_03", ("spine2", "spine3", 0.5)),
        ("spine_05", "spine_04", "spine3"), ("neck_01", "spine_05", "neck"),
        ("neck_02", "neck_01", ("neck", "head", 0.5)), ("head", "neck_02", "head"),
        ("clavicle_{l}", "spine_05", "{side}_collar"), ("clavicle_pec_{l}", "spine_05", "{side}_collar"),
        ("spine_04_latissimus_{l}", "spine_04", ("spine2", "{side}_shoulder", 0.5)),
        ("upperarm_{l}", "clavicle_{l}", "{side}_shoulder"),
        ("upperarm_twist_01_{l}", "upperarm_{l}", ("{side}_shoulder", "{side}_elbow", 0.0)),
        ("upperarm_twist_02_{l}", "upperarm_{l}", ("{side}_shoulder", "{side}_elbow", 0.5)),
        ("upperarm_correctiveRoot_{l}", "upperarm_{l}", "{side}_shoulder"),
        ("lowerarm_{l}", "upperarm_{l}", "{side}_elbow"),
        ("lowerarm_twist_01_{l}", "lowerarm_{l}", ("{side}_elbow", "{side}_wrist", 0.9)),
        ("lowerarm_twist_02_{l}", "lowerarm_{l}", ("{side}_elbow", "{side}_wrist", 0.5)),
        ("hand_{l}", "lowerarm_{l}", "{side}_wrist"),
        ("middle_metacarpal_{l}", "hand_{l}", ("{side}_wrist", "{side}_hand", 0.2)),
        ("middle_01_{l}", "middle_metacarpal_{l}", "{side}_hand"),
        ("thigh_{l}", "pelvis", "{side}_hip"),
        ("thigh_twist_01_{l}", "thigh_{l}", ("{side}_hip", "{side}_knee", 0.3)),
        ("thigh_correctiveRoot_{l}", "thigh_{l}", "{side}_hip"),
        ("calf_{l}", "thigh_{l}", "{side}_knee"),
        ("calf_twist_01_{l}", "calf_{l}", ("{side}_knee", "{side}_ankle", 0.5)),
        ("calf_twist_02_{l}", "calf_{l}", ("{side}_knee", "{side}_ankle", 0.7)),
        ("foot_{l}", "calf_{l}", "{side}_ankle"), ("ball_{l}", "foot_{l}", "{side}_foot"),
        ("ik_foot_root", "root", None), ("ik_foot_{l}", "ik_foot_root", "{side}_ankle"),
        ("ik_hand_root", "root", None), ("ik_hand_gun", "ik_hand_root", "right_wrist"),
        ("ik_hand_{l}", "ik_hand_gun", "{side}_wrist"),
    ]), expect_both({"pelvis": "pelvis", "spine1": "spine_01", "spine2": "spine_03", "spine3": "spine_05",
                     "neck": "neck_01", "head": "head", "{side}_hip": "thigh_{l}", "{side}_knee": "calf_{l}",
                     "{side}_ankle": "foot_{l}", "{side}_foot": "ball_{l}", "{side}_collar": "clavicle_{l}",
                     "{side}_shoulder": "upperarm_{l}", "{side}_elbow": "lowerarm_{l}",
                     "{side}_wrist": "hand_{l}", "{side}_hand": "middle_01_{l}"})),
    # VRoid Studio's VRM export: J_Bip_ bones; J_Sec_ (spring) and J_Adj_ bones are helpers
    "vroid": ("vroid", both_sides([
        ("Root", None, None), ("J_Bip_C_Hips", "Root", "pelvis"), ("J_Bip_C_Spine", "J_Bip_C_Hips", "spine1"),
        ("J_Bip_C_Chest", "J_Bip_C_Spine", "spine2"), ("J_Bip_C_UpperChest", "J_Bip_C_Chest", "spine3"),
        ("J_Sec_{L}_Bust1", "J_Bip_C_UpperChest", ("spine3", "{side}_shoulder", 0.5)),
        ("J_Bip_C_Neck", "J_Bip_C_UpperChest", "neck"), ("J_Bip_C_Head", "J_Bip_C_Neck", "head"),
        ("J_Adj_{L}_FaceEye", "J_Bip_C_Head", "head"), ("J_Sec_Hair1_01", "J_Bip_C_Head", "head"),
        ("J_Bip_{L}_Shoulder", "J_Bip_C_UpperChest", "{side}_collar"),
        ("J_Bip_{L}_UpperArm", "J_Bip_{L}_Shoulder", "{side}_shoulder"),
        ("J_Bip_{L}_LowerArm", "J_Bip_{L}_UpperArm", "{side}_elbow"),
        ("J_Bip_{L}_Hand", "J_Bip_{L}_LowerArm", "{side}_wrist"),
        ("J_Bip_{L}_Middle1", "J_Bip_{L}_Hand", "{side}_hand"),
        ("J_Bip_{L}_UpperLeg", "J_Bip_C_Hips", "{side}_hip"),
        ("J_Bip_{L}_LowerLeg", "J_Bip_{L}_UpperLeg", "{side}_knee"),
        ("J_Bip_{L}_Foot", "J_Bip_{L}_LowerLeg", "{side}_ankle"),
        ("J_Bip_{L}_ToeBase", "J_Bip_{L}_Foot", "{side}_foot"),
    ]), expect_both({"pelvis": "J_Bip_C_Hips", "spine1": "J_Bip_C_Spine", "spine2": "J_Bip_C_Chest",
                     "spine3": "J_Bip_C_UpperChest", "neck": "J_Bip_C_Neck", "head": "J_Bip_C_Head",
                     "{side}_hip": "J_Bip_{L}_UpperLeg", "{side}_knee": "J_Bip_{L}_LowerLeg",
                     "{side}_ankle": "J_Bip_{L}_Foot", "{side}_foot": "J_Bip_{L}_ToeBase",
                     "{side}_collar": "J_Bip_{L}_Shoulder", "{side}_shoulder": "J_Bip_{L}_UpperArm",
                     "{side}_elbow": "J_Bip_{L}_LowerArm", "{side}_wrist": "J_Bip_{L}_Hand",
                     "{side}_hand": "J_Bip_{L}_Middle1"})),
    # VRM's humanoid bone names (as rigs renamed to them carry)
    "vrm_humanoid": ("vrm", both_sides([
        ("hips", None, "pelvis"), ("spine", "hips", "spine1"), ("chest", "spine", "spine2"),
        ("upperChest", "chest", "spine3"), ("neck", "upperChest", "neck"), ("head", "neck", "head"),
        ("{side}Eye", "head", "head"),
        ("{side}Shoulder", "upperChest", "{side}_collar"), ("{side}UpperArm", "{side}Shoulder", "{side}_shoulder"),
        ("{side}LowerArm", "{side}UpperArm", "{side}_elbow"), ("{side}Hand", "{side}LowerArm", "{side}_wrist"),
        ("{side}MiddleProximal", "{side}Hand", "{side}_hand"),
        ("{side}UpperLeg", "hips", "{side}_hip"), ("{side}LowerLeg", "{side}UpperLeg", "{side}_knee"),
        ("{side}Foot", "{side}LowerLeg", "{side}_ankle"), ("{side}Toes", "{side}Foot", "{side}_foot"),
    ]), expect_both({"pelvis": "hips", "spine1": "spine", "spine2": "chest", "spine3": "upperChest",
                     "neck": "neck", "head": "head", "{side}_hip": "{side}UpperLeg",
                     "{side}_knee": "{side}LowerLeg", "{side}_ankle": "{side}Foot", "{side}_foot": "{side}Toes",
                     "{side}_collar": "{side}Shoulder", "{side}_shoulder": "{side}UpperArm",
                     "{side}_elbow": "{side}LowerArm", "{side}_wrist": "{side}Hand",
                     "{side}_hand": "{side}MiddleProximal"})),
    # Character Creator 3/4: CC_Base_Hip turns legs and spine, CC_Base_Pelvis (same place) the
    # legs; Twist and ShareBone helpers, some exactly at a mapped joint
    "character_creator": ("character_creator", both_sides([
        ("CC_Base_BoneRoot", None, None), ("CC_Base_Hip", "CC_Base_BoneRoot", "pelvis"),
        ("CC_Base_Pelvis", "CC_Base_Hip", "pelvis"), ("CC_Base_Waist", "CC_Base_Hip", "spine1"),
        ("CC_Base_Spine01", "CC_Base_Waist", "spine2"), ("CC_Base_Spine02", "CC_Base_Spine01", "spine3"),
        ("CC_Base_NeckTwist01", "CC_Base_Spine02", "neck"),
        ("CC_Base_NeckTwist02", "CC_Base_NeckTwist01", ("neck", "head", 0.5)),
        ("CC_Base_Head", "CC_Base_NeckTwist02", "head"),
        ("CC_Base_{L}_RibsTwist", "CC_Base_Spine02", ("spine3", "{side}_shoulder", 0.5)),
        ("CC_Base_{L}_Breast", "CC_Base_Spine02", ("spine3", "{side}_shoulder", 0.6)),
        ("CC_Base_{L}_Clavicle", "CC_Base_Spine02", "{side}_collar"),
        ("CC_Base_{L}_Upperarm", "CC_Base_{L}_Clavicle", "{side}_shoulder"),
        ("CC_Base_{L}_UpperarmTwist01", "CC_Base_{L}_Upperarm", "{side}_shoulder"),
        ("CC_Base_{L}_UpperarmTwist02", "CC_Base_{L}_UpperarmTwist01", ("{side}_shoulder", "{side}_elbow", 0.5)),
        ("CC_Base_{L}_Forearm", "CC_Base_{L}_Upperarm", "{side}_elbow"),
        ("CC_Base_{L}_ElbowShareBone", "CC_Base_{L}_Forearm", "{side}_elbow"),
        ("CC_Base_{L}_ForearmTwist01", "CC_Base_{L}_Forearm", "{side}_elbow"),
        ("CC_Base_{L}_ForearmTwist02", "CC_Base_{L}_ForearmTwist01", ("{side}_elbow", "{side}_wrist", 0.5)),
        ("CC_Base_{L}_Hand", "CC_Base_{L}_Forearm", "{side}_wrist"),
        ("CC_Base_{L}_Mid1", "CC_Base_{L}_Hand", "{side}_hand"),
        ("CC_Base_{L}_Thigh", "CC_Base_Pelvis", "{side}_hip"),
        ("CC_Base_{L}_ThighTwist01", "CC_Base_{L}_Thigh", "{side}_hip"),
        ("CC_Base_{L}_ThighTwist02", "CC_Base_{L}_ThighTwist01", ("{side}_hip", "{side}_knee", 0.5)),
        ("CC_Base_{L}_Calf", "CC_Base_{L}_Thigh", "{side}_knee"),
        ("CC_Base_{L}_KneeShareBone", "CC_Base_{L}_Calf", "{side}_knee"),
        ("CC_Base_{L}_CalfTwist01", "CC_Base_{L}_Calf", "{side}_knee"),
        ("CC_Base_{L}_CalfTwist02", "CC_Base_{L}_CalfTwist01", ("{side}_knee", "{side}_ankle", 0.5)),
        ("CC_Base_{L}_Foot", "CC_Base_{L}_Calf", "{side}_ankle"),
        ("CC_Base_{L}_ToeBase", "CC_Base_{L}_Foot", "{side}_foot"),
    ]), expect_both({"pelvis": "CC_Base_Hip", "spine1": "CC_Base_Waist", "spine2": "CC_Base_Spine01",
                     "spine3": "CC_Base_Spine02", "neck": "CC_Base_NeckTwist01", "head": "CC_Base_Head",
                     "{side}_hip": "CC_Base_{L}_Thigh", "{side}_knee": "CC_Base_{L}_Calf",
                     "{side}_ankle": "CC_Base_{L}_Foot", "{side}_foot": "CC_Base_{L}_ToeBase",
                     "{side}_collar": "CC_Base_{L}_Clavicle", "{side}_shoulder": "CC_Base_{L}_Upperarm",
                     "{side}_elbow": "CC_Base_{L}_Forearm", "{side}_wrist": "CC_Base_{L}_Hand",
                     "{side}_hand": "CC_Base_{L}_Mid1"})),
    # Daz Genesis 8: the Bend bones are the joints, their Twist bones follow in the chain
    "daz_genesis8": ("daz_genesis", both_sides([
        ("hip", None, "pelvis"), ("pelvis", "hip", "pelvis"),
        ("abdomenLower", "hip", ("pelvis", "spine1", 0.3)), ("abdomenUpper", "abdomenLower", "spine1"),
        ("chestLower", "abdomenUpper", "spine2"), ("chestUpper", "chestLower", "spine3"),
        ("neckLower", "chestUpper", "neck"), ("neckUpper", "neckLower", ("neck", "head", 0.5)),
        ("head", "neckUpper", "head"), ("{l}Pectoral", "chestUpper", ("spine3", "{side}_shoulder", 0.6)),
        ("{l}Collar", "chestUpper", "{side}_collar"), ("{l}ShldrBend", "{l}Collar", "{side}_shoulder"),
        ("{l}ShldrTwist", "{l}ShldrBend", ("{side}_shoulder", "{side}_elbow", 0.5)),
        ("{l}ForearmBend", "{l}ShldrTwist", "{side}_elbow"),
        ("{l}ForearmTwist", "{l}ForearmBend", ("{side}_elbow", "{side}_wrist", 0.5)),
        ("{l}Hand", "{l}ForearmTwist", "{side}_wrist"),
        ("{l}Carpal2", "{l}Hand", ("{side}_wrist", "{side}_hand", 0.3)), ("{l}Mid1", "{l}Carpal2", "{side}_hand"),
        ("{l}ThighBend", "pelvis", "{side}_hip"),
        ("{l}ThighTwist", "{l}ThighBend", ("{side}_hip", "{side}_knee", 0.4)),
        ("{l}Shin", "{l}ThighTwist", "{side}_knee"), ("{l}Foot", "{l}Shin", "{side}_ankle"),
        ("{l}Metatarsals", "{l}Foot", ("{side}_ankle", "{side}_foot", 0.5)),
        ("{l}Toe", "{l}Metatarsals", "{side}_foot"),
    ]), expect_both({"pelvis": "hip", "spine1": "abdomenUpper", "spine2": "chestLower", "spine3": "chestUpper",
                     "neck": "neckLower", "head": "head", "{side}_hip": "{l}ThighBend", "{side}_knee": "{l}Shin",
                     "{side}_ankle": "{l}Foot", "{side}_foot": "{l}Toe", "{side}_collar": "{l}Collar",
                     "{side}_shoulder": "{l}ShldrBend", "{side}_elbow": "{l}ForearmBend",
                     "{side}_wrist": "{l}Hand", "{side}_hand": "{l}Mid1"})),
}


def _rigify_chain(prefix, with_halves):
    """Rigify's bone names (metarig, or a generated rig's DEF-/ORG- chain with `.001` halves)."""
    p = prefix
    half = ((lambda name, parent, a, b: [(f"{p}{name}.001", f"{p}{parent}", (a, b, 0.5))]) if with_halves
            else (lambda *_: []))
    rig = [(f"{p}spine", "root" if p else None, "pelvis"), (f"{p}spine.001", f"{p}spine", "spine1"),
           (f"{p}spine.002", f"{p}spine.001", "spine2"), (f"{p}spine.003", f"{p}spine.002", "spine3"),
           (f"{p}spine.004", f"{p}spine.003", "neck"), (f"{p}spine.005", f"{p}spine.004", ("neck", "head", 0.5)),
           (f"{p}spine.006", f"{p}spine.005", "head")]
    for s, side in (("L", "left"), ("R", "right")):
        rig += [(f"{p}pelvis.{s}", f"{p}spine", "pelvis"), (f"{p}thigh.{s}", f"{p}spine", f"{side}_hip")]
        rig += half(f"thigh.{s}", f"thigh.{s}", f"{side}_hip", f"{side}_knee")
        rig += [(f"{p}shin.{s}", f"{p}thigh.{s}" + (".001" if with_halves else ""), f"{side}_knee")]
        rig += half(f"shin.{s}", f"shin.{s}", f"{side}_knee", f"{side}_ankle")
        rig += [(f"{p}foot.{s}", f"{p}shin.{s}" + (".001" if with_halves else ""), f"{side}_ankle"),
                (f"{p}toe.{s}", f"{p}foot.{s}", f"{side}_foot"),
                (f"{p}heel.02.{s}", f"{p}foot.{s}", (f"{side}_ankle", f"{side}_foot", 0.1)),
                (f"{p}breast.{s}", f"{p}spine.003", ("spine3", f"{side}_shoulder", 0.6)),
                (f"{p}shoulder.{s}", f"{p}spine.003", f"{side}_collar"),
                (f"{p}upper_arm.{s}", f"{p}shoulder.{s}", f"{side}_shoulder")]
        rig += half(f"upper_arm.{s}", f"upper_arm.{s}", f"{side}_shoulder", f"{side}_elbow")
        rig += [(f"{p}forearm.{s}", f"{p}upper_arm.{s}" + (".001" if with_halves else ""), f"{side}_elbow")]
        rig += half(f"forearm.{s}", f"forearm.{s}", f"{side}_elbow", f"{side}_wrist")
        rig += [(f"{p}hand.{s}", f"{p}forearm.{s}" + (".001" if with_halves else ""), f"{side}_wrist"),
                (f"{p}palm.02.{s}", f"{p}hand.{s}", (f"{side}_wrist", f"{side}_hand", 0.3)),
                (f"{p}f_middle.01.{s}", f"{p}palm.02.{s}", f"{side}_hand")]
    return rig


RIGIFY_EXPECT = expect_both({"pelvis": "spine", "spine1": "spine.001", "spine2": "spine.002",
                             "spine3": "spine.003", "neck": "spine.004", "head": "spine.006",
                             "{side}_hip": "thigh.{L}", "{side}_knee": "shin.{L}", "{side}_ankle": "foot.{L}",
                             "{side}_foot": "toe.{L}", "{side}_collar": "shoulder.{L}",
                             "{side}_shoulder": "upper_arm.{L}", "{side}_elbow": "forearm.{L}",
                             "{side}_wrist": "hand.{L}", "{side}_hand": "f_middle.01.{L}"})
# a generated rig: DEF (deforming, with twist halves), ORG (what Rigify reads) and a few of its
# controls and mechanism bones, all under `root`
RIGS["rigify_generated"] = ("rigify", [("root", None, None)] + _rigify_chain("DEF-", True)
                            + _rigify_chain("ORG-", False) + both_sides([
    ("torso", "root", "pelvis"), ("hips", "torso", "pelvis"), ("chest", "torso", "spine3"), ("neck", "chest", "neck"),
    ("head", "neck", "head"), ("shoulder.{L}", "chest", "{side}_collar"),
    ("upper_arm_fk.{L}", "shoulder.{L}", "{side}_shoulder"), ("forearm_fk.{L}", "upper_arm_fk.{L}", "{side}_elbow"),
    ("hand_fk.{L}", "forearm_fk.{L}", "{side}_wrist"), ("hand_ik.{L}", "root", "{side}_wrist"),
    ("thigh_fk.{L}", "hips", "{side}_hip"), ("foot_ik.{L}", "root", "{side}_ankle"),
    ("MCH-thigh_parent.{L}", "hips", "{side}_hip"), ("f_middle.01.{L}", "hand_fk.{L}", "{side}_hand"),
]), {k: "DEF-" + v for k, v in RIGIFY_EXPECT.items()})
RIGS["rigify_metarig"] = ("rigify_metarig", _rigify_chain("", False), RIGIFY_EXPECT)


HELPER_MARKS = ("twist", ".l.001", ".r.001", "corrective", "sharebone", "ik_", "_ik", "org-", "mch-", "_fk", "pelvis.",
                "j_sec_", "j_adj_", "metacarpal", "carpal", "metatarsal", "neckupper", "neck_02", "breast",
                "pectoral", "latissimus", "pec_", "palm", "heel", "eye")


def rig_skeleton(spec, rest):
    """(names, parents, heads (J, 3)) of a rig spec at SMPL rest joints `rest` (metres, Y up)."""
    names = [b for b, _, _ in spec]
    parents = [names.index(p) if p is not None else -1 for _, p, _ in spec]
    assert all(p < j for j, p in enumerate(parents)), "parents come first"
    heads = np.array([_where(w, rest) for _, _, w in spec])
    return names, parents, heads


def depth_first(spec):
    """The spec reordered as a BVH file lists joints (each joint's subtree right after it)."""
    order, stack = [], [0]
    while stack:
        k = stack.pop()
        order.append(k)
        stack.extend(reversed([c for c, (_, p, _) in enumerate(spec) if p == spec[k][0]]))
    assert len(order) == len(spec), "one root"
    return [spec[k] for k in order]


def _where(w, rest):
    if w is None:  # a root bone on the floor under the pelvis
        return np.array([rest[0, 0], rest[:, 1].min() - 0.05, rest[0, 2]])
    if isinstance(w, str):
        return rest[JOINT_INDEX[w]]
    a, b, f = w
    return (1 - f) * rest[JOINT_INDEX[a]] + f * rest[JOINT_INDEX[b]]


def _owner(w):
    """The SMPL joint whose rotation carries a rig bone (its segment's start), or None."""
    if w is None:
        return None
    return w if isinstance(w, str) else w[0]


def _is_ancestor(parents, a, b):
    while b >= 0:
        if b == a:
            return True
        b = parents[b]
    return False


@pytest.mark.parametrize("rig", sorted(RIGS))
def test_rig_conventions_map_each_smpl_joint_to_the_bone_at_it(rig, open_body):
    convention, spec, expect = RIGS[rig]
    names, parents, heads = rig_skeleton(spec, open_body.rest_joints(np.zeros(10)))
    m = build_mapping(names, rig)
    assert m.convention == convention
    got = {j: mapped_name(names, m, j) for j in JOINT_NAMES}
    assert got == {j: expect.get(j) for j in JOINT_NAMES}
    # twist, corrective, IK, mechanism, control and spring bones are never chosen (CC's neck
    # joint is named NeckTwist01; its NeckTwist02 follows)
    helpers = [n for n in names if n != "CC_Base_NeckTwist01" and any(
        k in n.lower() for k in HELPER_MARKS)]
    assert helpers
    assert not set(helpers) & {n for n in got.values() if n}
    # the chosen bones keep SMPL's tree: each joint's bone descends from its SMPL parent's
    for j in range(1, 24):
        s, p = m.source[j], m.source[PARENTS[j]]
        if s is not None and p is not None:
            assert _is_ancestor(parents, p, s), (JOINT_NAMES[j], names[s], names[p])
    # and each sits at its SMPL joint (in these rigs, built at SMPL's joints)
    rest = open_body.rest_joints(np.zeros(10))
    for j, s in enumerate(m.source):
        if s is not None:
            assert np.allclose(heads[s], rest[j]), JOINT_NAMES[j]


@pytest.mark.parametrize("rig", sorted(RIGS))
def test_rig_conventions_retarget_smpl_motion_back(rig, open_body, tmp_path, rng):
    """SMPL motion played on the rig (helpers carried by their segment), written as BVH and
    retargeted by name: every SMPL joint lands where the motion put it."""
    spec = depth_first(RIGS[rig][1])
    rest = open_body.rest_joints(np.zeros(10))
    names, parents, heads = rig_skeleton(spec, rest)
    frames = 12
    aa = rng.normal(scale=0.25, size=(frames, 24, 3))
    aa[:, 0] = rng.normal(scale=0.5, size=(frames, 3))
    trans = np.cumsum(rng.normal(scale=0.02, size=(frames, 3)), axis=0)
    fk = forward_kinematics(axis_angle_to_matrix(aa), rest, PARENTS, trans)
    glob = np.broadcast_to(np.eye(3), (frames, len(names), 3, 3)).copy()
    for k, (_, _, w) in enumerate(spec):
        if _owner(w) is not None:
            glob[:, k] = fk.rotations[:, JOINT_INDEX[_owner(w)]]
    local = glob.copy()
    for k, p in enumerate(parents):
        if p >= 0:
            local[:, k] = np.swapaxes(glob[:, p], -1, -2) @ glob[:, k]
    offsets = np.array([heads[k] - (heads[p] if p >= 0 else 0) for k, p in enumerate(parents)])
    # the root: at the pelvis when it is the pelvis' bone, else carried along with it
    root = fk.positions[:, 0] - rest[0] + heads[0] if spec[0][2] != "pelvis" else fk.positions[:, 0]
    sk = Skeleton(names=tuple(names), parents=tuple(parents), offsets=100 * offsets,
                  channels=((),) * len(names), end_site=(False,) * len(names))
    write_bvh(tmp_path / f"{rig}.bvh", sk, local, 100 * root, 1 / 30)
    motion = read_bvh(tmp_path / f"{rig}.bvh")
    r = retarget(motion, open_body)
    got = forward_kinematics(axis_angle_to_matrix(r.poses), open_body.rest_joints(r.betas), PARENTS, r.trans)
    error = np.linalg.norm(got.positions - fk.positions, axis=-1)
    mapped = np.array(r.rig.mapping.mapped)
    assert error[:, mapped].mean() < 0.02, error.mean(axis=0)
    assert r.mean_limb_error_deg < 2.0


def test_vrm_without_upper_chest_puts_the_shoulders_on_chest():
    names = ["hips", "spine", "chest", "neck", "head"] + [f"{s}{b}" for s in ("left", "right") for b in (
        "Shoulder", "UpperArm", "LowerArm", "Hand", "UpperLeg", "LowerLeg", "Foot", "Toes")]
    m = build_mapping(names)
    assert m.convention == "vrm"
    assert mapped_name(names, m, "spine3") == "chest" and mapped_name(names, m, "spine2") is None
    assert any(n.startswith("spine2:") for n in m.notes)


def test_unreal4_mannequin_keeps_spine_03_as_the_chest():
    m = build_mapping(UNREAL)
    assert [mapped_name(UNREAL, m, j) for j in ("spine1", "spine2", "spine3")] == ["spine_01", "spine_02", "spine_03"]


# Blender's own metarigs (rigify/metarigs/Basic/basic_human.py and human.py, Blender 5.0):
# bone heads in metres (Z up, facing -Y) and parents, as written there
METARIG_BASIC = [
    ("spine", None, (0.0, 0.0552, 1.0099)), ("spine.001", "spine", (0.0, 0.0172, 1.1573)),
    ("pelvis.L", "spine", (0.0, 0.0552, 1.0099)), ("pelvis.R", "spine", (-0.0, 0.0552, 1.0099)),
    ("thigh.L", "spine", (0.098, 0.0124, 1.072)), ("thigh.R", "spine", (-0.098, 0.0124, 1.072)),
    ("spine.002", "spine.001", (0.0, 0.0004, 1.2929)), ("shin.L", "thigh.L", (0.098, -0.0286, 0.5372)),
    ("shin.R", "thigh.R", (-0.098, -0.0286, 0.5372)), ("spine.003", "spine.002", (0.0, 0.0059, 1.4657)),
    ("foot.L", "shin.L", (0.098, 0.0162, 0.0852)), ("foot.R", "shin.R", (-0.098, 0.0162, 0.0852)),
    ("spine.004", "spine.003", (0.0, 0.0114, 1.6582)), ("shoulder.L", "spine.003", (0.0183, -0.0684, 1.6051)),
    ("shoulder.R", "spine.003", (-0.0183, -0.0684, 1.6051)), ("breast.L", "spine.003", (0.1184, 0.0485, 1.4596)),
    ("breast.R", "spine.003", (-0.1184, 0.0485, 1.4596)), ("toe.L", "foot.L", (0.098, -0.0934, 0.0167)),
    ("heel.02.L", "foot.L", (0.06, 0.0459, 0.0)), ("toe.R", "foot.R", (-0.098, -0.0934, 0.0167)),
    ("heel.02.R", "foot.R", (-0.06, 0.0459, 0.0)), ("spine.005", "spine.004", (0.0, -0.013, 1.7197)),
    ("upper_arm.L", "shoulder.L", (0.1953, 0.0267, 1.5846)), ("upper_arm.R", "shoulder.R", (-0.1953, 0.0267, 1.5846)),
    ("spine.006", "spine.005", (0.0, -0.0247, 1.7813)), ("forearm.L", "upper_arm.L", (0.4424, 0.0885, 1.4491)),
    ("forearm.R", "upper_arm.R", (-0.4424, 0.0885, 1.4491)), ("hand.L", "forearm.L", (0.6594, 0.0492, 1.3061)),
    ("hand.R", "forearm.R", (-0.6594, 0.0492, 1.3061)),
]
METARIG_HUMAN_HANDS = [  # what human.py adds around the middle finger (and the face root)
    ("face", "spine.006", (0.0, -0.0247, 1.7813)),
    ("palm.02.L", "hand.L", (0.697, 0.0389, 1.2877)), ("palm.02.R", "hand.R", (-0.697, 0.0389, 1.2877)),
    ("f_middle.01.L", "palm.02.L", (0.7518, 0.0277, 1.2487)), ("f_middle.01.R", "palm.02.R", (-0.7518, 0.0277, 1.2487)),
    ("f_middle.02.L", "f_middle.01.L", (0.7762, 0.0234, 1.2058)),
    ("f_middle.02.R", "f_middle.01.R", (-0.7762, 0.0233, 1.2058)),
]


@pytest.mark.parametrize("metarig", ["basic_human", "human"])
def test_blender_metarigs_map_and_fit(metarig, open_body):
    spec = METARIG_BASIC + (METARIG_HUMAN_HANDS if metarig == "human" else [])
    names = [b for b, _, _ in spec]
    parents = [names.index(p) if p else -1 for _, p, _ in spec]
    heads = np.array([h for _, _, h in spec])
    m = build_mapping(names, metarig)
    assert m.convention == "rigify_metarig"
    expect = dict(RIGIFY_EXPECT)
    if metarig == "basic_human":  # no fingers: the hands follow the wrists
        expect["left_hand"] = expect["right_hand"] = None
    assert {j: mapped_name(names, m, j) for j in JOINT_NAMES} == expect
    fit = fit_rig(names, parents, heads, open_body, label=metarig)
    assert fit.unit_name == "m"
    assert np.allclose(fit.to_smpl, [[1, 0, 0], [0, 0, 1], [0, -1, 0]])  # Z up, facing -Y: found
    # the proxy's joints sit on the metarig's bones
    for j, s in enumerate(m.source):
        if s is not None:
            assert np.allclose(fit.rig_joints[j], fit.unit * fit.to_smpl @ heads[s], atol=1e-6), JOINT_NAMES[j]


BARE_MIXAMO = [n.split(":")[1] for n in MIXAMO]


@pytest.mark.parametrize("prefix", ["Armature|", "rig:", "Armature|rig:", "Character1_", "mixamorig_",
                                    "mixamorig1:", "Hero "])
def test_namespace_prefixes_are_ignored(prefix):
    names = [prefix + n for n in BARE_MIXAMO] + [prefix + "Reference", "Armature"]
    m = build_mapping(names)
    bare = build_mapping(BARE_MIXAMO)
    assert m.convention.startswith("motionbuilder")
    assert [None if s is None else names[s][len(prefix):] for s in m.source] == \
        [None if s is None else BARE_MIXAMO[s] for s in bare.source]
    assert not m.notes


def test_a_prefix_must_cover_the_pelvis():
    """Limbs under a prefix beside a bare pelvis are not a namespaced rig."""
    names = [n.replace("left_", "wing_l_").replace("right_", "wing_r_") for n in JOINT_NAMES]
    with pytest.raises(SmplIkError, match="no joints found for left_hip"):
        build_mapping(names, "dragon.bvh")


def test_prefix_is_reported_and_exact_names_win():
    names = ["Character1_" + n for n in BARE_MIXAMO]
    assert "'character1_'" in build_mapping(names).convention
    # Unreal's IK bones (ik_hand_l) read as 'hand_l' behind an 'ik_' prefix: the real chain wins
    names, _, _ = rig_skeleton(RIGS["ue5_manny"][1], np.zeros((24, 3)))
    m = build_mapping(names)
    assert m.convention == "unreal" and mapped_name(names, m, "left_wrist") == "hand_l"


# The controls of a rig generated from Blender's human metarig (Rigify 5.0): the FK chain, the
# torso and the neck and head (what an animator keys), beside the DEF and ORG chains
RIGIFY_CONTROL_NAMES = ["torso", "hips", "chest", "spine_fk", "spine_fk.001", "spine_fk.002", "spine_fk.003",
                        "neck", "head"] + [f"{b}.{s}" for s in "LR" for b in (
                            "thigh_fk", "shin_fk", "foot_fk", "toe_fk", "shoulder", "upper_arm_fk", "forearm_fk",
                            "hand_fk", "f_middle.01", "thigh_ik", "foot_ik", "hand_ik", "upper_arm_parent")]


@pytest.mark.parametrize("prefix", ["", "hero:"])
def test_a_generated_rigify_rig_is_driven_through_its_fk_controls(prefix):
    names = [prefix + n for n in RIGIFY + [f"ORG-{b[4:]}" for b in RIGIFY] + RIGIFY_CONTROL_NAMES]
    m = build_mapping(names)
    bones = {j: mapped_name(names, m, j) for j in JOINT_NAMES}
    controls = rigify_controls(names, bones)
    assert set(controls) == set(JOINT_NAMES)
    want = {"pelvis": ("torso", "spine_fk"), "spine1": ("spine_fk.001",), "spine3": ("spine_fk.003",),
            "neck": ("neck",), "head": ("head",), "left_collar": ("shoulder.L",), "left_hip": ("thigh_fk.L",),
            "right_elbow": ("forearm_fk.R",), "right_wrist": ("hand_fk.R",), "left_hand": ("f_middle.01.L",),
            "right_foot": ("toe_fk.R",)}
    assert {j: controls[j] for j in want} == {j: tuple(prefix + c for c in cs) for j, cs in want.items()}
    # a joint mapped by hand to a bone that is not its DEF bone is driven through that bone
    assert "left_wrist" not in rigify_controls(names, dict(bones, left_wrist=prefix + "ORG-hand.L"))
    # DEF bones without the controls (a rig exported to a game engine), or a metarig: none
    assert rigify_controls(RIGIFY, {j: mapped_name(RIGIFY, build_mapping(RIGIFY), j) for j in JOINT_NAMES}) == {}
    meta = [n[4:] for n in RIGIFY] + RIGIFY_CONTROL_NAMES
    assert rigify_controls(meta, {j: mapped_name(meta, build_mapping(meta), j) for j in JOINT_NAMES}) == {}


def test_bones_between_mapped_joints_belong_to_the_joint_above(open_body):
    spec = _rigify_chain("DEF-", True) + [("DEF-upper_arm_twist_leaf.L", "DEF-upper_arm.L", "left_shoulder")]
    names, parents, _ = rig_skeleton([("root", None, None)] + spec, open_body.rest_joints(np.zeros(10)))
    m = build_mapping(names)
    got = {names[b]: JOINT_NAMES[j] for b, j in bones_between(parents, m.source)}
    halves = {f"DEF-{b}.{s}.001": f"{side}_{j}" for s, side in (("L", "left"), ("R", "right"))
              for b, j in (("thigh", "hip"), ("shin", "knee"), ("upper_arm", "shoulder"), ("forearm", "elbow"))}
    # the twist halves, the neck's upper bone and the palm (between the wrist and the middle
    # finger); never the root above the body or leaves beside the chain (heel, breast, pelvis,
    # the twist leaf)
    assert got == {**halves, "DEF-spine.005": "neck", "DEF-palm.02.L": "left_wrist", "DEF-palm.02.R": "right_wrist"}

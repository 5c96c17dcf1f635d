"""Name-based mapping onto SMPL's joints, JSON overrides and non-humanoid skeletons."""
import json

import pytest

from models.core.errors import SmplIkError
from models.motion.mapping import build_mapping, load_overrides
from models.core.skeleton import JOINT_INDEX

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

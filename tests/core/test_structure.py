"""Mapping from structure: a humanoid's joints found from its tree and geometry, whatever its
bones are called; names only settle what the geometry cannot; non-humanoids refused."""
from pathlib import Path

import numpy as np
import pytest

from models.core.errors import SmplIkError
from models.core.skeleton import JOINT_NAMES
from models.motion.bvh import read_bvh
from models.motion.mapping import build_mapping
from models.motion.skeleton_shape import SkeletonShape
from models.motion.structure import find_structure

from test_mapping import RIGS, rig_skeleton

MOCAP = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mocap"
SETS = ("cmu_train", "cmu_varied", "aclstm", "m21")


def scrambled(names, rng):
    """Names j0..jN in a random order: nothing a name table could read."""
    order = rng.permutation(len(names))
    return [f"j{order[i]}" for i in range(len(names))]


def by_name(names, mapping):
    return {j: (None if s is None else names[s]) for j, s in zip(JOINT_NAMES, mapping.source)}


def rig_shape(name, open_body):
    _, spec, expect = RIGS[name]
    names, parents, heads = rig_skeleton(spec, open_body.rest_joints(np.zeros(10)))
    deform = [n.startswith("DEF-") for n in names] if name == "rigify_generated" else None
    return names, SkeletonShape.of_rig(parents, heads, deform), expect


@pytest.mark.parametrize("rig", sorted(RIGS))
def test_rigs_map_from_structure_as_by_their_names(rig, open_body, rng):
    names, shape, expect = rig_shape(rig, open_body)
    named = build_mapping(names, rig, shape=shape)
    assert by_name(names, named) == expect
    # every joint found by both readings, with full confidence in the sides
    assert all(r.how == "structure and name" for r in named.report if r.source), named.report_lines()
    other = scrambled(names, rng)
    blind = build_mapping(other, rig, shape=shape)
    assert blind.source == named.source
    assert {r.how for r in blind.report if r.source} == {"structure"}


def _shared_files():
    if not MOCAP.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{MOCAP} is not here (../shared mocap data)"))]
    out = []
    for name in SETS:
        files = sorted((MOCAP / name).glob("*.bvh"))
        out += [pytest.param(f, id=f"{name}/{f.name}") for f in files[:2] + files[-1:]]
    return out


@pytest.mark.parametrize("path", _shared_files())
def test_shared_skeletons_map_the_same_with_scrambled_names(path, rng):
    motion = read_bvh(path)
    shape = SkeletonShape.of_motion(motion)
    names = list(motion.skeleton.names)
    named = build_mapping(names, str(path), shape=shape)
    blind = build_mapping(scrambled(names, rng), str(path), shape=shape)
    assert blind.source == named.source
    assert blind.fingers == named.fingers
    # where the files' own names say which joint is which, the shape found the same one
    agree = {r.joint for r in named.report if r.how == "structure and name"}
    limbs = {f"{side}_{part}" for side in ("left", "right")
             for part in ("hip", "knee", "ankle", "shoulder", "elbow", "wrist", "collar")}
    assert limbs | {"pelvis", "neck", "head"} <= agree, named.report_lines()


def _mirror_names(names):
    swap = {"left": "right", "right": "left", "Left": "Right", "Right": "Left", "_L_": "_R_", "_R_": "_L_"}
    out = []
    for n in names:
        for a, b in swap.items():
            if a in n:
                n = n.replace(a, b)
                break
        else:
            if n[:1] in "lr" and len(n) > 1 and n[1].isupper():   # Daz-style lThigh / rThigh
                n = {"l": "r", "r": "l"}[n[0]] + n[1:]
        out.append(n)
    return out


def test_a_mirrored_skeleton_maps_by_geometry_and_says_so(open_body):
    names, shape, expect = rig_shape("vrm_humanoid", open_body)
    lying = _mirror_names(names)
    assert lying != names
    m = build_mapping(lying, "mirrored", shape=shape)
    got = by_name(lying, m)
    # the bone the names call rightUpperLeg is at the body's left hip: it maps to left_hip
    assert got["left_hip"] == "rightUpperLeg" and got["right_shoulder"] == "leftUpperArm"
    left_hip = next(r for r in m.report if r.joint == "left_hip")
    assert left_hip.how == "structure" and "other side" in left_hip.note


def test_names_settle_a_side_the_pose_cannot_show(open_body):
    """A rig with no feet, knees or toes to face by (a straight stick figure): the names decide,
    and the report says so."""
    names, parents, heads = ["hips", "spine", "chest", "neck", "head"], [-1, 0, 1, 2, 3], []
    up = np.array([0, 1.0, 0])
    heads = [np.zeros(3), 0.1 * up, 0.3 * up, 0.5 * up, 0.6 * up]
    for side, x in (("left", 1), ("right", -1)):
        hip = len(names)
        names += [f"{side}UpperLeg", f"{side}LowerLeg", f"{side}Foot", f"{side}Toes"]
        parents += [0, hip, hip + 1, hip + 2]
        heads += [np.array([0.1 * x, 0, 0]), np.array([0.1 * x, -0.4, 0]), np.array([0.1 * x, -0.85, 0]),
                  np.array([0.1 * x, -0.95, 0])]   # toes straight down: no forward
        arm = len(names)
        names += [f"{side}Shoulder", f"{side}UpperArm", f"{side}LowerArm", f"{side}Hand"]
        parents += [2, arm, arm + 1, arm + 2]
        heads += [np.array([0.05 * x, 0.3, 0]), np.array([0.17 * x, 0.3, 0]), np.array([0.45 * x, 0.3, 0]),
                  np.array([0.7 * x, 0.3, 0])]
    shape = SkeletonShape.of_rig(parents, np.array(heads))
    assert find_structure(shape).sides["legs"][0] < 0.3
    m = build_mapping(names, "stick", shape=shape)
    got = by_name(names, m)
    assert got["left_knee"] == "leftLowerLeg" and got["right_elbow"] == "rightLowerArm"
    assert next(r for r in m.report if r.joint == "left_knee").how == "name"


def test_twist_bones_helpers_and_end_sites_are_passed_over(open_body):
    """Character Creator's rig (twist and share bones at and along the limbs) with an end site
    after every leaf: the joints are the bones at SMPL's joints, never a helper or an end."""
    names, shape, expect = rig_shape("character_creator", open_body)
    parents, heads = list(shape.parents), shape.poses[0]
    leaves = [j for j in range(len(names)) if j not in parents]
    ends = [heads[j] + np.array([0.0, 0.02, 0.01]) for j in leaves]
    shape = SkeletonShape(parents=tuple(parents + leaves), poses=np.concatenate([heads, ends])[None],
                          end_site=(False,) * len(names) + (True,) * len(leaves))
    m = build_mapping(names + [f"{names[j]}_End" for j in leaves], "cc", shape=shape)
    assert by_name(names + [f"{names[j]}_End" for j in leaves], m) == expect


def test_a_hand_alone_is_refused_with_the_reason():
    rng = np.random.default_rng(3)
    names, parents, heads = ["wrist"], [-1], [np.zeros(3)]
    for k in range(5):
        direction = np.array([np.cos(0.3 * k - 0.6), np.sin(0.3 * k - 0.6), 0.0])
        for seg in range(3):
            parents.append(0 if seg == 0 else len(names) - 1)
            heads.append(heads[parents[-1]] + direction * (0.04 + 0.01 * rng.random()))
            names.append(f"j{len(names)}")
    with pytest.raises(SmplIkError, match="no legs found.*hand-only"):
        build_mapping(names, "hand.bvh", shape=SkeletonShape.of_rig(parents, np.array(heads)))


def test_a_four_legged_skeleton_is_refused_with_the_reason():
    """A dog: hips and shoulders joined by a level spine, four legs down, a head and a tail."""
    names, parents, heads = ["pelvis"], [-1], [np.array([0.0, 0.6, 0.0])]

    def chain(parent, points):
        for p in points:
            parents.append(parent)
            heads.append(np.array(p, float))
            names.append(f"j{len(names)}")
            parent = len(names) - 1
        return parent

    chest = chain(0, [(0, 0.62, 0.25), (0, 0.63, 0.5)])
    chain(chest, [(0, 0.75, 0.62), (0, 0.8, 0.75)])             # neck, head
    chain(0, [(0, 0.62, -0.15), (0, 0.58, -0.3)])               # tail
    for x in (0.1, -0.1):
        chain(0, [(x, 0.55, 0), (x, 0.35, 0.05), (x, 0.12, -0.03), (x, 0.02, 0.05)])
        chain(chest, [(x / 2, 0.6, 0.5), (x, 0.55, 0.5), (x, 0.3, 0.5), (x, 0.08, 0.5), (x, 0.02, 0.56)])
    with pytest.raises(SmplIkError, match="four-legged"):
        build_mapping(names, "dog.bvh", shape=SkeletonShape.of_rig(parents, np.array(heads)))


def test_an_explicit_mapping_still_wins(open_body, tmp_path):
    names, shape, expect = rig_shape("vroid", open_body)
    m = build_mapping(names, "vroid", overrides={"head": "J_Adj_L_FaceEye"}, overrides_source="mine.json",
                      shape=shape)
    assert by_name(names, m)["head"] == "J_Adj_L_FaceEye"
    assert next(r for r in m.report if r.joint == "head").how == "mapping"

"""Map a humanoid skeleton's joints onto SMPL's 24, from names or from a JSON file.

Conventions recognised by name: CMU ASF, MotionBuilder / Mixamo / HumanIK, 3ds Max style,
Blender's Rigify metarigs (human, basic human) and generated Rigify rigs (their `DEF-` bones),
Unreal Engine 4 and 5 (Mannequin, Manny / Quinn), VRM (VRoid's `J_Bip_` bones and VRM's
humanoid bone names), Character Creator / iClone (`CC_Base_`), Daz Genesis 3 / 8, MakeHuman /
anny, and SMPL's own names. Names may carry a namespace: anything up to a `:` or `|`
(`mixamorig:Hips`, `Armature|rig:Hips`) is ignored, and so is a prefix shared by the rig
before a known name (`Character1_Hips`, `mixamorig_Hips`).

Each source joint chosen for an SMPL joint is the one *located at* that joint (its OFFSET,
or a bone's head, reaches it), so its rotation turns the segment that follows. Twist, roll,
corrective and IK helper bones (`DEF-upper_arm.L.001`, `upperarm_twist_01_l`,
`CC_Base_L_UpperarmTwist01`, `lShldrTwist`, `ik_hand_l`) are never chosen: they follow.
"""
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import SmplIkError
from ..core.skeleton import JOINT_INDEX, JOINT_NAMES
from .structure import SIDE_SURE, find_structure

# SMPL joints a retarget cannot do without; the others are explained when absent
# (interpolated on the spine, following their parent at the hands, feet and head).
REQUIRED = ("pelvis", "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
            "right_ankle", "left_shoulder", "right_shoulder", "left_elbow", "right_elbow",
            "left_wrist", "right_wrist")


def _sided(table):
    """Expand '{side}_x': ['{L}name'] entries into left/right entries."""
    out = {}
    for joint, names in table.items():
        if "{side}" not in joint:
            out[joint] = names
            continue
        for side, keys in (("left", {"L": "L", "l": "l", "Left": "Left", "left": "left"}),
                           ("right", {"L": "R", "l": "r", "Left": "Right", "left": "right"})):
            out[joint.format(side=side)] = [n.format(**keys) for n in names]
    return out


CONVENTIONS = {
    "smpl": _sided({
        "pelvis": ["pelvis"], "spine1": ["spine1"], "spine2": ["spine2"], "spine3": ["spine3"],
        "neck": ["neck"], "head": ["head"],
        "{side}_hip": ["{left}_hip"], "{side}_knee": ["{left}_knee"], "{side}_ankle": ["{left}_ankle"],
        "{side}_foot": ["{left}_foot"], "{side}_collar": ["{left}_collar"],
        "{side}_shoulder": ["{left}_shoulder"], "{side}_elbow": ["{left}_elbow"],
        "{side}_wrist": ["{left}_wrist"], "{side}_hand": ["{left}_hand"],
    }),
    "smpl_original": _sided({
        "pelvis": ["pelvis"], "spine1": ["spine1"], "spine2": ["spine2"], "spine3": ["spine3"],
        "neck": ["neck"], "head": ["head"],
        "{side}_hip": ["{L}_hip"], "{side}_knee": ["{L}_knee"], "{side}_ankle": ["{L}_ankle"],
        "{side}_foot": ["{L}_foot"], "{side}_collar": ["{L}_collar"],
        "{side}_shoulder": ["{L}_shoulder"], "{side}_elbow": ["{L}_elbow"],
        "{side}_wrist": ["{L}_wrist"], "{side}_hand": ["{L}_hand"],
    }),
    "cmu": _sided({
        "pelvis": ["root", "hips"], "spine1": ["upperback"], "spine2": ["thorax"],
        "neck": ["upperneck"], "head": ["head"],
        "{side}_hip": ["{l}femur"], "{side}_knee": ["{l}tibia"], "{side}_ankle": ["{l}foot"],
        "{side}_foot": ["{l}toes"], "{side}_collar": ["{l}clavicle"],
        "{side}_shoulder": ["{l}humerus"], "{side}_elbow": ["{l}radius"],
        "{side}_wrist": ["{l}wrist"], "{side}_hand": ["{l}fingers"],
    }),
    "motionbuilder": _sided({
        "pelvis": ["hips"], "spine1": ["spine"], "spine2": ["spine1"], "spine3": ["spine2"],
        "neck": ["neck", "neck1"], "head": ["head"],
        "{side}_hip": ["{left}upleg"], "{side}_knee": ["{left}leg"], "{side}_ankle": ["{left}foot"],
        "{side}_foot": ["{left}toebase"], "{side}_collar": ["{left}shoulder"],
        "{side}_shoulder": ["{left}arm"], "{side}_elbow": ["{left}forearm"],
        "{side}_wrist": ["{left}hand"], "{side}_hand": ["{left}handmiddle1"],
    }),
    "3dsmax": _sided({
        "pelvis": ["hips", "pelvis"], "spine1": ["chest", "spine"], "spine2": ["chest2", "spine1"],
        "spine3": ["chest3", "spine2"], "neck": ["neck"], "head": ["head"],
        "{side}_hip": ["{left}hip"], "{side}_knee": ["{left}knee"], "{side}_ankle": ["{left}ankle"],
        "{side}_foot": ["{left}toe"], "{side}_collar": ["{left}collar", "{left}clavicle"],
        "{side}_shoulder": ["{left}shoulder"], "{side}_elbow": ["{left}elbow"],
        "{side}_wrist": ["{left}wrist"], "{side}_hand": ["{left}hand"],
    }),
    "rigify": _sided({
        "pelvis": ["def-spine"], "spine1": ["def-spine.001"], "spine2": ["def-spine.002"],
        "spine3": ["def-spine.003"], "neck": ["def-spine.004"], "head": ["def-spine.006"],
        "{side}_hip": ["def-thigh.{L}"], "{side}_knee": ["def-shin.{L}"],
        "{side}_ankle": ["def-foot.{L}"], "{side}_foot": ["def-toe.{L}"],
        "{side}_collar": ["def-shoulder.{L}"], "{side}_shoulder": ["def-upper_arm.{L}"],
        "{side}_elbow": ["def-forearm.{L}"], "{side}_wrist": ["def-hand.{L}"],
        "{side}_hand": ["def-f_middle.01.{L}"],
    }),
    "rigify_metarig": _sided({
        # Blender's human and basic human metarigs: `spine` starts at the hips, `spine.003`
        # carries the shoulders, `spine.004` starts the neck, `spine.006` is the head
        "pelvis": ["spine"], "spine1": ["spine.001"], "spine2": ["spine.002"],
        "spine3": ["spine.003"], "neck": ["spine.004"], "head": ["spine.006"],
        "{side}_hip": ["thigh.{L}"], "{side}_knee": ["shin.{L}"], "{side}_ankle": ["foot.{L}"],
        "{side}_foot": ["toe.{L}"], "{side}_collar": ["shoulder.{L}"],
        "{side}_shoulder": ["upper_arm.{L}"], "{side}_elbow": ["forearm.{L}"],
        "{side}_wrist": ["hand.{L}"], "{side}_hand": ["f_middle.01.{L}"],
    }),
    "unreal": _sided({
        # UE5 Manny / Quinn carry the clavicles on spine_05, UE4's Mannequin on spine_03:
        # spine3 is taken first, so spine2 gets spine_03 only where spine_05 exists
        "pelvis": ["pelvis"], "spine3": ["spine_05", "spine_03"], "spine2": ["spine_03", "spine_02"],
        "spine1": ["spine_01"], "neck": ["neck_01"], "head": ["head"],
        "{side}_hip": ["thigh_{l}"], "{side}_knee": ["calf_{l}"], "{side}_ankle": ["foot_{l}"],
        "{side}_foot": ["ball_{l}"], "{side}_collar": ["clavicle_{l}"],
        "{side}_shoulder": ["upperarm_{l}"], "{side}_elbow": ["lowerarm_{l}"],
        "{side}_wrist": ["hand_{l}"], "{side}_hand": ["middle_01_{l}"],
    }),
    "vroid": _sided({
        "pelvis": ["j_bip_c_hips"], "spine1": ["j_bip_c_spine"], "spine3": ["j_bip_c_upperchest", "j_bip_c_chest"],
        "spine2": ["j_bip_c_chest"], "neck": ["j_bip_c_neck"], "head": ["j_bip_c_head"],
        "{side}_hip": ["j_bip_{L}_upperleg"], "{side}_knee": ["j_bip_{L}_lowerleg"],
        "{side}_ankle": ["j_bip_{L}_foot"], "{side}_foot": ["j_bip_{L}_toebase"],
        "{side}_collar": ["j_bip_{L}_shoulder"], "{side}_shoulder": ["j_bip_{L}_upperarm"],
        "{side}_elbow": ["j_bip_{L}_lowerarm"], "{side}_wrist": ["j_bip_{L}_hand"],
        "{side}_hand": ["j_bip_{L}_middle1"],
    }),
    "vrm": _sided({
        # VRM's humanoid bone names; upperChest is optional there, and without it `chest`
        # carries the shoulders (spine3) and spine2 is placed along the spine
        "pelvis": ["hips"], "spine1": ["spine"], "spine3": ["upperchest", "chest"], "spine2": ["chest"],
        "neck": ["neck"], "head": ["head"],
        "{side}_hip": ["{left}upperleg"], "{side}_knee": ["{left}lowerleg"],
        "{side}_ankle": ["{left}foot"], "{side}_foot": ["{left}toes"],
        "{side}_collar": ["{left}shoulder"], "{side}_shoulder": ["{left}upperarm"],
        "{side}_elbow": ["{left}lowerarm"], "{side}_wrist": ["{left}hand"],
        "{side}_hand": ["{left}middleproximal"],
    }),
    "character_creator": _sided({
        # CC_Base_Hip turns legs and spine together (CC_Base_Pelvis, at the same place,
        # only the legs); the twist and ShareBone helpers follow
        "pelvis": ["cc_base_hip"], "spine1": ["cc_base_waist"], "spine2": ["cc_base_spine01"],
        "spine3": ["cc_base_spine02"], "neck": ["cc_base_necktwist01"], "head": ["cc_base_head"],
        "{side}_hip": ["cc_base_{L}_thigh"], "{side}_knee": ["cc_base_{L}_calf"],
        "{side}_ankle": ["cc_base_{L}_foot"], "{side}_foot": ["cc_base_{L}_toebase"],
        "{side}_collar": ["cc_base_{L}_clavicle"], "{side}_shoulder": ["cc_base_{L}_upperarm"],
        "{side}_elbow": ["cc_base_{L}_forearm"], "{side}_wrist": ["cc_base_{L}_hand"],
        "{side}_hand": ["cc_base_{L}_mid1"],
    }),
    "daz_genesis": _sided({
        # Genesis 3 / 8: `hip` turns legs and spine (`pelvis` only the legs); the Bend bones
        # are the joints, their Twist bones follow; abdomenLower sits just above the hip and
        # follows, abdomenUpper is at SMPL's spine1, chestUpper carries the collars
        "pelvis": ["hip"], "spine1": ["abdomenupper"], "spine2": ["chestlower"],
        "spine3": ["chestupper"], "neck": ["necklower"], "head": ["head"],
        "{side}_hip": ["{l}thighbend"], "{side}_knee": ["{l}shin"], "{side}_ankle": ["{l}foot"],
        "{side}_foot": ["{l}toe"], "{side}_collar": ["{l}collar"],
        "{side}_shoulder": ["{l}shldrbend"], "{side}_elbow": ["{l}forearmbend"],
        "{side}_wrist": ["{l}hand"], "{side}_hand": ["{l}mid1"],
    }),
    "daz_poser": _sided({
        # Poser and older Daz figures, and the "Daz-friendly" BVH of the CMU database
        "pelvis": ["hip"], "spine2": ["abdomen"], "spine3": ["chest"], "neck": ["neck"], "head": ["head"],
        "{side}_hip": ["{l}thigh"], "{side}_knee": ["{l}shin"], "{side}_ankle": ["{l}foot"],
        "{side}_collar": ["{l}collar"], "{side}_shoulder": ["{l}shldr"], "{side}_elbow": ["{l}forearm"],
        "{side}_wrist": ["{l}hand"], "{side}_hand": ["{l}mid1"],
    }),
    "makehuman": _sided({
        "pelvis": ["root"], "spine1": ["spine03"], "spine2": ["spine02"], "spine3": ["spine01"],
        "neck": ["neck01"], "head": ["head"],
        "{side}_hip": ["upperleg01.{L}"], "{side}_knee": ["lowerleg01.{L}"],
        "{side}_ankle": ["foot.{L}"], "{side}_foot": ["toe3-1.{L}"],
        "{side}_collar": ["clavicle.{L}"], "{side}_shoulder": ["upperarm01.{L}"],
        "{side}_elbow": ["lowerarm01.{L}"], "{side}_wrist": ["wrist.{L}"],
        "{side}_hand": ["finger3-1.{L}"],
    }),
}


# Generated Rigify rigs: Rigify's own constraints move the DEF bones (twist halves included)
# from its controls, so a drive turns the controls, never the DEF bones. SMPL joint -> the
# controls that carry it (the FK controls; `torso`, the whole body's control, goes with the
# pelvis). The spine's FK controls hang downward from the middle: `spine_fk` turns the hips'
# segment, `spine_fk.001` the one above it, as the pelvis and spine1 do.
RIGIFY_CONTROLS = _sided({
    "pelvis": ["torso", "spine_fk"], "spine1": ["spine_fk.001"], "spine2": ["spine_fk.002"],
    "spine3": ["spine_fk.003"], "neck": ["neck"], "head": ["head"],
    "{side}_hip": ["thigh_fk.{L}"], "{side}_knee": ["shin_fk.{L}"], "{side}_ankle": ["foot_fk.{L}"],
    "{side}_foot": ["toe_fk.{L}"], "{side}_collar": ["shoulder.{L}"],
    "{side}_shoulder": ["upper_arm_fk.{L}"], "{side}_elbow": ["forearm_fk.{L}"],
    "{side}_wrist": ["hand_fk.{L}"], "{side}_hand": ["f_middle.01.{L}"],
})


def rigify_controls(names, bones):
    """The controls to drive on a generated Rigify rig: {smpl_joint: (control names)}.

    names: the rig's bone names; bones: {smpl_joint: the bone mapped to it, or None}. A joint
    is driven through its controls when its bone is Rigify's DEF bone for it (`DEF-upper_arm.L`,
    any namespace before `DEF-` carried over to the controls) and those controls exist; the
    rig counts as a generated Rigify rig only when the pelvis is, else the answer is {}.
    """
    present = set(names)
    found = {}
    for joint, controls in RIGIFY_CONTROLS.items():
        bone = bones.get(joint)
        deform = "DEF-" + CONVENTIONS["rigify_metarig"][joint][0]
        if not bone or not bone.endswith(deform):
            continue
        prefix = bone[:-len(deform)]
        named = tuple(prefix + c for c in controls)
        if all(c in present for c in named):
            found[joint] = named
    return found if "pelvis" in found else {}


def normalise(name):
    """Lower-case, without a namespace (everything up to the last ':' or '|') or surrounding
    spaces: 'mixamorig:Hips', 'Armature|rig:Hips' -> 'hips'."""
    return re.sub(r"^.*[:|]", "", name.strip()).strip().lower()


KNOWN_NAMES = frozenset(c.lower() for table in CONVENTIONS.values() for names in table.values() for c in names)
PREFIX_ENDS = "_- "   # what a rig-wide name prefix ends with ('Character1_', 'mixamorig_')


def _prefixes(normalised):
    """'' and every prefix ending in one of PREFIX_ENDS that stands before a known name."""
    found = set()
    for n in normalised:
        for k in range(1, len(n)):
            if n[k - 1] in PREFIX_ENDS and n[k:] in KNOWN_NAMES:
                found.add(n[:k])
    return [""] + sorted(found, key=lambda p: (len(p), p))


def _match(table, index):
    """{smpl_joint: source index} for one convention; a source joint serves one SMPL joint,
    taken in the table's order (so a table can prefer a name for one joint over another)."""
    found, used = {}, set()
    for joint, candidates in table.items():
        for c in candidates:
            i = index.get(c.lower())
            if i is not None and i not in used:
                found[joint] = i
                used.add(i)
                break
    return found


@dataclass(frozen=True)
class JointReport:
    """How one SMPL joint was mapped: `how` is 'structure and name' (both agree),
    'structure' (found from the skeleton's shape; `note` says where the names disagree),
    'name' (the names settled what the shape could not), 'mapping' (an explicit mapping) or
    'none'; confidence 0..1."""

    joint: str
    source: str
    how: str
    confidence: float
    note: str = ""


@dataclass(frozen=True)
class JointMapping:
    """source[j]: index of the source joint at SMPL joint j, or None (explained in `notes`).
    report: one JointReport per SMPL joint (when the skeleton's shape was searched); fingers:
    {'left'/'right': {finger: (source indices from the knuckle out)}}."""

    source: tuple
    convention: str
    notes: tuple   # one line per unmapped SMPL joint, saying how it is handled
    report: tuple = ()
    fingers: dict = field(default_factory=dict)

    @property
    def mapped(self):
        return tuple(s is not None for s in self.source)

    def report_lines(self):
        """One line per SMPL joint: joint, source joint, how found, confidence."""
        return [f"{r.joint:>15} <- {r.source or '-':<28} {r.how:<19} {r.confidence:4.2f}"
                + (f"  ({r.note})" if r.note else "") for r in self.report]


def _explain(joint):
    if joint in ("spine1", "spine2", "spine3", "neck"):
        return f"{joint}: not in the source; placed along the spine between its neighbours"
    if joint == "head":
        return "head: not in the source; follows the neck"
    return f"{joint}: not in the source; follows its parent joint"


def auto_mapping(names):
    """Best name-based mapping over the known conventions and name prefixes: the most SMPL
    joints found wins; on a tie, no prefix before a prefix and the convention listed first.
    A prefix counts only where the pelvis carries it too ('wing_l_hip' beside a bare
    'pelvis' is a wing, not a namespaced hip).

    Returns ({smpl_joint: index into names}, convention name); the name says the prefix
    when one was stripped ("motionbuilder, prefix 'character1_'").
    """
    normalised = [normalise(n) for n in names]
    best, best_name, best_count = {}, None, -1
    for prefix in _prefixes(normalised):
        index = {}
        for i, n in enumerate(normalised):
            if n.startswith(prefix):
                index.setdefault(n[len(prefix):], i)
        for conv, table in CONVENTIONS.items():
            found = _match(table, index)
            if prefix and "pelvis" not in found:
                continue   # a namespace covers the whole body, its root included
            if len(found) > best_count:
                best, best_count = found, len(found)
                best_name = f"{conv}, prefix {prefix!r}" if prefix else conv
    return best, best_name


CLI_HINT = "Write a JSON mapping {\"smpl_joint\": \"source joint\"} and pass it with --mapping"


def build_mapping(names, path="", overrides=None, overrides_source="", hint=CLI_HINT, shape=None,
                  names_first=False):
    """Map source joint `names` to SMPL's joints.

    shape: the skeleton's structure.SkeletonShape. With it the joints are found from the tree
    and its geometry, names serving only where the geometry cannot tell left from right (and
    as a second reading in the report); without it, from the names alone.
    names_first: read the shape only when the names do not map every required joint (motion
    files, until the networks are trained on structure-mapped data: docs/training_log.md,
    "Mapping from structure").
    overrides: {smpl_joint: source_name or None} applied over the automatic mapping.
    Raises SmplIkError saying why a skeleton is no humanoid, or listing the required SMPL
    joints that stay unmapped, ending with `hint` (how to supply a mapping where the caller is).
    """
    named, convention = auto_mapping(names)
    found, how, confidence, notes, fingers = dict(named), {}, {}, {}, {}
    if names_first and all(j in named for j in REQUIRED):
        shape = None
    if shape is not None:
        try:
            structure = find_structure(shape, path or "the skeleton")
        except SmplIkError as exc:
            if not overrides and any(j not in named for j in REQUIRED):
                raise SmplIkError(f"{exc}. {hint}") from None
            how = {j: "name" for j in named}
            notes = {j: f"the skeleton's shape was not read: {str(exc).split(': ', 2)[-1]}" for j in named}
        else:
            found, how, confidence, notes, fingers = _with_names(structure, named, names)
            convention = f"structure; names: {convention}" if named else "structure"
    if overrides:
        where = overrides_source or "mapping"
        unknown = [k for k in overrides if k not in JOINT_INDEX]
        if unknown:
            raise SmplIkError(f"{where}: unknown SMPL joints {', '.join(map(repr, unknown))}; "
                              f"valid: {', '.join(JOINT_NAMES)}")
        by_name = {n: i for i, n in enumerate(names)}
        missing = [v for v in overrides.values() if v is not None and v not in by_name]
        if missing:
            raise SmplIkError(f"{where}: source joints not in {path or 'the skeleton'}: "
                              f"{', '.join(map(repr, missing))}")
        for k, v in overrides.items():
            if v is None:
                found.pop(k, None)
            else:
                found[k] = by_name[v]
            how[k], confidence[k], notes[k] = "mapping", 1.0, ""
        convention = (f"{convention} + "
                      + (Path(overrides_source).name if overrides_source.endswith('.json')
                         else overrides_source or 'overrides'))
    absent = [j for j in REQUIRED if j not in found]
    if absent:
        sample = ", ".join(list(names)[:12]) + (", ..." if len(names) > 12 else "")
        raise SmplIkError(
            f"{path}: not a humanoid skeleton this tool can map: no joints found for "
            f"{', '.join(absent)} (source joints: {sample}). {hint}")
    source = tuple(found.get(j) for j in JOINT_NAMES)
    explained = tuple(_explain(j) for j, s in zip(JOINT_NAMES, source) if s is None)
    report = ()
    if shape is not None:
        report = tuple(JointReport(joint=j, source="" if s is None else names[s],
                                   how=how.get(j, "none") if s is not None else "none",
                                   confidence=float(confidence.get(j, 1.0 if s is not None else 0.0)),
                                   note=notes.get(j, ""))
                       for j, s in zip(JOINT_NAMES, source))
    return JointMapping(source=source, convention=convention, notes=explained, report=report, fingers=fingers)


def _with_names(structure, named, names):
    """The structure's joints, with names settling a side the geometry could not: (found, how,
    confidence, notes, fingers)."""
    found = dict(structure.joints)
    fingers = dict(structure.fingers)
    how = {j: "structure" for j in found}
    confidence = dict(structure.confidence)
    notes = {}
    for limbs, sided in (("legs", ("hip", "knee", "ankle", "foot")),
                         ("arms", ("collar", "shoulder", "elbow", "wrist", "hand"))):
        sure, left, right = structure.sides[limbs]
        by_name_left = {named.get(f"left_{p}") for p in sided} - {None}
        by_name_right = {named.get(f"right_{p}") for p in sided} - {None}
        swapped = bool(by_name_left) and by_name_left <= set(right) and by_name_right <= set(left)
        if sure < SIDE_SURE and swapped:   # the shape cannot tell: the names can
            for p in sided:
                a, b = found.pop(f"left_{p}", None), found.pop(f"right_{p}", None)
                for j, v in ((f"left_{p}", b), (f"right_{p}", a)):
                    if v is not None:
                        found[j], how[j] = v, "name"
                        notes[j] = "left and right from the names: the pose does not show which way the body faces"
            if limbs == "arms":
                fingers = {"left": structure.fingers.get("right", {}), "right": structure.fingers.get("left", {})}
                fingers = {k: v for k, v in fingers.items() if v}
        elif swapped:
            for p in sided:
                for side in ("left", "right"):
                    if f"{side}_{p}" in found:
                        notes[f"{side}_{p}"] = "the names say the other side; the body's facing decides"
    for j, i in found.items():
        if how[j] == "structure" and j not in notes:
            if named.get(j) == i:
                how[j] = "structure and name"
            elif named.get(j) is not None:
                notes[j] = f"the names say {names[named[j]]!r}"
    return found, how, confidence, notes, fingers


def load_overrides(path):
    """Read a JSON mapping file {smpl_joint: source_name or null} (UTF-8). Raises SmplIkError
    naming the file (and the line, for JSON that does not parse)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SmplIkError(f"{path}: cannot read the mapping file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise SmplIkError(f"{path}:{line}: not a UTF-8 text file (byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SmplIkError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise SmplIkError(f"{path}: not a mapping: nested too deeply") from None
    if not isinstance(data, dict) or not all(isinstance(v, (str, type(None))) for v in data.values()):
        raise SmplIkError(f"{path}: expected an object {{\"smpl_joint\": \"source joint name\" or null}}")
    return data

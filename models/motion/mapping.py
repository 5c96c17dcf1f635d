"""Map a humanoid skeleton's joints onto SMPL's 24, from names or from a JSON file.

Conventions recognised by name: CMU ASF, MotionBuilder / Mixamo (with or without a
`mixamorig:` prefix), 3ds Max style, Rigify `DEF-` bones, Unreal Mannequin, MakeHuman / anny,
and SMPL's own names. Each source joint chosen for an SMPL joint is the one *located at* that
joint (its OFFSET reaches it), so its rotation turns the segment that follows.
"""
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import SmplIkError
from ..core.skeleton import JOINT_INDEX, JOINT_NAMES

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
    "unreal": _sided({
        "pelvis": ["pelvis"], "spine1": ["spine_01"], "spine2": ["spine_02"],
        "spine3": ["spine_03"], "neck": ["neck_01"], "head": ["head"],
        "{side}_hip": ["thigh_{l}"], "{side}_knee": ["calf_{l}"], "{side}_ankle": ["foot_{l}"],
        "{side}_foot": ["ball_{l}"], "{side}_collar": ["clavicle_{l}"],
        "{side}_shoulder": ["upperarm_{l}"], "{side}_elbow": ["lowerarm_{l}"],
        "{side}_wrist": ["hand_{l}"], "{side}_hand": ["middle_01_{l}"],
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


def normalise(name):
    """Lower-case, without a namespace ('mixamorig:Hips' -> 'hips') or surrounding spaces."""
    return re.sub(r"^.*:", "", name.strip()).strip().lower()


@dataclass(frozen=True)
class JointMapping:
    """source[j]: index of the source joint at SMPL joint j, or None (explained in `notes`)."""

    source: tuple
    convention: str
    notes: tuple   # one line per unmapped SMPL joint, saying how it is handled

    @property
    def mapped(self):
        return tuple(s is not None for s in self.source)


def _explain(joint):
    if joint in ("spine1", "spine2", "spine3", "neck"):
        return f"{joint}: not in the source; placed along the spine between its neighbours"
    if joint == "head":
        return "head: not in the source; follows the neck"
    return f"{joint}: not in the source; follows its parent joint"


def auto_mapping(names):
    """Best name-based mapping over the known conventions (most SMPL joints found wins)."""
    index = {}
    for i, n in enumerate(names):
        index.setdefault(normalise(n), i)
    best, best_name, best_count = None, None, -1
    for conv, table in CONVENTIONS.items():
        found = {}
        for joint, candidates in table.items():
            for c in candidates:
                if c.lower() in index:
                    found[joint] = index[c.lower()]
                    break
        if len(found) > best_count:
            best, best_name, best_count = found, conv, len(found)
    return best, best_name


CLI_HINT = "Write a JSON mapping {\"smpl_joint\": \"source joint\"} and pass it with --mapping"


def build_mapping(names, path="", overrides=None, overrides_source="", hint=CLI_HINT):
    """Map source joint `names` to SMPL's joints.

    overrides: {smpl_joint: source_name or None} applied over the automatic mapping.
    Raises SmplIkError listing the required SMPL joints that stay unmapped, ending with
    `hint` (how to supply a mapping where the caller is).
    """
    found, convention = auto_mapping(names)
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
        convention = f"{convention} + {Path(overrides_source).name if overrides_source.endswith('.json') else overrides_source or 'overrides'}"
    absent = [j for j in REQUIRED if j not in found]
    if absent:
        sample = ", ".join(list(names)[:12]) + (", ..." if len(names) > 12 else "")
        raise SmplIkError(
            f"{path}: not a humanoid skeleton this tool can map: no joints found for "
            f"{', '.join(absent)} (source joints: {sample}). {hint}")
    source = tuple(found.get(j) for j in JOINT_NAMES)
    notes = tuple(_explain(j) for j, s in zip(JOINT_NAMES, source) if s is None)
    return JointMapping(source=source, convention=convention, notes=notes)


def load_overrides(path):
    """Read a JSON mapping file {smpl_joint: source_name or null}."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise SmplIkError(f"{path}: cannot read the mapping file ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise SmplIkError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not all(isinstance(v, (str, type(None))) for v in data.values()):
        raise SmplIkError(f"{path}: expected an object {{\"smpl_joint\": \"source joint name\" or null}}")
    return data

"""Sequences of 3D joint positions from files (.npy, .npz, .csv, .json) in the common skeleton
layouts: which joint each index is, where each layout's joints stand for SMPL's, reading a
file into checked arrays, and bringing them into SMPL's frame (Y up, facing +Z, metres).

Layouts (`LAYOUTS`; left/right are the person's):
- `smpl24`: SMPL's own 24 joints (models.core.skeleton), every one of them.
- `h36m17`: Human3.6M's 17 (the order of VideoPose3D and most lifting papers): pelvis, right
  hip, knee, ankle, left hip, knee, ankle, spine, thorax, neck/nose, head top, left
  shoulder, elbow, wrist, right shoulder, elbow, wrist. Its pelvis is the midpoint of its
  hips, 10 cm below SMPL's, and its spine lies between SMPL's: neither is pinned. The
  thorax is SMPL's neck (the base of the neck, between the shoulders); the head is turned so
  its up axis points at the head top.
- `coco17`: COCO's 17 keypoints, in 3D: nose, left/right eye, ear, shoulder, elbow, wrist,
  hip, knee, ankle. No pelvis (the midpoint of the hips is 10 cm below SMPL's pelvis, so the
  hips carry it), no spine or neck; the head joint is 0.43 of each ear plus 0.14 of the nose.
- `mediapipe33`: MediaPipe Pose's 33 world landmarks (nose, eyes inner/centre/outer, ears,
  mouth, shoulders, elbows, wrists, pinky, index and thumb knuckles, hips, knees, ankles,
  heels, foot index). MediaPipe's world frame is image-style: x to the image's right, y
  down, z away from the camera, so its default up axis is `-Y` (a half turn about x makes
  it SMPL's frame: the person facing the camera faces +Z). The head as COCO's; the hand
  (SMPL's joint at the base of the middle finger) from the wrist and the index and pinky
  knuckles; the foot (at the ball of the foot) from the ankle, heel and toe tip.
- `body25`: OpenPose BODY_25: nose, neck, right/left shoulder, elbow, wrist, mid hip, right
  hip, knee, ankle, left hip, knee, ankle, eyes, ears, left big toe, small toe, heel, right
  big toe, small toe, heel. Its neck is the midpoint of the shoulders and its mid hip that of
  the hips, neither an SMPL joint; the foot from the ankle, heel and both toes.

The weights of the joints made of several points (head, hands, feet) are read off the open
body at rest (its landmark vertices): the least-squares affine combination of those points
that lands on the SMPL joint; a joint that lies off their plane comes within 2-3 cm.

File formats (`read_joint_file`):
- `.npy`: one array (T, J, 3), (J, 3) for one frame, or (T, J * 3).
- `.npz`: the array `joints` (the same shapes), or the archive's only array; an optional
  `fps` (or `mocap_framerate`) gives the frame rate.
- `.csv`: one row per frame of J * 3 numbers (x, y, z of joint 0, then joint 1, ...), comma
  separated, after an optional header row (any first row that is not all numbers).
- `.json`: a list of frames, each a list of J [x, y, z] lists; or an object
  {"joints": that list, "fps": 30}.
A joint missing from a frame (a detector that lost it, a marker gap) is NaN (`nan` in a
.csv, `NaN` or null in a .json) in any of its coordinates; in a .json, null in place of the
whole [x, y, z] too. Infinite values are refused.
"""
import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..body.measure import measure
from ..body.model import NUM_BETAS
from ..core.errors import SmplIkError
from ..core.npz import read_npy, read_npz
from ..core.skeleton import JOINT_INDEX, JOINT_NAMES, NUM_JOINTS, PARENTS
from .amass import SMPL_FROM_Z_UP
from .shape_fit import MEASUREMENTS, fit_shape
from .units import UNIT_LIMBS

SUFFIXES = (".npy", ".npz", ".csv", ".json")
# SMPL's frame from a file's axes, by the file's up axis: 'Y' SMPL's own; 'Z' a Z-up world
# (its Y is SMPL's -Z); '-Y' image-style, y down and z away from the camera (MediaPipe).
UP_AXES = {"Y": np.eye(3), "Z": SMPL_FROM_Z_UP, "-Y": np.diag([1.0, -1.0, -1.0])}
# A figure whose joints make a body outside these heights (metres) is refused: its unit or
# layout is wrong (a millimetre file read as metres is a kilometre tall).
PLAUSIBLE_HEIGHT_M = (0.8, 2.6)
# An effector made of several points, or a joint a layout has only near SMPL's, matters this
# much next to a joint the layout has itself.
APPROXIMATE_WEIGHT = 0.3

HEAD_FROM_FACE = {"left_ear": 0.429, "right_ear": 0.429, "nose": 0.142}


@dataclass(frozen=True)
class Layout:
    """A skeleton layout: `joints` its joint names by index; `smpl` {SMPL joint: {layout
    joint: weight}} where an SMPL joint is, from the layout's joints (weights sum to 1; one
    joint of weight 1 is the layout's own); `look_at` {SMPL joint: (local axis (3,), layout
    joint)}: a joint turned so its rest axis points at that joint; `up_axis`: the file's up
    axis unless told (a key of UP_AXES)."""

    name: str
    label: str
    joints: tuple
    smpl: dict
    look_at: dict = None
    up_axis: str = "Y"

    @property
    def count(self):
        return len(self.joints)

    @property
    def complete(self):
        """Whether the layout holds every SMPL joint itself (IK-GAT turns those into rotations)."""
        return all(len(self.smpl.get(n, ())) == 1 for n in JOINT_NAMES)

    def direct(self, joint):
        """Whether the SMPL joint is one of the layout's own (not a combination)."""
        return len(self.smpl.get(joint, ())) == 1

    def smpl_positions(self, joints):
        """(..., 24, 3) SMPL joint positions from the layout's joints (..., J, 3), NaN for
        the SMPL joints the layout does not give."""
        joints = np.asarray(joints, np.float64)
        out = np.full(joints.shape[:-2] + (NUM_JOINTS, 3), np.nan)
        index = {n: i for i, n in enumerate(self.joints)}
        for name, weights in self.smpl.items():
            out[..., JOINT_INDEX[name], :] = sum(w * joints[..., index[k], :] for k, w in weights.items())
        return out

    def joint(self, name):
        return self.joints.index(name)


def _own(*names, rename=None):
    """{SMPL joint: {layout joint: 1}} for layout joints named as SMPL's (or as `rename` says)."""
    rename = rename or {}
    return {rename.get(n, n): {n: 1.0} for n in names}


LIMB_JOINTS = tuple(f"{s}_{j}" for s in ("left", "right")
                    for j in ("hip", "knee", "ankle", "shoulder", "elbow", "wrist"))

H36M = Layout(
    name="h36m17", label="Human3.6M-17",
    joints=("pelvis", "right_hip", "right_knee", "right_ankle", "left_hip", "left_knee", "left_ankle",
            "spine", "thorax", "neck_nose", "head_top", "left_shoulder", "left_elbow", "left_wrist",
            "right_shoulder", "right_elbow", "right_wrist"),
    smpl={**_own(*LIMB_JOINTS), "neck": {"thorax": 1.0}},
    look_at={"head": ((0.0, 1.0, 0.0), "head_top")})

COCO = Layout(
    name="coco17", label="COCO-17",
    joints=("nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
            "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip",
            "left_knee", "right_knee", "left_ankle", "right_ankle"),
    smpl={**_own(*LIMB_JOINTS), "head": HEAD_FROM_FACE})

MEDIAPIPE = Layout(
    name="mediapipe33", label="MediaPipe-33",
    joints=("nose", "left_eye_inner", "left_eye", "left_eye_outer", "right_eye_inner", "right_eye",
            "right_eye_outer", "left_ear", "right_ear", "mouth_left", "mouth_right", "left_shoulder",
            "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_pinky",
            "right_pinky", "left_index", "right_index", "left_thumb", "right_thumb", "left_hip", "right_hip",
            "left_knee", "right_knee", "left_ankle", "right_ankle", "left_heel", "right_heel",
            "left_foot_index", "right_foot_index"),
    smpl={**_own(*LIMB_JOINTS), "head": HEAD_FROM_FACE,
          **{f"{s}_hand": {f"{s}_wrist": 0.376, f"{s}_index": 0.392, f"{s}_pinky": 0.232} for s in ("left", "right")},
          **{f"{s}_foot": {f"{s}_ankle": 0.242, f"{s}_heel": 0.064, f"{s}_foot_index": 0.694}
             for s in ("left", "right")}},
    up_axis="-Y")

BODY25 = Layout(
    name="body25", label="OpenPose BODY_25",
    joints=("nose", "neck", "right_shoulder", "right_elbow", "right_wrist", "left_shoulder", "left_elbow",
            "left_wrist", "mid_hip", "right_hip", "right_knee", "right_ankle", "left_hip", "left_knee",
            "left_ankle", "right_eye", "left_eye", "right_ear", "left_ear", "left_big_toe", "left_small_toe",
            "left_heel", "right_big_toe", "right_small_toe", "right_heel"),
    smpl={**_own(*LIMB_JOINTS), "head": HEAD_FROM_FACE,
          **{f"{s}_foot": {f"{s}_ankle": 0.217, f"{s}_heel": 0.005, f"{s}_big_toe": 0.336, f"{s}_small_toe": 0.442}
             for s in ("left", "right")}})

SMPL24 = Layout(name="smpl24", label="SMPL-24", joints=JOINT_NAMES, smpl=_own(*JOINT_NAMES))

LAYOUTS = {layout.name: layout for layout in (SMPL24, H36M, COCO, MEDIAPIPE, BODY25)}


def layouts_described():
    """'smpl24 (SMPL-24, 24 joints), h36m17 (...), ...' for messages and --help."""
    return ", ".join(f"{k} ({v.label}, {v.count} joints)" for k, v in LAYOUTS.items())


def get_layout(name):
    """The Layout named `name` (a key of LAYOUTS); SmplIkError naming the layouts otherwise."""
    try:
        return LAYOUTS[name]
    except KeyError:
        raise SmplIkError(f"unknown layout {name!r}; the layouts are {layouts_described()}") from None


@dataclass(frozen=True)
class LayoutChoice:
    """Which layout a file's joints are in, and why (in words, for a report)."""

    layout: Layout
    reason: str


def detect_layout(joints, path=""):
    """The LayoutChoice for joints (T, J, 3) from their count J. 17 joints are Human3.6M's or
    COCO's: COCO's joints 1-4 (eyes, ears) lie within a tenth of the figure's size of joint 0
    (the nose), Human3.6M's (hips, knee, ankle) do not. SmplIkError naming the count and the
    layouts when no layout has J joints."""
    count = joints.shape[1]
    found = [v for v in LAYOUTS.values() if v.count == count]
    if not found:
        raise SmplIkError(f"{path}: {count} joints per frame, which no layout has; the layouts are "
                          f"{layouts_described()} (give one with the layout option)")
    if len(found) == 1:
        return LayoutChoice(found[0], f"{count} joints")
    near = np.linalg.norm(joints[:, 1:5] - joints[:, :1], axis=-1)
    near = np.nanmedian(near) if np.isfinite(near).any() else np.nan   # NaN: no frame shows them together
    shown = joints[np.isfinite(joints).all(-1).any(-1)]
    size = np.median(np.linalg.norm(np.nanmax(shown, axis=1) - np.nanmin(shown, axis=1), axis=-1))
    if near < 0.1 * size:
        return LayoutChoice(COCO, f"{count} joints, joints 1-4 beside joint 0 (a face): COCO's")
    return LayoutChoice(H36M, f"{count} joints, joints 1-4 away from joint 0: Human3.6M's")


# --- reading files ---------------------------------------------------------------------------

@dataclass(frozen=True)
class JointFile:
    """A joint file read: joints (T, J, 3) float64 as stored (the file's axes and unit), fps
    (None when the file does not say) and its path."""

    path: str
    joints: np.ndarray
    fps: object = None


def _as_frames(path, values, what):
    """values as (T, J, 3): from (T, J, 3), (J, 3) (one frame) or (T, J * 3)."""
    if values.dtype.kind not in "biuf":
        raise SmplIkError(f"{path}: {what} holds {values.dtype} values, not numbers")
    values = values.astype(np.float64)
    if values.ndim == 2 and values.shape[1] == 3 and values.shape[0] in {v.count for v in LAYOUTS.values()}:
        values = values[None]
    elif values.ndim == 2 and values.shape[1] % 3 == 0:
        values = values.reshape(len(values), -1, 3)
    if values.ndim != 3 or values.shape[2] != 3:
        raise SmplIkError(f"{path}: {what} has shape {values.shape}; expected (frames, joints, 3), "
                          "(joints, 3) or (frames, joints * 3)")
    if values.shape[0] == 0 or values.shape[1] == 0:
        raise SmplIkError(f"{path}: {what} is empty (shape {values.shape})")
    return values


def _read_npz(path):
    arrays = read_npz(path, None, "joint file")
    names = [k for k in arrays if k not in ("fps", "mocap_framerate")]
    key = "joints" if "joints" in arrays else names[0] if len(names) == 1 else None
    if key is None:
        raise SmplIkError(f"{path}: no 'joints' array, and {len(names)} arrays ({', '.join(names) or 'none'}) "
                          "to choose from; name the joint positions 'joints'")
    values = arrays[key]
    rate = next((arrays[k] for k in ("fps", "mocap_framerate") if k in arrays), None)
    fps = None
    if rate is not None:
        if rate.size != 1 or rate.dtype.kind not in "biuf" or not float(rate.reshape(-1)[0]) > 0:
            raise SmplIkError(f"{path}: 'fps' should be one positive number of frames per second")
        fps = float(rate.reshape(-1)[0])
    return _as_frames(path, values, f"array {key!r}"), fps


def _read_csv(path, text):
    rows = [(n, r) for n, r in enumerate(csv.reader(text.splitlines()), start=1) if any(c.strip() for c in r)]

    def numbers(row):
        try:
            return [float(c) for c in row if c.strip()]
        except ValueError:
            return None

    if rows and numbers(rows[0][1]) is None:
        rows = rows[1:]   # a header
    if not rows:
        raise SmplIkError(f"{path}: no rows of numbers")
    width = None
    values = []
    for n, row in rows:
        got = numbers(row)
        if got is None:
            raise SmplIkError(f"{path}: line {n} has a value that is not a number")
        width = len(got) if width is None else width
        if len(got) != width or width % 3:
            raise SmplIkError(f"{path}: line {n} has {len(got)} numbers; every row needs the same number, "
                              f"three per joint ({width} on the first)")
        if any(map(math.isinf, got)):
            raise SmplIkError(f"{path}: line {n} (frame {len(values)}) has an infinite value")
        values.append(got)
    return _as_frames(path, np.array(values), "the rows"), None


def _read_json(path, text):
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SmplIkError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise SmplIkError(f"{path}: not valid JSON (nested too deeply)") from None
    except ValueError:   # Python refuses integers of more than 4300 digits
        raise SmplIkError(f"{path}: not valid JSON (a number too long to read)") from None
    fps = None
    if isinstance(data, dict):
        if "joints" not in data:
            raise SmplIkError(f"{path}: a JSON object needs a 'joints' list of frames")
        fps = data.get("fps")
        if fps is not None and not (isinstance(fps, (int, float)) and fps > 0):
            raise SmplIkError(f"{path}: 'fps' should be a positive number, found {fps!r}")
        data = data["joints"]
    if isinstance(data, list):   # null for a whole joint: missing, as [null, null, null]
        data = [[[None] * 3 if j is None else j for j in f] if isinstance(f, list) else f for f in data]
    try:
        values = np.array(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise SmplIkError(f"{path}: the frames are not lists of [x, y, z] numbers of one length") from None
    return _as_frames(path, values, "the joints"), None if fps is None else float(fps)


def read_joint_file(path):
    """Read a joint file (the formats of the module docstring) into a JointFile. SmplIkError
    naming the file for one that is missing, unreadable, empty, of the wrong shape or with no
    joint at all, and the frame (and the line, in a .csv) of an infinite value. A joint with a
    NaN coordinate is missing from its frame: all three come back NaN."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise SmplIkError(f"{path}: a joint file ends in {', '.join(SUFFIXES)}")
    if not path.is_file():
        raise SmplIkError(f"{path}: no such file")
    fps = None
    try:
        if suffix == ".npy":
            values = _as_frames(path, read_npy(path, "joint file"), "the array")
        elif suffix == ".npz":
            values, fps = _read_npz(path)
        else:
            text = path.read_text(encoding="utf-8-sig")
            if not text.strip():
                raise SmplIkError(f"{path}: the file is empty")
            values, fps = _read_csv(path, text) if suffix == ".csv" else _read_json(path, text)
    except UnicodeDecodeError:
        raise SmplIkError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise SmplIkError(f"{path}: cannot read ({exc.strerror or 'the system refused'})") from None
    bad = np.isinf(values)
    if bad.any():
        t, j, _ = np.argwhere(bad)[0]
        raise SmplIkError(f"{path}: frame {t} (row {t} of the file), joint {j} is infinite "
                          f"({values[t, j].tolist()})")
    missing = np.isnan(values).any(-1)
    if missing.all():
        raise SmplIkError(f"{path}: every value is NaN (a missing joint); the file gives no joint at all")
    values[missing] = np.nan   # a joint with any coordinate missing is missing
    return JointFile(path=str(path), joints=values, fps=fps)


# --- into SMPL's frame --------------------------------------------------------------------------

def to_smpl_frame(joints, up_axis, metres_per_unit):
    """joints (..., J, 3) in a file's axes (up_axis, a key of UP_AXES) and unit -> SMPL's frame
    (Y up, metres)."""
    if up_axis not in UP_AXES:
        raise SmplIkError(f"up axis {up_axis!r} is not one of {', '.join(UP_AXES)}")
    return metres_per_unit * np.asarray(joints, np.float64) @ UP_AXES[up_axis].T


def figure_height(smpl_joints, body):
    """The height (metres) of the body whose arms and legs are as long as those of the figure
    smpl_joints (T, 24, 3) (SMPL frame, metres; NaN where the layout has none): the mean
    shape's height scaled by the median ratio of the limb lengths to the mean shape's."""
    rest = body.rest_joints(np.zeros(NUM_BETAS))
    ratios = []
    for a, b in UNIT_LIMBS:
        ia, ib = JOINT_INDEX[a], JOINT_INDEX[b]
        ratios.append(np.linalg.norm(smpl_joints[:, ib] - smpl_joints[:, ia], axis=-1)
                      / np.linalg.norm(rest[ib] - rest[ia]))
    ratios = np.stack(ratios)
    if not np.isfinite(ratios).any():
        return float("nan")
    return float(np.nanmedian(ratios)) * measure(body, np.zeros(NUM_BETAS)).height


def check_height(height, path, unit_name):
    """SmplIkError naming the file and the figure's height when it is outside
    PLAUSIBLE_HEIGHT_M (a wrong unit or layout)."""
    low, high = PLAUSIBLE_HEIGHT_M
    if not np.isfinite(height):
        raise SmplIkError(f"{path}: no frame gives both ends of an arm or leg bone, so the figure's size cannot "
                          "be measured")
    if not low <= height <= high:
        raise SmplIkError(f"{path}: the figure would be {height:.3g} m tall with its numbers in {unit_name}, "
                          f"outside {low}-{high} m; give the file's unit (the units option: m, cm, mm, inch or "
                          "metres per unit) or check its layout")


# Every SMPL bone: a layout that has all 24 joints fits the shape to all 23 lengths.
BONE_MEASUREMENTS = {f"{JOINT_NAMES[p]}-{JOINT_NAMES[j]}": (JOINT_NAMES[p], JOINT_NAMES[j])
                     for j, p in enumerate(PARENTS) if p >= 0}
EXACT_BETA_PRIOR = 1e-8   # m^2 per beta^2: with every bone measured the lengths decide the betas


# A detector's file may lose a whole side (a person cut off by the frame): the body is
# symmetric, so one thigh, shin and upper arm with the hips' and shoulders' widths still size it.
LEAST_LENGTHS = 4


def fit_layout_shape(body, smpl_joints, layout):
    """The shape_fit.ShapeFit of a figure's SMPL joints (T, 24, 3) (NaN where none or
    missing): for a complete layout, to every bone's length (the 24 joints of a body come
    back within a micrometre), else to the limbs and widths the layout has
    (shape_fit.MEASUREMENTS), at least LEAST_LENGTHS of them."""
    if layout.complete:
        return fit_shape(body, smpl_joints, beta_prior=EXACT_BETA_PRIOR, iterations=8,
                         measurements={**MEASUREMENTS, **BONE_MEASUREMENTS}, least=LEAST_LENGTHS)
    return fit_shape(body, smpl_joints, least=LEAST_LENGTHS)

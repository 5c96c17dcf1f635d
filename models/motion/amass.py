"""AMASS-style SMPL motion files (`.npz`): read one into checked arrays in SMPL's layout.

The keys are AMASS's, which this project's one writer (`write_motion_npz`) also writes:
`poses` (T, 72 | 156 | 165) axis-angle values per frame, root first (SMPL, SMPL-H, SMPL-X:
all three start with the same 22 body joints), `trans` (T, 3) metres, `betas` (B,) of any
length, `gender`, and `mocap_framerate` or `mocap_frame_rate`, and this project's optional
`up_axis`, `body_model` and `floor_height` (where the file's floor is). Only `poses` is
required: files written before `up_axis` existed (and AMASS's own) read as well. Bad or
damaged files raise SmplIkError naming the file and the array at fault.

Two up axes meet here. AMASS's own files are Z-up in the world: the root orientation turns
SMPL's Y-up body upright in a Z-up world and `trans` is a Z-up offset (the pelvis is at
`rest_joints[0] + trans` in world coordinates). This project's files (`scripts/retarget.py`)
are in SMPL's Y-up frame. `detect_up_axis` takes a file's `up_axis` word or tells them apart
from the root orientation; `smpl_frame_from_z_up` and `z_up_from_smpl_frame` convert.
`write_motion_npz` writes either.
"""
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..body.model import GENDERS, gender_from_name
from ..core.errors import SmplIkError
from ..core.files import atomic_write
from ..core.npz import read_npz
from ..core.rotations import axis_angle_to_matrix, matrix_to_axis_angle
from ..core.skeleton import JOINT_NAMES, NUM_BODY_JOINTS_SHARED, NUM_JOINTS

POSE_VALUES = {72: "smpl", 156: "smplh", 165: "smplx"}   # pose values per frame -> body kind
FRAME_RATE_KEYS = ("mocap_framerate", "mocap_frame_rate")
KEYS = ("poses", "trans", "betas", "gender") + FRAME_RATE_KEYS
INFO_KEYS = ("body_model", "up_axis")   # optional text this project writes: which body, which up
# Optional: the floor's height (metres) along the file's up axis (Y in SMPL's frame, Z in a
# Z-up world), in the coordinates the posed body is in (the pelvis at rest pelvis + trans).
# A file that has it says where its floor is; AMASS's own files have none (their floor is
# meant to be z = 0, but many clips are not on it).
FLOOR_KEY = "floor_height"
UP_AXES = ("Y", "Z")
# SMPL's Y-up frame from a Z-up world: -90 degrees about X (the world's Z becomes SMPL's Y).
SMPL_FROM_Z_UP = np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])


# What read_motion_npz assumes for an optional array a file lacks: the MotionFile flag that
# says so, and the note for a person. Callers act on the flags; the notes are for reports.
ABSENT_NOTES = {
    "trans_missing": "no 'trans': the root stays at the origin",
    "betas_missing": "no 'betas': the body's mean shape",
    "gender_missing": "no 'gender'",
    "fps_missing": "no 'mocap_framerate': the frame rate is not known",
}
FLAGS = ("hands_dropped",) + tuple(ABSENT_NOTES)


@dataclass(frozen=True, kw_only=True)
class MotionFile:
    """An AMASS-style motion: poses (T, 24, 3) axis-angle in SMPL's joint order (SMPL-H / SMPL-X
    finger, jaw and eye rotations are not kept: SMPL's hand joints are zero for them); trans
    (T, 3) metres; betas (B,) as stored (empty when absent); gender (None when absent); fps
    (None when absent); kind: 'smpl', 'smplh' or 'smplx' from the pose width; body_model,
    up_axis: what this project's writers say of the file (None when absent or not text: they
    are information, never a reason to refuse a file); floor_height: the floor's height
    (metres, along the file's up axis, the same number in SMPL's frame after
    smpl_frame_from_z_up) when the file states it (FLOOR_KEY), else None; path: the file it
    was read from ('' for a motion made to be written).

    What the file lacked is in the flags (FLAGS): hands_dropped (an SMPL-H / SMPL-X file
    whose finger, jaw and eye rotations were not kept), trans_missing, betas_missing,
    gender_missing, fps_missing; `notes` says the same in words for a person."""

    poses: np.ndarray
    trans: np.ndarray
    betas: np.ndarray
    gender: object = None
    fps: object = None
    path: str = ""
    kind: str = "smpl"
    body_model: object = None   # the body the file says its betas are for (text), or None
    up_axis: object = None      # 'Y' or 'Z' when the file says so, else None
    floor_height: object = None  # metres along the up axis when the file states its floor, else None
    hands_dropped: bool = False
    trans_missing: bool = False
    betas_missing: bool = False
    gender_missing: bool = False
    fps_missing: bool = False

    @property
    def num_frames(self):
        return self.poses.shape[0]

    @property
    def notes(self):
        """What was absent and assumed, in words for a person: one note per flag set."""
        return self.notes_except()

    def notes_except(self, *flags):
        """The notes without those of the named flags (names from FLAGS), for a caller that
        says those in its own words."""
        unknown = sorted(set(flags) - set(FLAGS))
        if unknown:
            raise ValueError(f"{unknown} are not MotionFile flags; the flags are {', '.join(FLAGS)}")
        out = []
        if self.hands_dropped and "hands_dropped" not in flags:
            out.append(f"{self.kind} file: finger, jaw and eye rotations are not kept (SMPL's hand joints are zero)")
        return tuple(out + [note for flag, note in ABSENT_NOTES.items() if getattr(self, flag) and flag not in flags])


def _numeric(path, key, value):
    """`value` as float64, or SmplIkError when it holds no numbers (strings, complex)."""
    if value.dtype.kind not in "biuf":
        raise SmplIkError(f"{path}: array '{key}' holds {value.dtype} values, not numbers")
    return value.astype(np.float64)


def _first_bad(path, key, values, what):
    bad = ~np.isfinite(values)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SmplIkError(f"{path}: array '{key}' has {values[where]} at {what(where)}")


def _text(path, key, value):
    if value.shape != () or value.dtype.kind not in "US":
        raise SmplIkError(f"{path}: array '{key}' should be one string, found {value.dtype} of shape {value.shape}")
    item = value.item()
    if isinstance(item, bytes):
        try:
            item = item.decode("utf-8")
        except UnicodeDecodeError:
            raise SmplIkError(f"{path}: array '{key}' is not text") from None
    return item.strip()


def read_motion_npz(path):
    """Read an AMASS-style `.npz` motion into a MotionFile. Raises SmplIkError naming the
    file and the array at fault (shape, NaN values with their frame, unknown gender)."""
    path_text = str(path)
    arrays = read_npz(path, KEYS + INFO_KEYS + (FLOOR_KEY,), "motion file")
    if "poses" not in arrays:
        raise SmplIkError(f"{path_text}: no 'poses' array; an AMASS-style motion has poses of shape "
                          "(frames, 72), (frames, 156) or (frames, 165)")
    poses = _numeric(path_text, "poses", arrays["poses"])
    if poses.ndim == 3 and poses.shape[2] == 3:
        poses = poses.reshape(poses.shape[0], 3 * poses.shape[1])
    if poses.ndim != 2 or poses.shape[1] not in POSE_VALUES:
        raise SmplIkError(f"{path_text}: array 'poses' has shape {arrays['poses'].shape}; expected "
                          "(frames, 72) for SMPL, (frames, 156) for SMPL-H or (frames, 165) for SMPL-X "
                          "axis-angle values")
    if poses.shape[0] == 0:
        raise SmplIkError(f"{path_text}: array 'poses' has no frames")
    kind = POSE_VALUES[poses.shape[1]]
    joints = poses.shape[1] // 3
    named = NUM_JOINTS if kind == "smpl" else NUM_BODY_JOINTS_SHARED   # joints SMPL names

    def joint(where):
        j = where[1] // 3
        return f"frame {where[0]}, joint {j} ({JOINT_NAMES[j] if j < named else kind + ' hand or face'})"

    _first_bad(path_text, "poses", poses, joint)
    body = np.zeros((poses.shape[0], NUM_JOINTS, 3))
    body[:, :named] = poses.reshape(-1, joints, 3)[:, :named]

    frames = poses.shape[0]
    if "trans" in arrays:
        trans = _numeric(path_text, "trans", arrays["trans"])
        if trans.shape != (frames, 3):
            raise SmplIkError(f"{path_text}: array 'trans' has shape {trans.shape}; expected ({frames}, 3), "
                              "one root position per frame of 'poses'")
        _first_bad(path_text, "trans", trans, lambda w: f"frame {w[0]}")
    else:
        trans = np.zeros((frames, 3))

    if "betas" in arrays:
        betas = _numeric(path_text, "betas", arrays["betas"])
        if betas.ndim == 2 and betas.shape[0] == 1:
            betas = betas[0]
        if betas.ndim != 1:
            raise SmplIkError(f"{path_text}: array 'betas' has shape {arrays['betas'].shape}; expected (B,)")
        _first_bad(path_text, "betas", betas, lambda w: f"beta {w[0]}")
    else:
        betas = np.zeros(0)

    gender = None
    if "gender" in arrays:
        gender = _text(path_text, "gender", arrays["gender"]).lower()
        if gender not in GENDERS:
            raise SmplIkError(f"{path_text}: array 'gender' is {gender!r}; expected one of {', '.join(GENDERS)}")

    fps = None
    key = next((k for k in FRAME_RATE_KEYS if k in arrays), None)
    if key is not None:
        rate = _numeric(path_text, key, arrays[key])
        if rate.size != 1 or not np.isfinite(rate).all() or float(rate.reshape(-1)[0]) <= 0:
            raise SmplIkError(f"{path_text}: array '{key}' should be one positive number of frames per "
                              f"second, found {rate.reshape(-1)[:3].tolist()} (shape {rate.shape})")
        fps = float(rate.reshape(-1)[0])
    floor = None
    if FLOOR_KEY in arrays:
        value = _numeric(path_text, FLOOR_KEY, arrays[FLOOR_KEY])
        if value.size != 1 or not np.isfinite(value).all():
            raise SmplIkError(f"{path_text}: array '{FLOOR_KEY}' should be one finite number, the floor's height "
                              f"in metres along the file's up axis; found {value.reshape(-1)[:3].tolist()} "
                              f"(shape {value.shape})")
        floor = float(value.reshape(-1)[0])
    info = {k: _info_text(arrays[k]) for k in INFO_KEYS if k in arrays}
    up = info.get("up_axis")
    return MotionFile(path=path_text, poses=body, trans=trans, betas=betas, gender=gender, fps=fps,
                      kind=kind, body_model=info.get("body_model") or None,
                      up_axis=up.upper() if up and up.upper() in UP_AXES else None, floor_height=floor,
                      hands_dropped=kind != "smpl", trans_missing="trans" not in arrays,
                      betas_missing="betas" not in arrays, gender_missing="gender" not in arrays,
                      fps_missing=key is None)


def _info_text(value):
    """An optional text array as a string, or None when it is not one string."""
    if value.shape != () or value.dtype.kind not in "US":
        return None
    item = value.item()
    if isinstance(item, bytes):
        item = item.decode("utf-8", "replace")
    return item.strip()


# --- up axes --------------------------------------------------------------------------------

@dataclass(frozen=True)
class UpAxisChoice:
    """Which up axis a motion's numbers use: 'Y' (SMPL's frame) or 'Z' (AMASS's world), and
    why, in words for a report."""

    axis: str
    reason: str


def detect_up_axis(poses, stated=None):
    """The up axis of a motion's world: the file's own word (`stated`: 'Y', 'Z' or None) when
    it gives one, otherwise where the root orientation sends the body's up axis (SMPL's +Y)
    in the median frame: nearer the world's +Z than its +Y is a Z-up (AMASS) file.
    poses: (T, 24, 3) axis-angle, root first. Returns an UpAxisChoice."""
    if stated in UP_AXES:
        return UpAxisChoice(stated, f"the file says its up axis is {stated}")
    root = axis_angle_to_matrix(np.asarray(poses, np.float64)[:, 0])     # (T, 3, 3)
    up = np.median(root[:, :, 1], axis=0)                                 # where body +Y goes
    axis = "Z" if up[2] > up[1] else "Y"
    return UpAxisChoice(axis, f"the body's up axis points along the world's +Z {up[2]:.2f}, +Y {up[1]:.2f} "
                              "(median over frames)")


def smpl_frame_from_z_up(poses, trans, pelvis_rest):
    """A Z-up (AMASS) motion in SMPL's Y-up frame: (poses (T, 24, 3), trans (T, 3)) with the
    root orientation turned by SMPL_FROM_Z_UP and trans moved so that the pelvis lands where
    the Z-up file puts it. pelvis_rest: (3,) the body's rest pelvis (SMPL frame, metres, for
    the betas it is posed with): AMASS's pelvis is at pelvis_rest + trans in the world."""
    return _turn_world(poses, trans, pelvis_rest, SMPL_FROM_Z_UP)


def z_up_from_smpl_frame(poses, trans, pelvis_rest):
    """The inverse of smpl_frame_from_z_up: a Y-up (SMPL frame) motion as an AMASS Z-up one."""
    return _turn_world(poses, trans, pelvis_rest, SMPL_FROM_Z_UP.T)


def _turn_world(poses, trans, pelvis_rest, turn):
    poses = np.array(poses, np.float64)
    trans = np.asarray(trans, np.float64)
    j0 = np.asarray(pelvis_rest, np.float64)
    poses[:, 0] = matrix_to_axis_angle(turn @ axis_angle_to_matrix(poses[:, 0]))
    return poses, (j0 + trans) @ turn.T - j0


# --- writing ----------------------------------------------------------------------------------

# Every key the writer writes itself; a writer's extras may not reuse one.
WRITTEN_KEYS = ("poses", "trans", "betas", "gender") + FRAME_RATE_KEYS + (
    "root_orient", "pose_body", "surface_model_type") + INFO_KEYS + (FLOOR_KEY,)


def write_motion_npz(path, motion, extras=None):
    """Write `motion` (a MotionFile; its path, kind and flags are not written) as an
    AMASS-style `.npz` at `path`, atomically (a temporary file renamed over `path`; a failure
    leaves no file). Every motion file this project writes goes through here: the Blender
    export, `scripts/retarget.py` (models.motion.batch) and any later writer.

    It writes `poses` (T, 72) axis-angle, root first, `trans` (T, 3) metres, `betas` (B,),
    `gender` (neutral, female or male), both spellings of the frame rate, AMASS's split
    `root_orient` (T, 3) and `pose_body` (T, 63), `surface_model_type` ('smpl'), `body_model`
    (the body the betas are for; '' when motion.body_model is None), `up_axis` ('Y': SMPL's
    frame, or 'Z': AMASS's world, what the numbers are in; 'Y' when motion.up_axis is None)
    and FLOOR_KEY when motion.floor_height is set. Numbers are float64, as AMASS stores them:
    the reader works in float64, so a written motion reads back bit for bit (float32 would
    move a joint by up to 1e-7 rad each time a file is exported and imported again); text is
    numpy unicode, never pickled objects.

    extras: {key: array-like} written beside them as given (a writer's own records, such as
    the retargeting report of models.motion.batch), each key one the writer does not write
    itself (WRITTEN_KEYS) and no value of object dtype.
    SmplIkError for values that are not finite or have the wrong shape, before anything is
    written."""
    poses = np.asarray(motion.poses, np.float64)
    poses = poses.reshape(len(poses), -1) if poses.ndim == 3 else poses
    trans = np.asarray(motion.trans, np.float64)
    betas = np.asarray(motion.betas, np.float64).reshape(-1)
    gender, fps = motion.gender, motion.fps
    up_axis = "Y" if motion.up_axis is None else motion.up_axis
    if poses.ndim != 2 or poses.shape[1] != 3 * NUM_JOINTS or len(poses) == 0:
        raise SmplIkError(f"{path}: a motion to write needs poses of shape (frames, 72), got {poses.shape}")
    if trans.shape != (len(poses), 3):
        raise SmplIkError(f"{path}: trans has shape {trans.shape}; expected ({len(poses)}, 3)")
    if gender not in GENDERS:
        raise SmplIkError(f"{path}: gender {gender!r} is not one of {', '.join(GENDERS)}")
    if up_axis not in UP_AXES:
        raise SmplIkError(f"{path}: up axis {up_axis!r} is not one of {', '.join(UP_AXES)}")
    if fps is None:
        raise SmplIkError(f"{path}: a motion to write needs its frame rate")
    checked = [("poses", poses), ("trans", trans), ("betas", betas), ("frame rate", np.array([fps], np.float64))]
    if motion.floor_height is not None:
        checked.append(("floor height", np.array([motion.floor_height], np.float64)))
    for name, values in checked:
        if not np.isfinite(values).all():
            raise SmplIkError(f"{path}: the {name} to write are not all finite numbers")
    if fps <= 0:
        raise SmplIkError(f"{path}: the frame rate must be positive, got {fps}")
    extras = {k: np.asarray(v) for k, v in (extras or {}).items()}
    clash = sorted(set(extras) & set(WRITTEN_KEYS))
    if clash:
        raise SmplIkError(f"{path}: extra arrays {clash} would replace the motion's own")
    pickled = sorted(k for k, v in extras.items() if v.dtype == object)
    if pickled:
        raise SmplIkError(f"{path}: extra arrays {pickled} hold Python objects, which a reader would have to unpickle")
    arrays = dict(poses=poses, trans=trans, betas=betas, gender=np.array(gender),
                  mocap_framerate=np.float64(fps), mocap_frame_rate=np.float64(fps),
                  root_orient=poses[:, :3], pose_body=poses[:, 3:3 * NUM_BODY_JOINTS_SHARED],
                  surface_model_type=np.array("smpl"), body_model=np.array(motion.body_model or ""),
                  up_axis=np.array(up_axis))
    if motion.floor_height is not None:
        arrays[FLOOR_KEY] = np.float64(motion.floor_height)
    with atomic_write(path) as fh:
        np.savez(fh, **arrays, **extras)


# --- which body a motion goes on -------------------------------------------------------------

def body_file_gender(path):
    """The gender of a user's SMPL-family file, cheaply: an `.npz`'s `gender` array when it
    has a readable one, else the file's name (`female`, `male`, `neutral`, or SMPL's
    `_f_` / `_m_`, as in basicModel_f_lbs_10_207_0_v1.0.0.pkl); 'neutral' when neither says."""
    path = Path(path)
    if path.suffix.lower() == ".npz":
        try:
            value = read_npz(path, ("gender",)).get("gender")
        except SmplIkError:
            value = None
        text = _info_text(value) if value is not None else None
        if text and text.lower() in GENDERS:
            return text.lower()
    return gender_from_name(path)


def body_file_kind(path):
    """'smplx', 'smplh' or 'smpl' from a body file's name."""
    name = Path(path).name.lower().replace("-", "").replace("_", "")
    return "smplx" if "smplx" in name else "smplh" if "smplh" in name else "smpl"


def choose_body_file(files, gender, kind):
    """The user's body file for a motion of `gender` and `kind` ('smpl', 'smplh', 'smplx'):
    among `files` (paths), those of that gender, preferring the motion's kind, then SMPL,
    in the order given; None when no file has that gender."""
    same = [Path(f) for f in files if body_file_gender(f) == gender]
    if not same:
        return None
    rank = {kind: 0, "smpl": 1}
    return min(same, key=lambda f: rank.get(body_file_kind(f), 2))

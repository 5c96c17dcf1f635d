"""SMPL-family body models: load SMPL, SMPL-H and SMPL-X files (body joints only) and the
open body, then compute rest joints, shaped vertices and posed vertices in numpy.

Files: `.npz` read with `allow_pickle=False`, or the official `.pkl` read through a restricted
unpickler that needs neither chumpy nor scipy (`smpl_pkl`). SMPL-H/SMPL-X are reduced to SMPL's
24-joint layout: their 22 shared body joints, plus a hand joint at the middle finger's base that
takes over the weights of every finger (and, for SMPL-X, the jaw and eyes go to the head).
"""
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import AttachedPoints, forward_kinematics, linear_blend_skinning, skinning_transforms
from ..core.npz import read_npz
from ..core.rotations import axis_angle_to_matrix
from ..core.skeleton import (
    FEET, FIRST_FINGER_JOINT, JOINT_COUNT_TO_KIND, KIND_LABEL, MIDDLE_FINGER_OFFSET,
    JOINT_NAMES, NUM_BODY_JOINTS_SHARED, NUM_JOINTS, PARENTS, indices,
)
from .smpl_pkl import read_pkl_arrays

NUM_BETAS = 10
GENDERS = ("neutral", "female", "male")
OPEN_BODY_PATH = Path(__file__).resolve().parent / "open_smpl_neutral.npz"


def open_body_path(gender="neutral"):
    """The shipped open body of a gender (neutral, female or male)."""
    key = str(gender).strip().lower()
    if key not in GENDERS:
        raise SmplIkError(f"unknown gender {gender!r}; expected one of {', '.join(GENDERS)}")
    return OPEN_BODY_PATH.with_name(f"open_smpl_{key}.npz")


# The arrays every SMPL-family file has and a body model needs (smplx's names).
REQUIRED_ARRAYS = ("v_template", "shapedirs", "posedirs", "J_regressor", "weights",
                   "kintree_table", "f")
# The open body's landmark vertices, named as smplx's vertex_ids name them.
LANDMARK_NAMES = (
    "nose", "reye", "leye", "rear", "lear",
    "rthumb", "rindex", "rmiddle", "rring", "rpinky",
    "lthumb", "lindex", "lmiddle", "lring", "lpinky",
    "LBigToe", "LSmallToe", "LHeel", "RBigToe", "RSmallToe", "RHeel",
)


# --- reading files -------------------------------------------------------------------------

def read_body_arrays(path):
    """Read the arrays of an SMPL-family file (.npz or .pkl) into a dict of numpy arrays.

    Only the arrays a body model needs (and the open body's landmarks) are read; a missing,
    unreadable or damaged file raises SmplIkError naming it.
    """
    path = Path(path)
    if not path.is_file():
        raise SmplIkError(f"{path}: body model file not found")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        try:
            arrays = read_npz(path, REQUIRED_ARRAYS + ("landmark_names", "landmark_vertex_ids", "gender"),
                              "body model file")
        except SmplIkError as exc:
            if "stored as pickled objects" in str(exc):
                raise SmplIkError(f"{path}: a required array is stored as pickled objects") from None
            raise
    elif suffix == ".pkl":
        arrays = read_pkl_arrays(path, REQUIRED_ARRAYS)
    else:
        raise SmplIkError(f"{path}: unsupported body model format {suffix!r} (use .npz or .pkl)")
    missing = [k for k in REQUIRED_ARRAYS if k not in arrays or arrays[k] is None]
    if missing:
        raise SmplIkError(f"{path}: not an SMPL-family body model; missing arrays: {', '.join(missing)}")
    return arrays


# --- checking and reducing to SMPL's layout ------------------------------------------------

def _check_shapes(path, a):
    def fail(name, what):
        raise SmplIkError(f"{path}: array '{name}' {what}")

    numeric = {}
    for name in REQUIRED_ARRAYS:
        try:
            value = np.asarray(a[name])
        except (TypeError, ValueError, OverflowError):  # ragged lists, odd objects in a pickle
            fail(name, "is not numeric")
        if value.dtype.kind not in "biuf":   # text, complex or objects are no body data
            fail(name, f"is not numeric ({value.dtype})")
        if name == "f" and value.dtype.kind == "f":
            if not np.all(np.isfinite(value)) or np.any(value != np.round(value)):
                fail(name, "holds vertex indices that are not whole numbers")
        numeric[name] = value.astype(np.float64 if name != "f" else np.int64)
    a = numeric
    v = a["v_template"]
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 4:
        fail("v_template", f"has shape {v.shape}, expected (V, 3)")
    nv = v.shape[0]
    jreg = a["J_regressor"]
    if jreg.ndim != 2 or jreg.shape[1] != nv:
        fail("J_regressor", f"has shape {jreg.shape}, expected (joints, {nv})")
    nj = jreg.shape[0]
    if nj not in JOINT_COUNT_TO_KIND:
        fail("J_regressor", f"has {nj} joints; SMPL has 24, SMPL-H 52, SMPL-X 55")
    expected = {
        "weights": (nv, nj), "kintree_table": (2, nj),
        "posedirs": (nv, 3, (nj - 1) * 9),
    }
    for name, shape in expected.items():
        if a[name].shape != shape:
            fail(name, f"has shape {a[name].shape}, expected {shape}")
    sd = a["shapedirs"]
    if sd.ndim != 3 or sd.shape[:2] != (nv, 3) or sd.shape[2] < 1:
        fail("shapedirs", f"has shape {sd.shape}, expected ({nv}, 3, betas)")
    f = a["f"]
    if f.ndim != 2 or f.shape[1] != 3 or f.size == 0:
        fail("f", f"has shape {f.shape}, expected (faces, 3)")
    if f.min() < 0 or f.max() >= nv:
        fail("f", f"indexes vertices outside 0..{nv - 1}")
    for name in ("v_template", "shapedirs", "posedirs", "J_regressor", "weights"):
        if not np.all(np.isfinite(a[name])):
            fail(name, "contains NaN or infinite values")
    parents = a["kintree_table"][0].astype(np.int64)
    if list(parents[1:NUM_BODY_JOINTS_SHARED]) != list(PARENTS[1:NUM_BODY_JOINTS_SHARED]):
        fail("kintree_table", "does not have the SMPL body's joint hierarchy")
    return a, JOINT_COUNT_TO_KIND[nj]


def _reduce_to_smpl(a, kind):
    """Map an SMPL-H/SMPL-X model's arrays onto SMPL's 24 joints (body only)."""
    if kind == "smpl":
        return a["J_regressor"], a["weights"], a["posedirs"]
    jreg, w = a["J_regressor"], a["weights"]
    nv = w.shape[0]
    first_left, first_right = FIRST_FINGER_JOINT[kind]
    new_jreg = np.zeros((NUM_JOINTS, nv))
    new_jreg[:22] = jreg[:22]
    new_jreg[22] = jreg[first_left + MIDDLE_FINGER_OFFSET]
    new_jreg[23] = jreg[first_right + MIDDLE_FINGER_OFFSET]
    new_w = np.zeros((nv, NUM_JOINTS))
    new_w[:, :22] = w[:, :22]
    new_w[:, 22] = w[:, first_left:first_left + 15].sum(1)
    new_w[:, 23] = w[:, first_right:first_right + 15].sum(1)
    if kind == "smplx":  # jaw and eyes ride on the head
        new_w[:, 15] += w[:, 22:25].sum(1)
    # Pose correctives of the 21 shared non-root joints; the hand joints get none (flat hands).
    posedirs = np.zeros((nv, 3, (NUM_JOINTS - 1) * 9))
    posedirs[:, :, :21 * 9] = a["posedirs"][:, :, :21 * 9]
    return new_jreg, new_w, posedirs


@dataclass(frozen=True)
class BodyOutput:
    """Posed body: vertices (..., V, 3) and posed joints (..., 24, 3), metres, body frame."""

    vertices: np.ndarray
    posed_joints: np.ndarray


class BodyModel:
    """An SMPL-layout body (24 joints, 10 betas) in the body's own frame (SMPL: Y up, +Z front).

    Construct with `BodyModel.from_file(path)` or `load_body_model()` (cached).
    """

    def __init__(self, *, path, kind, v_template, shapedirs, posedirs, J_regressor, weights,
                 faces, landmarks=None, gender="neutral"):
        self.path = Path(path)
        self.kind = kind                      # what the file was: smpl, smplh or smplx
        self.gender = gender
        self.v_template = v_template          # (V, 3)
        self.shapedirs = shapedirs            # (V, 3, 10)
        self.posedirs = posedirs              # (V, 3, 207) or None when all zero
        self.J_regressor = J_regressor        # (24, V)
        self.weights = weights                # (V, 24)
        self.faces = faces                    # (F, 3) int
        self.landmarks = dict(landmarks or {})  # name -> vertex index
        self.parents = PARENTS
        self._j_template = J_regressor @ v_template                      # (24, 3)
        self._j_shapedirs = np.einsum("jv,vcb->jcb", J_regressor, shapedirs)  # (24, 3, 10)

    @property
    def label(self):
        if self.path.parent == OPEN_BODY_PATH.parent and self.path.name == f"open_smpl_{self.gender}.npz":
            return f"Open body ({self.gender})"
        return f"{KIND_LABEL[self.kind]} {self.gender} ({self.path.name})"

    @property
    def num_vertices(self):
        return self.v_template.shape[0]

    @classmethod
    def from_file(cls, path, expect=None):
        """Load an SMPL-family file. `expect` ('smpl', 'smplh', 'smplx') rejects other kinds."""
        path = Path(path)
        arrays = read_body_arrays(path)
        a, kind = _check_shapes(path, arrays)
        if expect is not None and kind != expect:
            raise SmplIkError(
                f"{path}: this is an {KIND_LABEL[kind]} model "
                f"({a['J_regressor'].shape[0]} joints) but an {KIND_LABEL[expect]} model was expected"
            )
        jreg, weights, posedirs = _reduce_to_smpl(a, kind)
        shapedirs = a["shapedirs"][:, :, :NUM_BETAS]
        if shapedirs.shape[2] < NUM_BETAS:  # fewer components: the rest are zero
            pad = np.zeros(shapedirs.shape[:2] + (NUM_BETAS - shapedirs.shape[2],))
            shapedirs = np.concatenate([shapedirs, pad], axis=2)
        landmarks = _landmarks(path, arrays, a["v_template"].shape[0])
        gender = _gender(path, arrays["gender"]) if "gender" in arrays else gender_from_name(path)
        return cls(
            path=path, kind=kind, v_template=a["v_template"], shapedirs=shapedirs,
            posedirs=None if not np.any(posedirs) else posedirs, J_regressor=jreg,
            weights=weights, faces=a["f"].astype(np.int64), landmarks=landmarks, gender=gender,
        )

    # --- evaluation ---------------------------------------------------------------------
    def _betas(self, betas):
        betas = np.asarray(betas, dtype=np.float64)
        if betas.shape[-1:] != (NUM_BETAS,):
            raise SmplIkError(f"betas must have {NUM_BETAS} values in the last axis, got shape {betas.shape}")
        bad = ~np.isfinite(betas)
        if bad.any():
            idx = int(np.argwhere(bad.reshape(-1, NUM_BETAS))[0][1])
            raise SmplIkError(f"betas must be finite numbers; beta {idx} is "
                              f"{betas.reshape(-1, NUM_BETAS)[bad.reshape(-1, NUM_BETAS)][0]}")
        return betas

    def rest_joints(self, betas):
        """Rest joint positions (..., 24, 3), metres, for betas (..., 10)."""
        betas = self._betas(betas)
        return self._j_template + np.einsum("jcb,...b->...jc", self._j_shapedirs, betas)

    def shaped_vertices(self, betas):
        """Rest-pose vertices (..., V, 3) for betas (..., 10)."""
        betas = self._betas(betas)
        return self.v_template + np.einsum("vcb,...b->...vc", self.shapedirs, betas)

    def rest_floor_point(self, betas):
        """(..., 3) metres, SMPL frame: the point on the floor under the rest pelvis, for betas
        (..., 10): the rest pelvis's X and Z with the lowest rest-pose vertex's height (Y).
        A body stands on a floor, its pelvis over a spot, when this point is on that spot."""
        pelvis = self.rest_joints(betas)[..., 0, :]
        lowest = self.shaped_vertices(betas)[..., 1].min(axis=-1)
        return np.stack([pelvis[..., 0], lowest, pelvis[..., 2]], axis=-1)

    def foot_contacts(self, betas):
        """AttachedPoints where each foot meets the floor, for betas (10,), found from the
        skinning weights so any SMPL-family file has them. Of the sole's vertices (those within
        2 cm of the foot's lowest) that follow the ankle: the hindmost (the heel) and those
        nearest to and furthest from the body's midline (the sole's inner and outer edges);
        of those that follow the foot joint: the lowest (the ball), the foremost (the toe) and
        the inner and outer edges again. The edges keep a foot from rolling onto its side to
        put its middle points over a floor. Named "left heel", "left ball", "left toe", "left
        sole inner", "left sole outer", "left toes inner", "left toes outer", then the right's."""
        verts = self.shaped_vertices(betas)
        rest = self.rest_joints(betas)
        owner = self.weights.argmax(1)
        across = np.abs(verts[:, 0] - rest[0, 0])                             # from the midline
        joints, offsets, names = [], [], []
        for side, (ankle, foot) in zip(("left", "right"), (indices(pair) for pair in FEET)):
            low = verts[:, 1] < verts[(owner == ankle) | (owner == foot), 1].min() + 0.02
            heel = np.flatnonzero(low & (owner == ankle))
            toes = np.flatnonzero(low & (owner == foot))
            if not len(heel) or not len(toes):
                raise SmplIkError(f"{self.path}: no vertices follow the {JOINT_NAMES[ankle]} or "
                                  f"{JOINT_NAMES[foot]} near the sole; cannot find the foot's contact points")
            points = {"heel": (ankle, heel[np.argmin(verts[heel, 2])]), "ball": (foot, toes[np.argmin(verts[toes, 1])]),
                      "toe": (foot, toes[np.argmax(verts[toes, 2])]),
                      "sole inner": (ankle, heel[np.argmin(across[heel])]),
                      "sole outer": (ankle, heel[np.argmax(across[heel])]),
                      "toes inner": (foot, toes[np.argmin(across[toes])]),
                      "toes outer": (foot, toes[np.argmax(across[toes])])}
            for name, (joint, vertex) in points.items():
                joints.append(joint)
                offsets.append(verts[vertex] - rest[joint])
                names.append(f"{side} {name}")
        return AttachedPoints(np.array(joints), np.array(offsets), tuple(names))

    def forward(self, betas, *, pose_rotvecs=None, rel_rotmats=None, trans=None):
        """Pose the body.

        betas: (..., 10). The pose, by name, one of: pose_rotvecs, axis-angle vectors
        (..., 72) or (..., 24, 3), root first; rel_rotmats, local (parent-relative) rotation
        matrices (..., 24, 3, 3). Neither: the rest pose. trans: optional (..., 3) metres.
        Returns BodyOutput with posed vertices (..., V, 3) and posed joints (..., 24, 3).
        """
        rot = relative_rotations(pose_rotvecs, rel_rotmats)
        v_shaped = self.shaped_vertices(betas)
        rest = self.rest_joints(betas)
        if rot is None:
            rot = np.broadcast_to(np.eye(3), rest.shape + (3,))
        if self.posedirs is not None:
            eye = np.eye(3)
            feature = (rot[..., 1:, :, :] - eye).reshape(rot.shape[:-3] + (-1,))
            v_shaped = v_shaped + np.einsum("vcp,...p->...vc", self.posedirs, feature)
        fk = forward_kinematics(rot, rest, self.parents, trans)
        r, t = skinning_transforms(fk, rest)
        verts = linear_blend_skinning(v_shaped, self.weights, r, t)
        return BodyOutput(vertices=verts, posed_joints=fk.positions)

    def vertices(self, betas, *, pose_rotvecs=None, rel_rotmats=None, trans=None):
        """Posed vertices (..., V, 3); see `forward`."""
        return self.forward(betas, pose_rotvecs=pose_rotvecs, rel_rotmats=rel_rotmats, trans=trans).vertices


def relative_rotations(pose_rotvecs=None, rel_rotmats=None):
    """The local rotation matrices (..., 24, 3, 3) of a pose given one way or the other (see
    `BodyModel.forward`), or None when neither is given. Refuses both at once."""
    if pose_rotvecs is not None and rel_rotmats is not None:
        raise SmplIkError("give the pose as pose_rotvecs or as rel_rotmats, not both")
    if pose_rotvecs is None and rel_rotmats is None:
        return None
    name = "pose_rotvecs" if rel_rotmats is None else "rel_rotmats"
    pose = np.asarray(pose_rotvecs if rel_rotmats is None else rel_rotmats, dtype=np.float64)
    if not np.all(np.isfinite(pose)):
        raise SmplIkError(f"{name} contains NaN or infinite values")
    if rel_rotmats is not None:
        if pose.shape[-3:] != (NUM_JOINTS, 3, 3):
            raise SmplIkError(f"rel_rotmats must have shape (..., 24, 3, 3); got {pose.shape}")
        return pose
    if pose.shape[-1:] == (NUM_JOINTS * 3,):
        return axis_angle_to_matrix(pose.reshape(pose.shape[:-1] + (NUM_JOINTS, 3)))
    if pose.shape[-2:] == (NUM_JOINTS, 3):
        return axis_angle_to_matrix(pose)
    raise SmplIkError(f"pose_rotvecs must have shape (..., 72) or (..., 24, 3); got {pose.shape}")


def _landmarks(path, arrays, num_vertices):
    """{name: vertex index} from the optional landmark arrays, checked."""
    if "landmark_names" not in arrays or "landmark_vertex_ids" not in arrays:
        return {}
    names, ids = arrays["landmark_names"], arrays["landmark_vertex_ids"]
    if names.ndim != 1 or names.dtype.kind not in "US":
        raise SmplIkError(f"{path}: array 'landmark_names' should be a list of names, "
                          f"found {names.dtype} of shape {names.shape}")
    if ids.shape != names.shape or ids.dtype.kind not in "iu":
        raise SmplIkError(f"{path}: array 'landmark_vertex_ids' should be {names.shape[0]} vertex "
                          f"indices, found {ids.dtype} of shape {ids.shape}")
    if ids.size and (ids.min() < 0 or ids.max() >= num_vertices):
        raise SmplIkError(f"{path}: array 'landmark_vertex_ids' indexes vertices outside 0..{num_vertices - 1}")
    return {n.decode("latin-1") if isinstance(n, bytes) else str(n): int(i)
            for n, i in zip(names.tolist(), ids.tolist())}


def _gender(path, value):
    """The body's gender from its optional 'gender' array."""
    item = value.item() if value.shape == () and value.dtype.kind in "US" else None
    if isinstance(item, bytes):
        item = item.decode("latin-1")
    if item is None or item.strip().lower() not in ("neutral", "male", "female"):
        shown = repr(item) if item is not None else f"{value.dtype} of shape {value.shape}"
        raise SmplIkError(f"{path}: array 'gender' is {shown}; expected neutral, male or female")
    return item.strip().lower()


OPEN_PREFIX = "open_smpl_"


def open_body_name(path=None, gender="neutral"):
    """'open_smpl_<gender>' for a shipped open body (no path: the open body of `gender`; or a
    path to one of the shipped files), else None (a user's file). The name motion files
    carry in `body_model`, so betas are only reused on the body they were fitted for."""
    if not path:
        return OPEN_PREFIX + gender
    path = Path(path)
    if path.parent.resolve() == OPEN_BODY_PATH.parent.resolve() and path.stem.startswith(OPEN_PREFIX):
        return path.stem
    return None


def gender_from_name(path):
    """A body file's gender from its name: `female`, `male` or `neutral` in it, or SMPL's
    `_f_` / `_m_` (basicModel_f_lbs_10_207_0_v1.0.0.pkl); 'neutral' when it says neither."""
    name = Path(path).name.lower()
    for g in ("female", "male", "neutral"):
        if g in name:
            return g
    for mark, g in (("_f_", "female"), ("_m_", "male")):
        if mark in name:
            return g
    return "neutral"


@functools.lru_cache(maxsize=8)
def _cached(path, mtime_ns, expect):
    return BodyModel.from_file(path, expect)


def load_body_model(path=None, expect=None):
    """Cached `BodyModel.from_file`; `path=None` is the shipped open body.

    A file that changed on disk is read again.
    """
    path = Path(path) if path else OPEN_BODY_PATH
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        raise SmplIkError(f"{path}: body model file not found") from None
    return _cached(path.resolve(), mtime, expect)


def smplx_arguments(path=None):
    """Keyword arguments that make `smplx.SMPL(**args)` run an `.npz` body such as the open body.

    smplx's constructor only unpickles a path, so the arrays are passed as its data_struct,
    with the body's own landmark vertices as `vertex_ids`.
    """
    from smplx.utils import Struct  # imported here: smplx is a test/script dependency only

    path = Path(path) if path else OPEN_BODY_PATH
    arrays = read_npz(path, None, "body model file")
    if "landmark_names" not in arrays:
        raise SmplIkError(f"{path}: has no landmark vertices; smplx needs them as vertex_ids")
    vertex_ids = {str(n): int(i) for n, i in zip(arrays["landmark_names"], arrays["landmark_vertex_ids"])}
    return {"model_path": str(path), "data_struct": Struct(**arrays), "vertex_ids": vertex_ids}

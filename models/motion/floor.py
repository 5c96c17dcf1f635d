"""Where a motion's body meets its floor: the lowest point of the posed body over a clip,
measured cheaply and robust to a glitch frame, and the vertical shift that puts a clip on
the floor (with a note for a person saying where the body was and what was done).

The body is never skinned whole: `floor_candidates` picks, once per body and shape, the few
hundred rest vertices that can be a posed body's lowest point (each body part's outermost
vertices in many directions), and only those are skinned in every frame.
"""
from dataclasses import dataclass

import numpy as np

from ..body.model import NUM_BETAS
from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics, skinning_transforms
from ..core.rotations import axis_angle_to_matrix
from ..core.skeleton import FOOT_JOINTS, JOINT_NAMES, NUM_JOINTS, PARENTS

# Metres: a lowest point this near the floor is on it, and is left as it is (below capture noise).
ON_FLOOR = 0.01           # (docs/training_log.md, "Floor placement")
# Metres: a clip whose lowest point stays further above the floor never touches it: moved down.
FAR_ABOVE = 0.05          # (docs/training_log.md, "Floor placement")
# A dip of at most this many consecutive frames is a glitch, not the floor (running median).
GLITCH_FRAMES = 2         # (docs/training_log.md, "Floor placement")
# Directions in which each body part's outermost vertices are kept as floor candidates.
PART_DIRECTIONS = 32      # (docs/training_log.md, "Floor placement")
CHUNK_FRAMES = 1024       # frames skinned at once (memory: CHUNK_FRAMES x candidates x 4 floats)
UP_INDEX = {"Y": 1, "Z": 2}   # the coordinate of each up axis a motion may have
FLOOR_MODES = ("AUTO", "ON", "OFF")   # place_on_floor's modes


def _sphere_directions(count):
    """(count, 3) unit vectors spread evenly over the sphere (a Fibonacci lattice)."""
    k = np.arange(count) + 0.5
    z = 1.0 - 2.0 * k / count
    phi = np.pi * (1.0 + 5.0 ** 0.5) * k
    r = np.sqrt(1.0 - z * z)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=-1)


def floor_candidates(body, betas):
    """(K,) sorted vertex indices of `body` (a BodyModel) with betas (10,) that can be the
    lowest point of the posed body: for each joint's part (the vertices it weighs most), its
    outermost vertex in the rest pose in each of PART_DIRECTIONS directions. A few hundred
    of the body's thousands (a flat sole has its corners and edges among them)."""
    verts = body.shaped_vertices(np.asarray(betas, np.float64))
    owner = body.weights.argmax(1)
    chosen = []
    directions = _sphere_directions(PART_DIRECTIONS)
    for j in range(body.weights.shape[1]):
        part = np.flatnonzero(owner == j)
        if len(part):
            chosen.append(part[np.argmax(verts[part] @ directions.T, axis=0)])
    return np.unique(np.concatenate(chosen))


@dataclass(frozen=True)
class LowestPoint:
    """The lowest point of a posed body over a clip, along the motion's up axis (metres, in
    the motion's own coordinates): height, robust to a glitch (the lowest that the body
    holds for more than GLITCH_FRAMES frames), at `frame` (0-based), where `joint` (a name
    from JOINT_NAMES) owns the lowest vertex; raw_height, raw_frame: the lowest of any single
    frame; per_frame (T,): each frame's lowest height."""

    height: float
    frame: int
    joint: str
    raw_height: float
    raw_frame: int
    per_frame: np.ndarray

    @property
    def is_foot(self):
        return self.joint in FOOT_JOINTS

    @property
    def glitch_frames(self):
        """(N,) the frames whose lowest point dips more than ON_FLOOR below `height` (the
        dips the robust height ignores)."""
        return np.flatnonzero(self.per_frame < self.height - ON_FLOOR)


def _robust_lowest(per_frame):
    """(height, frame) of the lowest running median of `per_frame` (T,) over
    2 * GLITCH_FRAMES + 1 frames (fewer for a shorter clip; the plain minimum below 3)."""
    n = len(per_frame)
    window = min(2 * GLITCH_FRAMES + 1, n if n % 2 else n - 1)
    if window < 3:
        k = int(np.argmin(per_frame))
        return float(per_frame[k]), k
    windows = np.lib.stride_tricks.sliding_window_view(per_frame, window)
    order = np.argsort(windows, axis=1, kind="stable")[:, window // 2]    # each window's median
    medians = windows[np.arange(len(windows)), order]
    start = int(np.argmin(medians))
    return float(medians[start]), start + int(order[start])


@dataclass(frozen=True)
class LowestPointOptions:
    """How `lowest_point` measures. up_axis: 'Y' for SMPL's frame, 'Z' for AMASS's Z-up world
    (the root orientation stands the body up in it; the posed body is in the motion's own
    coordinates either way). rest_joints (24, 3), SMPL frame: the skeleton the mesh is skinned
    to (None: the body's joints for its betas; a rig's proxy has its own). candidates: vertex
    indices to skin (None: floor_candidates)."""

    up_axis: str = "Y"
    rest_joints: np.ndarray = None
    candidates: np.ndarray = None


def lowest_point(body, betas, poses, trans, options=LowestPointOptions()):
    """The lowest point of `body` (a BodyModel) with betas (10,) posed by `poses` (T, 24, 3)
    axis-angle (root first) or (T, 72), and `trans` (T, 3) metres, over the clip, along
    options.up_axis (LowestPointOptions). Linear blend skinning of the shaped mesh without
    pose correctives, as Blender's Armature modifier shows it. Returns a LowestPoint;
    SmplIkError for arrays of the wrong shape or values that are not finite."""
    up_axis, rest_joints, candidates = options.up_axis, options.rest_joints, options.candidates
    betas = np.asarray(betas, np.float64).reshape(-1)
    poses = np.asarray(poses, np.float64)
    poses = poses.reshape(len(poses), NUM_JOINTS, 3) if poses.ndim == 2 else poses
    trans = np.asarray(trans, np.float64)
    if up_axis not in UP_INDEX:
        raise SmplIkError(f"up axis {up_axis!r} is not one of {', '.join(UP_INDEX)}")
    if betas.shape != (NUM_BETAS,):
        raise SmplIkError(f"betas must have {NUM_BETAS} values, got shape {betas.shape}")
    if poses.ndim != 3 or poses.shape[1:] != (NUM_JOINTS, 3) or len(poses) == 0:
        raise SmplIkError(f"poses must have shape (frames, 24, 3) or (frames, 72), got {poses.shape}")
    if trans.shape != (len(poses), 3):
        raise SmplIkError(f"trans has shape {trans.shape}; expected ({len(poses)}, 3)")
    for name, values in (("betas", betas), ("poses", poses), ("trans", trans)):
        if not np.isfinite(values).all():
            raise SmplIkError(f"the {name} to measure are not all finite numbers")
    rest = body.rest_joints(betas) if rest_joints is None else np.asarray(rest_joints, np.float64)
    index = floor_candidates(body, betas) if candidates is None else np.asarray(candidates)
    verts = body.shaped_vertices(betas)[index]                              # (K, 3)
    weights = body.weights[index]                                           # (K, 24)
    owner = weights.argmax(1)
    up = UP_INDEX[up_axis]
    per_frame = np.empty(len(poses))
    where = np.empty(len(poses), np.int64)
    for s in range(0, len(poses), CHUNK_FRAMES):
        chunk = slice(s, s + CHUNK_FRAMES)
        fk = forward_kinematics(axis_angle_to_matrix(poses[chunk]), rest, PARENTS, trans[chunk])
        rot, shift = skinning_transforms(fk, rest)
        # only the height is needed: each joint's up row (3) and up translation (1), blended
        rows = np.concatenate([rot[:, :, up, :], shift[:, :, up, None]], axis=-1)    # (t, 24, 4)
        blended = np.einsum("kj,tjc->tkc", weights, rows, optimize=True)            # (t, K, 4)
        heights = np.einsum("tkc,kc->tk", blended[..., :3], verts) + blended[..., 3]
        where[chunk] = heights.argmin(1)
        per_frame[chunk] = heights[np.arange(len(heights)), where[chunk]]
    height, frame = _robust_lowest(per_frame)
    raw = int(np.argmin(per_frame))
    return LowestPoint(height=height, frame=frame, joint=JOINT_NAMES[owner[where[frame]]],
                       raw_height=float(per_frame[raw]), raw_frame=raw, per_frame=per_frame)


# --- putting a clip on its floor --------------------------------------------------------------

@dataclass(frozen=True)
class FloorPlacement:
    """What to do with a clip's height: shift (metres, along the up axis) to add to every
    frame's root translation (0: left as it is); before, after: its lowest point relative to
    the floor (metres, + above) before and after the shift; note: what was found and done,
    for a person."""

    shift: float
    before: float
    after: float
    note: str


def distance_text(metres):
    """A distance for a note: centimetres below 10 cm (one decimal), else metres (two)."""
    metres = abs(float(metres))
    return f"{100 * metres:.1f} cm" if metres < 0.095 else f"{metres:.2f} m"


def _relative(offset):
    """Where a height `offset` (metres, + above) lies relative to the floor, in words."""
    return f"{distance_text(offset)} {'above' if offset >= 0 else 'below'} the floor"


def place_on_floor(lowest, floor=0.0, mode="AUTO", stated_floor=None):
    """The FloorPlacement of a clip whose lowest point is `lowest` (a LowestPoint) over a
    floor at height `floor` (metres, the same axis and coordinates). mode: 'ON' measures
    (a lowest point more than ON_FLOOR below the floor, or more than FAR_ABOVE above it, is
    moved onto it; nearer, it is left as it is); 'OFF' leaves the clip as it is; 'AUTO' does
    as 'ON' for a file that says nothing of its floor (stated_floor None) and otherwise puts
    the file's own floor (stated_floor, metres) on the floor, keeping the clip's height above
    it."""
    if mode not in FLOOR_MODES:
        raise SmplIkError(f"floor option {mode!r} is not one of {', '.join(FLOOR_MODES)}")
    before = lowest.height - floor
    if lowest.is_foot:
        what, verb, them = "feet", "were", "they are"
    else:
        what, verb, them = f"the lowest point (the {lowest.joint.replace('_', ' ')})", "was", "it is"
    glitch = lowest.glitch_frames
    dips = ""
    if len(glitch):
        frames = "a frame dips" if len(glitch) == 1 else f"{len(glitch)} frames dip"
        dips = (f" ({frames} up to {distance_text(lowest.height - lowest.raw_height)} lower, too briefly to be "
                "the floor: taken for a glitch)")
    if mode == "OFF":
        return FloorPlacement(0.0, before, before, f"heights kept as in the file (floor option off): lowest point "
                                                   f"{_relative(before)}{dips}")
    if mode == "AUTO" and stated_floor is not None:
        shift = floor - float(stated_floor)
        after = before + shift
        if abs(shift) < 1e-9:
            return FloorPlacement(0.0, before, before,
                                  f"the file states its floor (floor_height {float(stated_floor):g} m): "
                                  f"kept as in the file, lowest point {_relative(before)}{dips}")
        return FloorPlacement(shift, before, after,
                              f"the file states its floor (floor_height {float(stated_floor):g} m): moved "
                              f"{'up' if shift > 0 else 'down'} {distance_text(shift)} onto the floor, lowest point "
                              f"{_relative(after)}{dips}")
    if before < -ON_FLOOR:
        return FloorPlacement(-before, before, 0.0, f"{what} {verb} {distance_text(before)} below the floor: "
                                                    f"moved up {distance_text(before)}{dips}")
    if before > FAR_ABOVE:
        return FloorPlacement(-before, before, 0.0, f"{what} stayed {distance_text(before)} above the floor (never "
                                                    f"within {distance_text(FAR_ABOVE)} of it): moved down "
                                                    f"{distance_text(before)}{dips}")
    if before > ON_FLOOR:
        return FloorPlacement(0.0, before, before, f"{what} {distance_text(before)} above the floor at the lowest "
                                                   f"(within {distance_text(FAR_ABOVE)}): left as {them}{dips}")
    return FloorPlacement(0.0, before, before, f"{what} on the floor (lowest {_relative(before)}): "
                                               f"left as {them}{dips}")

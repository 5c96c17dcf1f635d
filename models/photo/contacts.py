"""Where a fitted video's feet rest: the floor's up, the frames each foot is in contact with the
floor (low and slow), the floor under them, and the feet held there (no skating). Everything is
in the camera's frame (models/photo/camera.py)."""
import numpy as np

from ..core.kinematics import forward_kinematics
from ..core.rotations import unit
from ..core.skeleton import FEET, JOINT_INDEX, PARENTS, indices
from ..ik.effectors import Effector, EffectorKind
from ..ik.refine import RefineOptions, refine_pose
from ..motion.temporal import filter_in_time, gaussian_kernel
from .scene import standing_up

# A foot is in contact where it is low and slow: within CONTACT_HEIGHT of the other foot and
# moving across the line of sight less than CONTACT_SPEED
CONTACT_HEIGHT = 0.08      # metres above the other foot (each foot's lowest joint, ankle or ball)
CONTACT_SPEED = 0.6        # m/s across the line of sight: a fitted planted foot wobbles up to ~0.5, a swinging 1.4-4
FLOOR_SPREAD = 0.15        # metres (RMS): contact points spread this far fix the floor's tilt
FLOOR_FLAT = 0.25          # ... where they lie this flat: RMS off their plane over their lesser spread along it
FLOOR_PERCENTILE = 5       # the floor: this percentile of the lowest foot joint's height
LOCK_TOLERANCE = 1e-3      # metres: a contact foot further from its lock is moved there by SMPL-IK
LOCK_ITERATIONS = 4        # refinement steps a frame: the feet are millimetres off after the root moved
FOOT_INDICES_BY_SIDE = tuple(indices(side) for side in FEET)   # left, right: (ankle, ball) joint indices
FREE_PINS = ("pelvis", "head", "left_wrist", "right_wrist")   # held softly while a foot is locked


def clip_up(local_rot, trans, rest):
    """(3,) unit: the floor's up in the camera's frame, the mean over the clip (local_rot (T, 24,
    3, 3), trans (T, 3) on rest joints (24, 3)) of each frame's up as photo_scene takes it
    (models.photo.scene.standing_up: from the feet to the centre of mass, along the shins when
    seated)."""
    up = standing_up(local_rot, trans, rest).sum(axis=0)
    return unit(up) if np.linalg.norm(up) > 1e-9 else np.array([0.0, 1.0, 0.0])


def _lateral_speed(points, fps):
    """(T,) m/s: how fast points (T, 3) in the camera's frame move across the line of sight,
    their image motion at their own depth (d(x/-z, y/-z)/dt times -z). A monocular fit's depth
    wobbles by centimetres a frame where its image position does not, so a planted foot is
    slow by this measure; a point less than 10 cm in front of the camera takes its 3D speed."""
    if len(points) < 2:
        return np.zeros(len(points))
    depth = -points[:, 2]
    if np.any(depth < 0.1):
        return np.linalg.norm(np.gradient(points, axis=0), axis=1) * fps
    seen = points[:, :2] / depth[:, None]
    return np.linalg.norm(np.gradient(seen, axis=0), axis=1) * depth * fps


def _floor_up(points, up):
    """The floor's up from the foot points (N, 3) that rest on it and a first guess `up` (3,):
    the normal of the plane through them where they spread both ways (FLOOR_SPREAD) and lie
    flat (off the plane less than FLOOR_FLAT of their lesser spread along it), `up` itself
    where they spread both ways but not flat (uneven ground, or contacts found wrong: no one
    floor), `up` turned square to their line where they spread one way, `up` itself where
    they do not."""
    if len(points) < 10:
        return up
    centred = points - points.mean(axis=0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    spread = sv / np.sqrt(len(points))
    if spread[1] > FLOOR_SPREAD:
        if spread[2] > FLOOR_FLAT * spread[1]:
            return up
        normal = vt[2]
        return normal if normal @ up > 0 else -normal
    if spread[0] > FLOOR_SPREAD:
        return unit(up - (up @ vt[0]) * vt[0])
    return up


def foot_contacts(joints, fps, up):
    """(contact (T, 2) bool, floor height along `up`) of joints (T, 24, 3) in the camera's
    frame at `fps`: a foot touches where its lowest joint (ankle or ball) is within
    CONTACT_HEIGHT of the other foot's (or below it) and its middle moves across the line of
    sight slower than CONTACT_SPEED (_lateral_speed: heights and speeds along the line of sight
    are what a monocular fit gets wrong); the floor is the FLOOR_PERCENTILE percentile of the
    lower foot's height. A single frame off contact between two in contact counts as in
    contact (a flicker)."""
    heights = joints @ up
    low = np.stack([np.minimum(heights[:, a], heights[:, b]) for a, b in FOOT_INDICES_BY_SIDE], axis=1)   # (T, 2)
    floor = float(np.percentile(low.min(axis=1), FLOOR_PERCENTILE))
    contact = np.zeros(low.shape, dtype=bool)
    for s, (a, b) in enumerate(FOOT_INDICES_BY_SIDE):
        speed = _lateral_speed((joints[:, a] + joints[:, b]) / 2, fps)
        contact[:, s] = (low[:, s] - low.min(axis=1) < CONTACT_HEIGHT) & (speed < CONTACT_SPEED)
        flicker = ~contact[1:-1, s] & contact[:-2, s] & contact[2:, s]
        contact[1:-1, s] |= flicker
    return contact, floor


def floor_of(joints, contact, up):
    """(up, floor height along it) of the floor the feet in `contact` (T, 2) rest on, joints
    (T, 24, 3) in the camera's frame, from the first guess `up` (_floor_up over the lower
    joint of each foot in contact)."""
    rows = []
    for s, (a, b) in enumerate(FOOT_INDICES_BY_SIDE):
        pair = joints[contact[:, s]][:, [a, b]]                     # (N, 2, 3)
        lower = np.argmin(pair @ up, axis=1)
        rows.append(pair[np.arange(len(pair)), lower])
    points = np.concatenate(rows) if rows else np.zeros((0, 3))
    up = _floor_up(points, up)
    heights = joints @ up
    low = np.minimum.reduce([np.minimum(heights[:, a], heights[:, b]) for a, b in FOOT_INDICES_BY_SIDE])
    return up, float(np.percentile(low, FLOOR_PERCENTILE))


def _runs(flags):
    """[(start, stop)] of the runs of True in a (T,) bool array (stop not included)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(int), [0]])))
    return list(zip(edges[0::2], edges[1::2]))


def lock_feet(local_rot, trans, rest, contact):
    """Feet held where they rest: for each run of frames a foot is in contact (contact (T, 2)),
    its ankle and ball are held at their mean positions over the run. First the root moves
    (the mean of the contact feet's offsets; between contacts it moves as the offsets blend,
    so the body never jumps), then on each frame where a contact foot is still more than
    LOCK_TOLERANCE off (two feet in contact that moved apart, the blend's edges) SMPL-IK's
    refinement pins that foot's ankle and ball there, the pelvis, head and wrists held softly
    where they were. local_rot (T, 24, 3, 3), trans (T, 3), rest (24, 3); returns the new
    (local_rot, trans)."""
    local_rot, trans = np.array(local_rot, dtype=np.float64), np.array(trans, dtype=np.float64)
    positions = forward_kinematics(local_rot, rest, PARENTS, trans).positions
    count = len(trans)
    locks = np.full((count, 2, 2, 3), np.nan)   # frame, foot, (ankle, ball), xyz
    for s, (a, b) in enumerate(FOOT_INDICES_BY_SIDE):
        for lo, hi in _runs(contact[:, s]):
            locks[lo:hi, s] = positions[lo:hi][:, [a, b]].mean(axis=0)
    if not contact.any():
        return local_rot, trans
    offsets = np.stack([locks[:, s, 0] - positions[:, a]
                        for s, (a, _) in enumerate(FOOT_INDICES_BY_SIDE)], axis=1)   # (T, 2, 3)
    weight = contact.astype(np.float64)
    touching = weight.sum(axis=1) > 0
    shift = np.zeros((count, 3))
    shift[touching] = (np.nansum(offsets[touching] * weight[touching, :, None], axis=1)
                       / weight[touching].sum(1)[:, None])
    index = np.arange(count)
    for k in range(3):   # between contacts the shift blends from one to the next
        shift[:, k] = np.interp(index, index[touching], shift[touching, k])
    if count > 2:
        shift = filter_in_time(shift, gaussian_kernel(1.0))
    trans = trans + shift
    positions = positions + shift[:, None]
    options = RefineOptions(balance=False, self_collision=False, iterations=LOCK_ITERATIONS)
    for t in np.flatnonzero(touching):
        feet = [s for s in range(2) if contact[t, s]]
        off = max(np.linalg.norm(positions[t, list(FOOT_INDICES_BY_SIDE[s])] - locks[t, s], axis=1).max() for s in feet)
        if off <= LOCK_TOLERANCE:
            continue
        effectors = [Effector(j, EffectorKind.POSITION, tuple(locks[t, s, n]))
                     for s in feet for n, j in enumerate(FOOT_INDICES_BY_SIDE[s])]
        effectors += [Effector(name, EffectorKind.POSITION, tuple(positions[t, JOINT_INDEX[name]]), soft=True,
                               weight=0.5, tolerance=1.0) for name in FREE_PINS]
        refined = refine_pose(local_rot[t], trans[t], rest, effectors, options)
        local_rot[t], trans[t] = refined.local_rot, refined.trans
    return local_rot, trans

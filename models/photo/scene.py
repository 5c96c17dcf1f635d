"""People fitted in one photo placed on one floor: which way is up for a posed body, and the
scene (SMPL's axes, Y up) the camera and everyone stand in."""
from dataclasses import dataclass

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.metrics import angle_deg
from ..core.rotations import shortest_arc, unit
from ..core.skeleton import FOOT_JOINTS, JOINT_INDEX, PARENTS, indices
from ..ik.cost import centre_of_mass, default_parts

FOOT_INDICES = indices(FOOT_JOINTS)
FLOOR_TRUST = 0.25   # square metres: feet this far apart (0.5 m) weigh as much as the people's own up
SHINS = tuple((JOINT_INDEX[f"{side}_ankle"], JOINT_INDEX[f"{side}_knee"]) for side in ("left", "right"))
SEATED_DEG = 60.0    # both knees and hips bent past this (degrees from straight): a seat carries the weight


@dataclass(frozen=True, eq=False)
class PhotoScene:
    """People fitted in one photo, placed in one frame in SMPL's axes (Y up, metres): the first
    person's body frame, where they stand as their body stands at rest (pelvis above the origin,
    the lowest ankle or foot joint at its rest height, so the body's own floor is the floor;
    the others on the same floor as far as the fit's depth allows): `poses`, one
    (local_rot (24, 3, 3), trans (3,)) per person, in the order of `fits`; the camera at
    `camera_position` (3,) turned by `camera_rotation` (3, 3) (world from camera frame,
    models/photo/camera.py); `tilt_deg` how far the camera was found tilted from level."""

    poses: tuple
    camera_rotation: np.ndarray
    camera_position: np.ndarray
    tilt_deg: float
    fits: tuple


def to_the_origin(local_rot, trans, rest):
    """(3,) the move that stands a pose (local_rot (24, 3, 3), trans (3,) on rest joints (24, 3))
    at the origin: its pelvis at x = z = 0 and its lowest ankle or foot joint at the rest pose's
    lowest ankle or foot height."""
    posed = forward_kinematics(local_rot, rest, PARENTS, trans).positions
    feet = list(FOOT_INDICES)
    return np.array([-posed[0, 0], rest[feet, 1].min() - posed[feet, 1].min(), -posed[0, 2]])


def _bent(joints, a, b, c):
    """Degrees the chains a-b-c (joint numbers) of joints (..., 24, 3) bend at b (0: straight)."""
    return 180.0 - angle_deg(joints[..., a, :] - joints[..., b, :], joints[..., c, :] - joints[..., b, :])


def seated(joints):
    """Whether poses' joints (..., 24, 3) sit: both knees and both hips bent past SEATED_DEG (the
    hip's bend between the trunk, spine3 to hip, and the thigh); (...) bool."""
    knees = np.minimum(*(_bent(joints, JOINT_INDEX[f"{s}_hip"], JOINT_INDEX[f"{s}_knee"], JOINT_INDEX[f"{s}_ankle"])
                         for s in ("left", "right")))
    hips = np.minimum(*(_bent(joints, JOINT_INDEX["spine3"], JOINT_INDEX[f"{s}_hip"], JOINT_INDEX[f"{s}_knee"])
                        for s in ("left", "right")))
    return (knees > SEATED_DEG) & (hips > SEATED_DEG)


def standing_up(local_rot, trans, rest):
    """(..., 3) unit: which way is up for people posed local_rot (..., 24, 3, 3), trans (..., 3)
    on rest joints (24, 3), in the poses' frame (the camera's, for a fit). A body balances over
    its feet: up runs from the feet (the ankle and ball joints' mean) to the centre of mass (the
    open body's segment masses scaled to `rest`, models.ik.cost). Seated (`seated`) a seat
    carries the weight and the shins stand upright: their mean direction, ankle to knee. Legs
    the photo did not show count as the fit placed them
    (docs/training_log.md, "Which way is up"); scripts/benchmark_photo.py's up_deg measures it."""
    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    joints = fk.positions
    feet = unit(centre_of_mass(fk, default_parts(rest).segments) - joints[..., list(FOOT_INDICES), :].mean(axis=-2))
    shins = unit(sum(unit(joints[..., k, :] - joints[..., a, :]) for a, k in SHINS))
    return np.where(seated(joints)[..., None], shins, feet)


def photo_up(fit, rest):
    """(3,) unit: which way is up for one ImageFit on rest joints (24, 3), in the camera's frame.
    standing_up where the photo shows both legs (both knees and ankles `confident`); else the
    camera's own up, a camera held level: where MediaPipe is unsure of a leg the feet say
    nothing sure of the floor (docs/training_log.md, "Which way is up")."""
    if np.asarray(fit.confident)[np.ravel(SHINS)].all():
        return standing_up(fit.local_rot, fit.trans, rest)
    return np.array([0.0, 1.0, 0.0])


def photo_scene(fits, rest_joints):
    """Place ImageFits of one photo (each person's rest joints in `rest_joints`, one (24, 3)
    each) in a PhotoScene. The camera's tilt is taken from the people, who stand on their feet:
    the world's up is the mean of each one's up (`photo_up`: from their feet to their centre
    of mass, or along their shins when they sit; the camera's own up where the photo does not
    surely show both legs), weighted by their box diagonals, and
    the camera is turned from its own frame by the shortest rotation that makes that up the
    world's (a person bent forward or walking keeps a level camera level). With two people
    or more, that up is turned toward the one that puts every person's lowest foot on one plane,
    the more so the further apart they stand (FLOOR_TRUST). The floor is at
    the first person's lowest ankle or foot joint less its height at rest; every person keeps the
    depth the fit found from their size in the image, so the people stand where the camera sees
    them, nearer or further (a person's own floor may differ by the fit's depth error).
    SmplIkError when `fits` is empty."""
    fits, rests = tuple(fits), [np.asarray(r, dtype=np.float64) for r in rest_joints]
    if not fits:
        raise SmplIkError("no people to place")
    weights = np.array([f.box_diagonal_px for f in fits])
    up = unit(sum(w * photo_up(f, r) for w, f, r in zip(weights, fits, rests)))
    if len(fits) > 1:   # people stand on one floor: the up that puts their feet on one plane
        lowest = np.array([f.joints[list(FOOT_INDICES)][np.argmin(f.joints[list(FOOT_INDICES)] @ up)] for f in fits])
        spread = lowest[1:] - lowest[0]
        up = unit(np.linalg.solve(spread.T @ spread + FLOOR_TRUST * np.eye(3), FLOOR_TRUST * up))
    turn = shortest_arc(up, np.array([0.0, 1.0, 0.0]))
    first, rest0 = fits[0], rests[0]
    joints = first.joints @ turn.T
    feet = list(FOOT_INDICES)
    shift = -np.array([joints[0, 0], joints[feet, 1].min() - rest0[feet, 1].min(), joints[0, 2]])
    poses = []
    for f, rest in zip(fits, rests):
        local = f.local_rot.copy()
        local[0] = turn @ local[0]
        # the root turns about the rest pelvis: trans moves with the pelvis
        pelvis = turn @ (rest[0] + f.trans) + shift
        poses.append((local, pelvis - rest[0]))
    tilt = float(np.degrees(np.arccos(np.clip(up[1], -1.0, 1.0))))
    return PhotoScene(poses=tuple(poses), camera_rotation=turn, camera_position=shift, tilt_deg=tilt, fits=fits)

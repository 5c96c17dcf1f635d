"""A body fitted to a detected person through the camera, in plain numpy: from a start pose
(models.photo.start) a damped Gauss-Newton descent moves every joint's rotation and the root's
translation until the body's keypoints land on the detection's in the image."""
from dataclasses import dataclass

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.metrics import angle_deg
from ..core.rotations import axis_angle_to_matrix, matrix_to_axis_angle
from ..core.skeleton import JOINT_INDEX, NUM_JOINTS, PARENTS
from ..ik.limits import clamp_to_limits
from ..ik.pose_prior import load_pose_prior
from .camera import solve_root_translation
from .keypoints import BODY_HEAD_LANDMARKS, KEYPOINTS, MP_HEAD_KEYPOINTS, body_points
from .start import MIN_JOINTS, PhotoPose, lifter_pose, lifter_targets, pose_from_detection, warm_start
from .targets import smpl_targets

# The scales of the fit's terms (fit_to_image's docstring); lengths in the image are shares of the box diagonal.
ROBUST_SCALE = 0.03      # a keypoint this far off counts half (Cauchy)
PRIOR_EQUALS = 0.02      # a keypoint this far off costs as much as PRIOR_SIGMA or DEPTH_SIGMA
PRIOR_SIGMA = 3.0        # radians a joint turns from the start pose, weighed as PRIOR_EQUALS
DEPTH_SIGMA = 0.15       # metres a joint's depth from the pelvis is off the photo's reading, as PRIOR_EQUALS
# The lifter's share of the depth reading, MediaPipe's the rest (docs/training_log.md, "Photo fit: depth reading")
LIFTER_SHARE = 0.5
# MediaPipe's 3D face read for the head's turn, times the joints' weight (docs/training_log.md, "Photo fit: face")
FACE_DEPTH_WEIGHT = 3.0
HEAD_JOINT = JOINT_INDEX["head"]
# The pose prior's weight left once the fit has settled, a share (docs/training_log.md, "Photo fit: prior floor")
PRIOR_FLOOR = 0.3
# The pose prior's residuals times this weigh as PRIOR_EQUALS (docs/training_log.md, "Photo fit: prior weight")
POSE_PRIOR_WEIGHT = 0.2
# Keypoints the detector is less sure of are not fitted (docs/training_log.md, "Photo fit: unsure keypoints")
MIN_CONFIDENCE = 0.05
# Chest-to-camera degrees over which the head turns to the prior's (docs/training_log.md, "Photo fit: from behind")
BEHIND_DEG = (105.0, 135.0)
FIT_ITERATIONS = 40      # descent steps of a cold fit, at most
STEP_EPS = 1e-5          # radians / metres: the finite-difference step of the Jacobian


@dataclass(frozen=True, eq=False)
class FitOptions:
    """How fit_to_image fits. min_visibility: joints the detector is less sure of are left to
    the prior in the start pose; start: None (a cold fit, from the lifter's pose or the lift)
    or a pose (local_rot (24, 3, 3), trans (3,)) in the camera's frame to start from, such as
    a video's previous frame (a warm start); iterations: the most descent steps taken; lifter:
    the lifter whose reading of the depths joins MediaPipe's (a PhotoLifter, or any callable
    taking its features; None: the shipped weights)."""

    min_visibility: float = 0.5
    start: tuple | None = None
    iterations: int = FIT_ITERATIONS
    lifter: object = None


@dataclass(frozen=True, eq=False)
class ImageFit:
    """A body fitted to a person through a camera. In the camera's frame (models/photo/camera.py:
    camera at the origin looking down -Z, +Y up, +X right): local_rot (24, 3, 3) (the root's
    rotation is the body's turn relative to the camera), trans (3,) SMPL's root translation for
    the rest joints fitted, joints (24, 3) the posed joints; projected (24, 2) their pixels;
    camera the Camera; confident (24,) the joints the photo showed; keypoint_error_px (K,) each
    fitted keypoint's distance from its detection (NaN where not fitted) and keypoints (K,) the
    MediaPipe landmark numbers they stand for; box_diagonal_px the person's; start the PhotoPose
    the descent started from (the lifter's pose, the lift, or a warm start); iterations taken;
    notes."""

    local_rot: np.ndarray
    trans: np.ndarray
    joints: np.ndarray
    projected: np.ndarray
    camera: object
    confident: np.ndarray
    keypoint_error_px: np.ndarray
    keypoints: tuple
    box_diagonal_px: float
    start: PhotoPose
    iterations: int
    notes: tuple = ()


@dataclass(frozen=True, eq=False)
class _Terms:
    """The cost fit_to_image's descent minimises for one person: the fitted keypoints' `points`
    (AttachedPoints), `observed` (K, 2) pixels and `weight` (K,), the box `diagonal` (pixels);
    `start_t` (23, 3, 3) the start pose's non-root rotations transposed; `seen` the start's
    confident joints and `lifted_depth` their depths from the pelvis as the photo reads them
    (metres); `face_depth` None or (rows of the face's keypoints, their depths from the head
    joint); `pose_prior` (None when POSE_PRIOR_WEIGHT is 0); `warm` a warm start."""

    rest: np.ndarray
    camera: object
    points: object
    observed: np.ndarray
    weight: np.ndarray
    diagonal: float
    start_t: np.ndarray
    seen: np.ndarray
    lifted_depth: np.ndarray
    face_depth: tuple | None
    pose_prior: object
    warm: bool

    def pose_scale_at(self, step):
        """The pose prior's scale at descent step `step` (from 1): it eases off as the fit
        settles, to PRIOR_FLOOR of it; a warm start has settled already."""
        return PRIOR_EQUALS * POSE_PRIOR_WEIGHT * (PRIOR_FLOOR if self.warm else max(PRIOR_FLOOR, 0.8 ** (step - 1)))

    def robust_scale_at(self, step):
        """The robust scale at step `step`: it starts wide (the start can be far off everywhere)
        and narrows to ROBUST_SCALE; a warm start is near already."""
        return ROBUST_SCALE * (1.0 if self.warm else max(1.0, 8.0 * 0.7 ** (step - 1)))

    def residuals(self, local_b, trans_b, pose_scale):
        """(B, R) residuals of B candidate poses, and the 2D error (B, K) in diagonals."""
        fk_b = forward_kinematics(local_b, self.rest, PARENTS, trans_b)
        placed = self.points.positions(fk_b)
        uv = self.camera.project(placed)
        err = (uv - self.observed) / self.diagonal
        err = np.where(np.isfinite(err), err, 10.0)      # behind the camera: far off
        prior = matrix_to_axis_angle(self.start_t @ local_b[:, 1:]).reshape(len(local_b), -1) * \
            (PRIOR_EQUALS / PRIOR_SIGMA)
        depth = (fk_b.positions[:, self.seen, 2] - fk_b.positions[:, :1, 2] - self.lifted_depth) * \
            (PRIOR_EQUALS / DEPTH_SIGMA)
        extra = [prior, depth]
        if self.face_depth is not None:
            rows, reading = self.face_depth
            own = placed[:, rows, 2] - fk_b.positions[:, HEAD_JOINT, None, 2]
            extra.append((own - reading) * (PRIOR_EQUALS / DEPTH_SIGMA) * FACE_DEPTH_WEIGHT)
        if POSE_PRIOR_WEIGHT > 0:
            extra.append(self.pose_prior.residuals(local_b) * pose_scale)
        return err, np.concatenate(extra, axis=1)

    def total(self, err, prior, robust):
        """(r (B, R) every residual, the weighted keypoint errors first; cost (B,) its square)."""
        r = np.concatenate([(err * np.sqrt(self.weight * robust)[:, None]).reshape(len(err), -1), prior], axis=1)
        return r, np.einsum("br,br->b", r, r)


def _starts(detection, rest, camera, options):
    """(start, keyed, begin): the PhotoPose that reads the photo (a warm start's, else the lift,
    pose_from_detection), the lifter's joints (24, 3) (None where it cannot lift the person)
    and the PhotoPose the descent begins from (a warm start's, else the lifter's where it can
    lift the person, else the lift)."""
    warm = options.start is not None
    start = warm_start(detection, rest, options.min_visibility, options.start) if warm else \
        pose_from_detection(detection, rest, options.min_visibility)
    keyed = None
    try:   # the lifter's reading, where it can lift this person
        keyed = lifter_targets(detection, rest, camera, options.lifter)
    except SmplIkError:
        pass
    begin = lifter_pose(keyed, rest, start) if keyed is not None and not warm else start
    return start, keyed, begin


def _fitted_keypoints(detection, rest, body, betas):
    """(points, kept, observed (K, 2), weight (K,)) of the keypoints fitted: body_points and the
    rows of KEYPOINTS kept, their detected pixels and weights (KEYPOINTS' weight times the
    detector's visibility, 0 below MIN_CONFIDENCE or off the image). SmplIkError when fewer
    than MIN_JOINTS have weight."""
    points, kept = body_points(rest, body, betas)
    landmarks = np.array([KEYPOINTS[k][0] for k in kept])
    observed = np.asarray(detection.image_xy, dtype=np.float64)[landmarks]
    confidence = np.asarray(detection.visibility, dtype=np.float64)[landmarks]
    weight = np.array([KEYPOINTS[k][2] for k in kept]) * np.where(confidence >= MIN_CONFIDENCE, confidence, 0.0)
    weight[~np.isfinite(observed).all(axis=1)] = 0.0
    if np.count_nonzero(weight) < MIN_JOINTS:
        raise SmplIkError(f"cannot fit a body to this person: only {np.count_nonzero(weight)} keypoints were "
                          f"seen (at least {MIN_JOINTS} are needed)")
    return points, kept, observed, weight


def _depth_reading(start, rest, keyed, seen, warm):
    """(len(seen),) metres: the `seen` joints' depths from the pelvis as the photo reads them:
    the start pose's (a warm start's: the detection's own targets where it has them), mixed
    with the lifter's joints `keyed` (LIFTER_SHARE) where it lifted the person."""
    lifted = forward_kinematics(start.local_rot, rest, PARENTS, start.trans).positions
    if warm:   # the detection's own depths, about the start's pelvis
        lifted = np.where(np.isfinite(start.targets), start.targets, lifted)
    lifted_depth = lifted[seen, 2] - lifted[0, 2]
    if keyed is not None:   # and the lifter's
        lifted_depth = (1.0 - LIFTER_SHARE) * lifted_depth + LIFTER_SHARE * (keyed[seen, 2] - keyed[0, 2])
    return lifted_depth


def _face_depth(detection, kept):
    """None, or (rows of the face's keypoints among `kept`, (3,) MediaPipe's depths of the
    ears and nose from its head joint, metres) where all three are fitted and read."""
    names = [KEYPOINTS[k][1] for k in kept]
    rows = [names.index(n) for n in BODY_HEAD_LANDMARKS if n in names]
    mp_head = smpl_targets(detection, 0.0)[0][HEAD_JOINT]
    reading = np.asarray(detection.world, dtype=np.float64)[list(MP_HEAD_KEYPOINTS)][:, 2] - mp_head[2]
    if len(rows) == len(MP_HEAD_KEYPOINTS) and np.isfinite(reading).all():
        return rows, reading
    return None


def _descend(terms, local, trans, first, last):
    """Damped Gauss-Newton steps `first`..`last` (the scales follow the step numbers) from
    local (24, 3, 3), trans (3,): (local, trans, the 2D error (K, 2) in diagonals, the last
    step taken). Each step's Jacobian is by finite differences: each joint's rotation turned
    by STEP_EPS about each axis (the root in the camera's frame, the others in their own),
    then the translation moved along each."""
    n = 3 * NUM_JOINTS + 3
    eye = np.eye(3)
    turns = axis_angle_to_matrix(STEP_EPS * eye)
    damping = 1e-3
    pose_scale = terms.pose_scale_at(first)
    err, prior = terms.residuals(local[None], trans[None], pose_scale)
    taken = first - 1
    for taken in range(first, last + 1):
        if terms.pose_scale_at(taken) != pose_scale:   # the current pose's cost at the new scale
            pose_scale = terms.pose_scale_at(taken)
            err, prior = terms.residuals(local[None], trans[None], pose_scale)
        dist = np.linalg.norm(err[0], axis=1)
        robust = 1.0 / (1.0 + (dist / terms.robust_scale_at(taken)) ** 2)
        r0, cost = terms.total(err, prior, robust)
        cand_local = np.repeat(local[None], n, axis=0)
        cand_trans = np.repeat(trans[None], n, axis=0)
        for j in range(NUM_JOINTS):
            for a in range(3):
                c = 3 * j + a
                cand_local[c, j] = turns[a] @ local[j] if j == 0 else local[j] @ turns[a]
        cand_trans[3 * NUM_JOINTS:] += STEP_EPS * eye
        r_c, _ = terms.total(*terms.residuals(cand_local, cand_trans, pose_scale), robust)
        jac = (r_c - r0[0]).T / STEP_EPS                          # (R, n)
        jtj, jtr = jac.T @ jac, jac.T @ r0[0]
        while True:
            step = -np.linalg.solve(jtj + damping * (np.diag(np.diag(jtj)) + 1e-9 * np.eye(n)), jtr)
            rot = axis_angle_to_matrix(step[:3 * NUM_JOINTS].reshape(NUM_JOINTS, 3))
            new_local = local @ rot
            new_local[0] = rot[0] @ local[0]
            new_local = clamp_to_limits(new_local)
            new_trans = trans + step[3 * NUM_JOINTS:]
            new_err, new_prior = terms.residuals(new_local[None], new_trans[None], pose_scale)
            _, new_cost = terms.total(new_err, new_prior, robust)
            if new_cost[0] < cost[0]:
                break
            damping *= 10.0
            if damping > 1e6:
                break
        if new_cost[0] >= cost[0]:
            break
        improvement = (cost[0] - new_cost[0]) / max(cost[0], 1e-12)
        local, trans, err, prior = new_local, new_trans, new_err, new_prior
        damping = max(damping / 10.0, 1e-6)
        if improvement < 1e-6:
            break
    return local, trans, err[0], taken


def fit_to_image(detection, rest, camera, body=None, betas=None, options=FitOptions()):
    """Fit a body with rest joints `rest` (24, 3), metres, to a Detection through `camera` (a
    models.photo.camera.Camera); returns an ImageFit in the camera's frame (camera at the
    origin looking down -Z, +Y up). body (a BodyModel, optional) and its betas (10,) give the
    surface points the face, heel, toe and finger keypoints stand for (without it only joints
    are fitted); options: FitOptions.

    The descent starts from the lifter's pose (models.photo.lifter; where it cannot lift the
    person, the lift: models.photo.start.pose_from_detection), or from options.start (a warm
    start), moved to where its projection best matches the keypoints. It minimises
    - each keypoint's distance in the image from its detection, over the box diagonal,
      weighted by KEYPOINTS' weight, the detector's visibility (none below MIN_CONFIDENCE) and
      a robust Cauchy weight (ROBUST_SCALE);
    - the pose prior's residuals (models.ik.pose_prior), weighted POSE_PRIOR_WEIGHT easing to
      PRIOR_FLOOR of it;
    - each joint's turn from the start pose (PRIOR_SIGMA radians weigh as PRIOR_EQUALS);
    - each seen joint's depth from the pelvis, along the camera's axis, away from the photo's
      reading: MediaPipe's 3D landmarks and the lifter's joints (LIFTER_SHARE) (DEPTH_SIGMA
      metres weigh as PRIOR_EQUALS);
    - the nose's and ears' depths from the head joint away from MediaPipe's 3D face
      (FACE_DEPTH_WEIGHT; not in a warm start).
    Joint rotations stay inside models.ik.limits' ranges after every step. Past BEHIND_DEG the
    neck and head are turned toward the pose prior's mean. The body's size is its shape's: the
    depth comes from how large the person is in the image. A warm start's ImageFit.start is a
    PhotoPose of method "warm" (that pose, and the detection's targets at its pelvis).

    SmplIkError when fewer than MIN_JOINTS joints or keypoints are seen, or a warm start is
    not (24, 3, 3) and (3,)."""
    rest = np.asarray(rest, dtype=np.float64)
    warm = options.start is not None
    start, keyed, begin = _starts(detection, rest, camera, options)
    points, kept, observed, weight = _fitted_keypoints(detection, rest, body, betas)
    x0, y0, x1, y1 = detection.bbox
    diagonal = max(float(np.hypot(x1 - x0, y1 - y0)), 1.0)
    seen = np.flatnonzero(start.confident)
    terms = _Terms(rest=rest, camera=camera, points=points, observed=observed, weight=weight, diagonal=diagonal,
                   start_t=np.swapaxes(begin.local_rot[1:], -1, -2), seen=seen,
                   lifted_depth=_depth_reading(start, rest, keyed, seen, warm),
                   face_depth=_face_depth(detection, kept) if FACE_DEPTH_WEIGHT > 0 and not warm else None,
                   pose_prior=load_pose_prior() if POSE_PRIOR_WEIGHT > 0 else None, warm=warm)
    # the start stands at the origin in SMPL's axes, turned as the camera sees it: its frame is
    # the camera's up to a translation
    local = clamp_to_limits(begin.local_rot)
    fk = forward_kinematics(local, rest, PARENTS, begin.trans)
    trans = begin.trans + solve_root_translation(points.positions(fk), observed, weight, camera)
    local, trans, err, taken = _descend(terms, local, trans, 1, int(options.iterations))

    turned = _head_turned_away(local, trans, rest)
    if turned is not local:   # the face's keypoints measured where the head now is
        local = turned
        err = terms.residuals(local[None], trans[None], terms.pose_scale_at(np.inf))[0][0]
    fk = forward_kinematics(local, rest, PARENTS, trans)
    error_px = np.full(len(KEYPOINTS), np.nan)
    fitted = weight > 0
    error_px[np.array(kept)[fitted]] = np.linalg.norm(err[fitted], axis=1) * diagonal
    return ImageFit(local_rot=local, trans=trans, joints=fk.positions, projected=camera.project(fk.positions),
                    camera=camera, confident=start.confident, keypoint_error_px=error_px,
                    keypoints=tuple(k[0] for k in KEYPOINTS), box_diagonal_px=diagonal, start=begin,
                    iterations=taken)


def facing_away_deg(joints):
    """Degrees between the chest's forward (the shoulders' left-to-right line crossed with the
    pelvis-to-neck line) and the direction from the chest to the camera, for joints (24, 3) in
    the camera's frame (camera at the origin): 0 facing the camera, 180 the back to it."""
    left, right = joints[JOINT_INDEX["left_shoulder"]], joints[JOINT_INDEX["right_shoulder"]]
    up = joints[JOINT_INDEX["neck"]] - joints[JOINT_INDEX["pelvis"]]
    chest = joints[JOINT_INDEX["spine3"]]
    return float(angle_deg(np.cross(left - right, up), -chest))


def _head_turned_away(local_rot, trans, rest):
    """local_rot with the neck and head turned toward the pose prior's mean as far as the body
    faces away from the camera (BEHIND_DEG): seen from behind, the face's keypoints are the
    detector's guesses."""
    low, high = BEHIND_DEG
    away = facing_away_deg(forward_kinematics(local_rot, rest, PARENTS, trans).positions)
    share = float(np.clip((away - low) / (high - low), 0.0, 1.0))
    if share == 0.0:
        return local_rot
    prior = load_pose_prior()
    share = share * share * (3.0 - 2.0 * share)     # eased: no sudden turn as a person turns around
    out = np.array(local_rot, copy=True)
    for joint in (JOINT_INDEX["neck"], JOINT_INDEX["head"]):
        toward = matrix_to_axis_angle(out[joint].T @ prior.mean_rotation(joint))
        out[joint] = out[joint] @ axis_angle_to_matrix(share * toward)
    return out

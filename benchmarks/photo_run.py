"""The photo benchmark's run: labelled people matched to detections, each method's answer, and the report."""
from dataclasses import dataclass

import numpy as np

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.skeleton import JOINT_INDEX, PARENTS
from models.photo import fit as photo_fit
from models.photo.camera import camera_for_image
from models.photo.detect import box_iou, detect_people, read_image
from models.photo.fit import FitOptions
from models.photo.keypoints import DIRECT
from models.photo.lifter import lift_detection
from models.photo.scene import photo_up
from models.photo.start import pose_from_detection
from models.photo.targets import smpl_targets

from .photo_labels import SMPL_JOINTS
from .photo_score import Estimate, method_summary, score
from .report import rounded

METHODS = ("fit", "lift", "lifter", "mediapipe_raw")
MIN_IOU = 0.1            # a labelled person and a detection overlapping less are not the same person
MAX_PEOPLE = 10          # as Pose from Photo's All People (addon/photo/image.py)
OVERLAY = 0.05           # of the detection's box diagonal (the overlay goal)
VISIBLE = 0.5            # MediaPipe visibility of a keypoint counted as seen
# MediaPipe landmarks and open-body landmarks of the face points (left/right the person's)
MEDIAPIPE_FACE = {"nose": 0, "left_ear": 7, "right_ear": 8}
BODY_FACE = {"nose": "nose", "left_ear": "lear", "right_ear": "rear"}


@dataclass(frozen=True)
class PhotoSetup:
    """What the methods pose and detect with: body (a BodyModel), rest (24, 3) its rest joints,
    offsets its head_offsets; lifter a PhotoLifter for the fit and the lifter row (None: the
    shipped one); landmarker as detect_people's (None: the shipped detector)."""

    body: object
    rest: np.ndarray
    offsets: dict
    lifter: object = None
    landmarker: object = None

    @classmethod
    def of(cls, body, lifter=None, landmarker=None):
        """The setup of `body` at zero betas."""
        rest = body.rest_joints(np.zeros(10))
        return cls(body, rest, head_offsets(body, rest), lifter, landmarker)


def labelled_person(detections, box):
    """(the detection best overlapping `box`, its IoU), or (None, best IoU) below MIN_IOU."""
    return match_people(detections, [box])[0]


def match_people(detections, boxes):
    """[(detection or None, IoU)] per labelled box: one detection per box at most, the pairs of
    largest intersection over union taken first; a box left without one at MIN_IOU gets None
    and its best IoU with any detection."""
    iou = np.array([[box_iou(d.bbox, b) for d in detections] for b in boxes]).reshape(len(boxes), len(detections))
    out = [(None, float(row.max(initial=0.0))) for row in iou]
    free = iou.copy()
    while free.size and free.max() >= MIN_IOU:
        b, d = np.unravel_index(int(np.argmax(free)), free.shape)
        out[b] = (detections[d], float(iou[b, d]))
        free[b, :] = -1.0
        free[:, d] = -1.0
    return out


def head_offsets(body, rest):
    """name -> (3,) rest offset from SMPL's head joint of the head top (the crown vertex) and
    the face landmarks the body has; they turn with the head joint."""
    verts = body.v_template
    points = {"head_top": verts[int(np.argmax(verts[:, 1]))]}
    points.update({n: verts[body.landmarks[lm]] for n, lm in BODY_FACE.items() if lm in body.landmarks})
    return {n: p - rest[JOINT_INDEX["head"]] for n, p in points.items()}


def smpl_points(joints, world_rot, offsets):
    """name -> (3,) of posed SMPL joints (24, 3) and their world rotations (24, 3, 3): the
    joints of SMPL_JOINTS and the head points of `offsets` carried by the head joint."""
    points = {n: joints[JOINT_INDEX[n]] for n in SMPL_JOINTS}
    head = JOINT_INDEX["head"]
    points.update({n: joints[head] + world_rot[head] @ o for n, o in offsets.items()})
    return points


def overlay_share(points_2d, detection):
    """The share of the detection's visible DIRECT keypoints within OVERLAY of its box
    diagonal of points_2d (name -> pixels), or None when it marks none visible."""
    x0, y0, x1, y1 = detection.bbox
    diagonal = np.hypot(x1 - x0, y1 - y0)
    seen = [(n, i) for n, i in DIRECT.items() if detection.visibility[i] >= VISIBLE and n in points_2d]
    if not seen or diagonal <= 0:
        return None
    off = [np.linalg.norm(points_2d[n] - detection.image_xy[i]) / diagonal for n, i in seen]
    return float(np.mean(np.asarray(off) < OVERLAY))


def mediapipe_points(detection):
    """name -> (3,) of MediaPipe's world landmarks as SMPL joints (smpl_targets) and its face
    landmarks, in the SMPL frame (camera-aligned axes)."""
    positions, _ = smpl_targets(detection)
    points = {n: positions[JOINT_INDEX[n]] for n in SMPL_JOINTS}
    points.update({n: np.asarray(detection.world[i], dtype=np.float64) for n, i in MEDIAPIPE_FACE.items()})
    return points


def projected(points, camera, shift=np.zeros(3)):
    """name -> (2,) pixels of points (name -> (3,), the camera's frame) moved by shift (3,)."""
    return {n: camera.project(p + shift) for n, p in points.items()}


def frame_estimates(detection, path, width, height, setup):
    """(method -> Estimate or the error message, the camera's description) for one detected
    person in the image at `path` (width x height pixels), posed as the PhotoSetup says."""
    body, rest, offsets, lifter = setup.body, setup.rest, setup.offsets, setup.lifter
    out = {}
    camera = camera_for_image(path, width, height)   # a user's camera, never the labels' intrinsics
    fitted = None
    try:
        fitted = photo_fit.fit_to_image(detection, rest, camera, body=body, options=FitOptions(lifter=lifter))
        rot = forward_kinematics(fitted.local_rot, rest, PARENTS).rotations
        points = smpl_points(np.asarray(fitted.joints, dtype=np.float64), rot, offsets)
        flat = projected(points, fitted.camera)
        up = photo_up(fitted, rest)
        out["fit"] = Estimate(points, flat, overlay_share(flat, detection), up)
    except SmplIkError as exc:
        out["fit"] = str(exc)
    try:
        pose = pose_from_detection(detection, rest)
        fk = forward_kinematics(pose.local_rot, rest, PARENTS, pose.trans)
        points = smpl_points(fk.positions, fk.rotations, offsets)
        flat = None
        if fitted is not None:   # the lift's pelvis onto the fit's, through the fit's camera
            flat = projected(points, fitted.camera, np.asarray(fitted.joints[0]) - fk.positions[0])
        out["lift"] = Estimate(points, flat)
    except SmplIkError as exc:
        out["lift"] = str(exc)
    try:
        lifted = lift_detection(detection, camera, lifter)
        out["lifter"] = Estimate({n: lifted[JOINT_INDEX[n]] for n in SMPL_JOINTS})
    except SmplIkError as exc:
        out["lifter"] = str(exc)
    try:
        out["mediapipe_raw"] = Estimate(mediapipe_points(detection),
                                        {n: detection.image_xy[i] for n, i in DIRECT.items()})
    except SmplIkError as exc:
        out["mediapipe_raw"] = str(exc)
    used = fitted.camera if fitted is not None else camera
    return out, {"from": "camera_for_image", "focal_px": float(used.focal_px)}


def run_image(image, frames, setup):
    """The per-frame records of the LabelledFrames of one image: found, IoU, camera and each
    method's figures (or the error), with a PhotoSetup."""
    records = [{"image": f.image.name, **({} if f.person is None else {"person": f.person}), "found": False}
               for f in frames]
    try:
        rgb = read_image(image)
        matched = match_people(detect_people(rgb, max_people=MAX_PEOPLE, landmarker=setup.landmarker),
                               [f.box for f in frames])
    except SmplIkError as exc:
        for record in records:
            record["error"] = str(exc)
        return records
    height, width = rgb.shape[:2]
    for frame, record, (person, overlap) in zip(frames, records, matched):
        record["iou"] = overlap
        if person is None:
            continue
        estimates, camera = frame_estimates(person, frame.image, width, height, setup)
        record.update(found=True, camera=camera,
                      methods={m: score(e, frame) if isinstance(e, Estimate) else {"error": e}
                               for m, e in estimates.items()})
    return records


def run_frames(frames, setup):
    """The per-frame records of every LabelledFrame, in their order (each image read once),
    with a PhotoSetup."""
    images = {}
    for i, frame in enumerate(frames):
        images.setdefault(frame.image, []).append(i)
    records = [None] * len(frames)
    for image, order in images.items():
        for i, record in zip(order, run_image(image, [frames[i] for i in order], setup)):
            records[i] = record
    return records


def photo_report(frames, body, data, lifter=None, lifter_path=None):
    """The benchmark's report on LabelledFrames (scripts/benchmark_photo.py --help), rounded:
    {"frames", "found", "data", ("lifter": lifter_path,) "camera", "methods", "per_frame"}; body:
    the open body the methods pose (at zero betas); lifter: as frame_estimates."""
    per_frame = run_frames(frames, PhotoSetup.of(body, lifter))
    found = sum(f["found"] for f in per_frame)
    methods = {m: method_summary(per_frame, m) for m in METHODS}
    if "pck2d_gt" not in methods["lift"]:
        methods["lift"]["pck2d_gt_missing"] = "the lift is projected through the fit's camera; no fit ran"
    skipped = {f["methods"]["fit"]["error"] for f in per_frame if f["found"] and "error" in f["methods"]["fit"]}
    if found and not methods["fit"]["frames"] and len(skipped) == 1:
        methods["fit"] = {"frames": 0, "skipped": skipped.pop()}
    cameras = sorted({f["camera"]["from"] for f in per_frame if f["found"]})
    return rounded({"frames": len(per_frame), "found": found, "data": str(data),
                    **({} if lifter_path is None else {"lifter": str(lifter_path)}),
                    "camera": cameras[0] if len(cameras) == 1 else cameras,
                    "methods": methods, "per_frame": per_frame})

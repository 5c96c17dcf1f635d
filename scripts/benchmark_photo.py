"""Benchmark pose from a photo against labelled frames: the camera-matched fit, today's lift,
the lifter alone and MediaPipe's own 3D landmarks, in one run over the same frames.

    python scripts/benchmark_photo.py --data DIR --json OUT [--max-frames N]

DIR holds images and their labels in one of the layouts ../shared/data/images/labelled/README.md
describes:
  labels.json     (the 3dhp/ set) per frame `image`, `joints_3d_camera_m` (OpenCV camera axes:
                  x right, y down, z forward; optional), `joints_2d_px`, `visible_3d` /
                  `visible_2d` (all visible when absent) and the person's box `bbox_center_px`,
                  `bbox_scale_200px` (a square, 200 x scale pixels a side), with the joints named
                  in `joint_names` in any order; names this script does not use are ignored;
                  optionally `up_camera`, the floor's up (3 numbers, the same axes as the joints)
  keypoints.json  2D labels only: COCO's format (the coco/ set; one frame per annotated person
                  with any keypoint labelled, hidden ones (v = 1) counted as placed, the box
                  COCO's `bbox`) or MPII's list (the mpii/ set; the box as labels.json's, from
                  `center` and `scale`)
A frame is one labelled person. The labels' camera intrinsics are never used: the fit gets the
camera a user would get, models.photo.camera.camera_for_image (default_camera where that is
not there yet). --max-frames N takes N frames spread evenly over the file's order (all).

Each image is read with OpenCV and its people found by the detector (models.photo.detect, up to
MAX_PEOPLE as Pose from Photo's All People looks for); each labelled person is matched to one
detection, pairs taken by the largest intersection over union of their boxes first, found
when that is at least MIN_IOU. A frame without one counts in `frames` but not in `found`;
every figure is over the found frames.

Methods (all in the camera's axes: +X right, +Y up, +Z toward the camera; the labels' OpenCV
coordinates (x, y, z) become (x, -y, -z)):
  fit            models.photo.fit.fit_to_image(detection, rest, camera, body): the body fitted
                 to the 2D keypoints through the camera (skipped, with the reason, when it
                 fails on every found frame for one reason)
  lift           models.photo.fit.pose_from_detection: today's pose, MediaPipe's 3D directions
                 on the body (its joints by forward kinematics; it stands at the origin)
  lifter         models.photo.lifter.lift_detection: the joints the lifter answers from the 2D
                 keypoints alone, through the same camera (no head points: no head figure)
  mediapipe_raw  MediaPipe's world landmarks as SMPL joints (models.photo.fit.smpl_targets: the
                 limb joints are the landmarks, the neck comes from the shoulders and hips);
                 in 2D its keypoints themselves (no neck: MediaPipe has none), the detector's
                 own figure beside the fit's
The body is the open neutral body at zero betas.

Joints compared: shoulders, elbows, wrists, knees, ankles and the neck (SMPL's neck joint
against the labelled neck). The dataset's hips sit wider and higher than SMPL's, so they are
not compared; both sides are aligned on the midpoint of their hips instead (the labelled hips
against SMPL's hip joints), which is what "pelvis-aligned" means here. Only joints visible in
the labels (visible_3d, or visible_2d for the 2D figure) count. Figures per method:
  mpjpe_mm       mean distance of the compared joints after aligning the hip midpoints (mm)
  pa_mpjpe_mm    the same after the best similarity transform of the compared joints (mm)
  limb_deg       mean angle between the method's and the labels' upper arms (shoulder->elbow),
                 forearms (elbow->wrist), thighs (hip->knee) and shins (knee->ankle), both
                 sides, in the camera's axes with no alignment (every method is turned as the
                 camera sees the person); limb_deg_by_limb splits it by limb. Thighs start at
                 the hips, so the labelled hips' offset enters them (a few degrees)
  pck2d_gt       (fit, lift) fraction of the compared joints whose projection lies within 0.1
                 of the labels' box diagonal (side x sqrt 2) of their labelled 2D place. The fit
                 is projected through its own camera; the lift, which stands at the origin,
                 through the fit's camera after moving its pelvis onto the fit's pelvis (no
                 figure without a fit); err2d_px beside it, their mean distance in pixels
                 (the labels' box is padded, in 3DHP about 1.2 times the joints' extent, so PCK@0.1
                 is lenient; COCO's boxes are tight, so there it is strict)
  overlay_mp     (fit) the issue's overlay figure: the share of MediaPipe's keypoints of the
                 limbs and hips (models.photo.fit.DIRECT) that it marks visible (VISIBLE) lying
                 within OVERLAY of the detection's box diagonal of the fitted joint's projection
  head_deg       (fit, lift) angle between the head's forward direction and the labels'.
                 Forward is built the same way on both sides from the points the labels have:
                 with a nose and both ears, from the ears' midpoint to the nose ("face"); else,
                 with the head top, neck and both shoulders, cross(left - right shoulder,
                 head top - neck) ("crown": perpendicular to the head's axis, level with the
                 shoulders, so it sees the head bow, lift and tilt, not turn left or right). On
                 SMPL the head top is the crown vertex (the rest mesh's highest point), the nose
                 and ears the open body's landmarks, each carried by the head joint's rotation.
                 The labels' `head` joint is not used: in 3DHP it lies on the neck->head-top
                 chain, 1-5 cm off the line, so the plane it makes with them is ill-defined.
                 mediapipe_raw has no head top, so no crown figure
  up_deg         (fit, where the labels have `up_camera`) angle between the floor's up as Pose
                 from Photo takes it from the person (models.photo.fit.photo_up: how the
                 camera's tilt is found) and the labelled up
Each figure is the mean over frames of the per-frame figure (frames where a method fails or a
figure cannot be measured are left out of that figure; `frames` per method counts the frames
it scored). Writes JSON {"frames": N, "found": M, "data": DIR, "camera": ..., "methods": {NAME:
{...}}, "per_frame": [...]} (with --lifter FILE also "lifter": FILE, the weights the fit and
the lifter row used) and prints a table.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # the machines these run on are shared

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.body.model import load_body_model  # noqa: E402
from models.core.errors import SmplIkError  # noqa: E402
from models.core.files import write_json  # noqa: E402
from models.core.kinematics import forward_kinematics  # noqa: E402
from models.core.metrics import aligned_error, angle_deg, pck, procrustes_error  # noqa: E402
from models.core.rotations import unit  # noqa: E402
from models.core.skeleton import JOINT_INDEX, PARENTS  # noqa: E402
from models.photo.camera import camera_for_image  # noqa: E402
from models.photo.detect import box_iou  # noqa: E402
from models.photo.lifter import PhotoLifter, lift_detection  # noqa: E402

METHODS = ("fit", "lift", "lifter", "mediapipe_raw")
MIN_IOU = 0.1
MAX_PEOPLE = 10          # as Pose from Photo's All People (addon/photo/image.py)
PCK_FRACTION = 0.1
OVERLAY = 0.05           # of the detection's box diagonal (the overlay goal)
VISIBLE = 0.5            # MediaPipe visibility of a keypoint counted as seen
COCO_NAMES = ("nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
              "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip",
              "left_knee", "right_knee", "left_ankle", "right_ankle")
MPII_NAMES = ("right_ankle", "right_knee", "right_hip", "left_hip", "left_knee", "left_ankle", "pelvis",
              "thorax", "upper_neck", "head_top", "right_wrist", "right_elbow", "right_shoulder",
              "left_shoulder", "left_elbow", "left_wrist")
SIDES = ("left", "right")
COMPARED = tuple(f"{s}_{j}" for j in ("shoulder", "elbow", "wrist", "knee", "ankle") for s in SIDES) + ("neck",)
HIPS = ("left_hip", "right_hip")
LIMBS = {"upper_arm": ("shoulder", "elbow"), "forearm": ("elbow", "wrist"),
         "thigh": ("hip", "knee"), "shin": ("knee", "ankle")}
FACE = ("nose", "left_ear", "right_ear")
CROWN = ("head_top", "neck", "left_shoulder", "right_shoulder")
SMPL_JOINTS = COMPARED + HIPS          # label name = SMPL joint name
# MediaPipe landmarks and open-body landmarks of the face points (left/right the person's)
MEDIAPIPE_FACE = {"nose": 0, "left_ear": 7, "right_ear": 8}
BODY_FACE = {"nose": "nose", "left_ear": "lear", "right_ear": "rear"}
USED = frozenset(SMPL_JOINTS + FACE + CROWN)
OPENCV_TO_CAMERA = np.array([1.0, -1.0, -1.0])
FIGURES = ("mpjpe_mm", "pa_mpjpe_mm", "limb_deg", "pck2d_gt", "err2d_px", "overlay_mp", "head_deg", "up_deg")


@dataclass(frozen=True)
class LabelledFrame:
    """One labelled image: joints_3d name -> (3,) metres in the camera's axes (+Y up, +Z toward
    the camera) and joints_2d name -> (2,) pixels, the visible ones of the names USED; box
    (x0, y0, x1, y1) pixels; up (3,) unit, the floor's up in the camera's axes (None: not
    labelled)."""

    image: Path
    joints_3d: dict
    joints_2d: dict
    box: tuple
    person: int | None = None     # which labelled person of a photo with several
    up: np.ndarray | None = None

    @property
    def box_diagonal_px(self):
        x0, y0, x1, y1 = self.box
        return float(np.hypot(x1 - x0, y1 - y0))


@dataclass(frozen=True)
class Estimate:
    """A method's answer on one frame: points_3d name -> (3,) in the camera's axes (the names
    of SMPL_JOINTS, FACE and head_top that the method has), points_2d name -> (2,) pixels (or
    None without a projection)."""

    points_3d: dict
    points_2d: dict | None = None
    overlay: float | None = None
    up: np.ndarray | None = None


def _visible(frame, key, count):
    values = frame.get(key)
    if values is None:
        return np.ones(count, dtype=bool)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.shape != (count,):
        raise ValueError(f"{key} has {values.size} entries for {count} joints")
    return values > 0


def _named(frame, key, visible_key, names, width, scale=None):
    if frame.get(key) is None:
        return {}
    values = np.asarray(frame[key], dtype=np.float64)
    if values.shape != (len(names), width):
        raise ValueError(f"{key} is {values.shape}, expected ({len(names)}, {width})")
    if scale is not None:
        values = values * scale
    seen = _visible(frame, visible_key, len(names)) & np.isfinite(values).all(axis=1)
    return {n: values[i] for i, n in enumerate(names) if n in USED and seen[i]}


def read_labels(folder):
    """LabelledFrame per labelled person of folder/labels.json, or of folder/keypoints.json in
    COCO's or MPII's layout (see the module docstring)."""
    folder = Path(folder)
    path = folder / "labels.json"
    if not path.exists() and (folder / "keypoints.json").exists():
        path = folder / "keypoints.json"
    try:
        data = json.loads(path.read_text())
        if path.name == "keypoints.json":
            return _coco_frames(data, folder) if isinstance(data, dict) else _mpii_frames(data, folder)
        names = [str(n) for n in data["joint_names"]]
        frames = []
        for entry in data["frames"]:
            frames.append(LabelledFrame(
                image=path.parent / entry["image"],
                joints_3d=_named(entry, "joints_3d_camera_m", "visible_3d", names, 3, OPENCV_TO_CAMERA),
                joints_2d=_named(entry, "joints_2d_px", "visible_2d", names, 2),
                box=_square_box(entry["bbox_center_px"], entry["bbox_scale_200px"]), up=_up(entry)))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{path}: cannot read the labels ({type(exc).__name__}: {exc})") from None
    return frames


def _up(entry):
    """The frame's labelled up (`up_camera`, OpenCV axes) as a unit vector in the camera's axes,
    or None."""
    if entry.get("up_camera") is None:
        return None
    up = np.asarray(entry["up_camera"], dtype=np.float64)
    if up.shape != (3,) or not np.isfinite(up).all() or not np.linalg.norm(up) > 0:
        raise ValueError(f"{entry.get('image')}: up_camera is not 3 finite numbers, not all zero")
    return unit(up * OPENCV_TO_CAMERA)


def _square_box(centre, scale_200px):
    centre, half = np.asarray(centre, dtype=np.float64), 100.0 * float(scale_200px)
    if centre.shape != (2,):
        raise ValueError(f"a box centre is {centre.shape}, expected (2,)")
    return (*(centre - half), *(centre + half))


def _coco_frames(data, folder):
    files = {image["id"]: image["file_name"] for image in data["images"]}
    frames, count = [], {}
    for note in data["annotations"]:
        if note.get("iscrowd", 0) or not note.get("num_keypoints", 1):
            continue
        xyv = np.asarray(note["keypoints"], dtype=np.float64).reshape(len(COCO_NAMES), 3)
        x, y, w, h = (float(v) for v in note["bbox"])
        image = files[note["image_id"]]
        frames.append(LabelledFrame(
            image=folder / image, joints_3d={},
            joints_2d=_named({"xy": xyv[:, :2], "seen": xyv[:, 2]}, "xy", "seen", COCO_NAMES, 2),
            box=(x, y, x + w, y + h), person=count.setdefault(image, 0)))
        count[image] += 1
    return frames


def _mpii_frames(data, folder):
    return [LabelledFrame(image=folder / entry["image"], joints_3d={},
                          joints_2d=_named(entry, "joints", "joints_vis", MPII_NAMES, 2),
                          box=_square_box(entry["center"], entry["scale"]))
            for entry in data]


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


# --- the methods' points ------------------------------------------------------------------
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
    from models.photo.fit import DIRECT

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
    from models.photo.fit import smpl_targets

    positions, _ = smpl_targets(detection)
    points = {n: positions[JOINT_INDEX[n]] for n in SMPL_JOINTS}
    points.update({n: np.asarray(detection.world[i], dtype=np.float64) for n, i in MEDIAPIPE_FACE.items()})
    return points


def projected(points, camera, shift=np.zeros(3)):
    return {n: camera.project(p + shift) for n, p in points.items()}


# --- scores -------------------------------------------------------------------------------
def head_forward(points, construction):
    """(3,) unit forward direction of the head by `construction` ("face" or "crown", module
    docstring), or None when a point it needs is missing."""
    need = FACE if construction == "face" else CROWN
    if construction is None or any(n not in points for n in need):
        return None
    if construction == "face":
        return unit(points["nose"] - 0.5 * (points["left_ear"] + points["right_ear"]))
    return unit(np.cross(points["left_shoulder"] - points["right_shoulder"], points["head_top"] - points["neck"]))


def head_construction(labels):
    """Which forward direction the labelled points allow: "face", "crown" or None."""
    if all(n in labels for n in FACE):
        return "face"
    return "crown" if all(n in labels for n in CROWN) else None


def score(estimate, frame):
    """Per-frame figures (module docstring) of an Estimate against a LabelledFrame: a dict of
    the figures that could be measured (mm, degrees, fractions) and limbs_deg per limb."""
    out = {}
    g3, p3 = frame.joints_3d, estimate.points_3d
    joints = [n for n in COMPARED if n in g3 and n in p3]
    if joints and all(n in g3 and n in p3 for n in HIPS):
        p = np.array([p3[n] for n in joints])
        g = np.array([g3[n] for n in joints])
        mid_p = 0.5 * (p3["left_hip"] + p3["right_hip"])
        mid_g = 0.5 * (g3["left_hip"] + g3["right_hip"])
        out["mpjpe_mm"] = 1000.0 * float(aligned_error(p, g, mid_p, mid_g))
        if len(joints) >= 3:
            out["pa_mpjpe_mm"] = 1000.0 * float(procrustes_error(p, g))
    limbs = {}
    for limb, (a, b) in LIMBS.items():
        for s in SIDES:
            ja, jb = f"{s}_{a}", f"{s}_{b}"
            if all(n in g3 and n in p3 for n in (ja, jb)):
                limbs[f"{s}_{limb}"] = float(angle_deg(p3[jb] - p3[ja], g3[jb] - g3[ja]))
    if limbs:
        out["limb_deg"] = float(np.mean(list(limbs.values())))
        out["limbs_deg"] = limbs
    construction = head_construction(g3)
    mine, theirs = head_forward(p3, construction), head_forward(g3, construction)
    if mine is not None and theirs is not None:
        out["head_deg"] = float(angle_deg(mine, theirs))
        out["head_construction"] = construction
    if estimate.points_2d is not None:
        seen = [n for n in COMPARED if n in frame.joints_2d and n in estimate.points_2d]
        if seen:
            flat = np.array([estimate.points_2d[n] for n in seen])
            true = np.array([frame.joints_2d[n] for n in seen])
            out["pck2d_gt"] = float(pck(flat, true, PCK_FRACTION * frame.box_diagonal_px))
            distance = np.linalg.norm(flat - true, axis=-1)
            if np.isfinite(distance).any():
                out["err2d_px"] = float(np.nanmean(distance))
    if estimate.overlay is not None:
        out["overlay_mp"] = estimate.overlay
    if estimate.up is not None and frame.up is not None:
        out["up_deg"] = float(angle_deg(estimate.up, frame.up))
    return out


def summary(per_frame, method):
    """Mean over the frames of each per-frame figure of `method`; frames scored; failures."""
    scored = [f["methods"][method] for f in per_frame if f["found"]]
    good = [s for s in scored if "error" not in s]
    out = {"frames": len(good)}
    for name in FIGURES:
        values = [s[name] for s in good if name in s]
        if values:
            out[name] = float(np.mean(values))
    by_limb = {}
    for limb in LIMBS:
        values = [v for s in good for k, v in s.get("limbs_deg", {}).items() if k.endswith(limb)]
        if values:
            by_limb[limb] = float(np.mean(values))
    if by_limb:
        out["limb_deg_by_limb"] = by_limb
    failed = [{"image": f["image"], "error": f["methods"][method]["error"]}
              for f in per_frame if f["found"] and "error" in f["methods"][method]]
    if failed:
        out["failed"] = failed
    return out


# --- the run ------------------------------------------------------------------------------
def frame_estimates(detection, path, width, height, body, rest, offsets, lifter=None):
    """(method -> Estimate or the error message, the camera's description) for one person;
    lifter: a PhotoLifter (None: the shipped one)."""
    from models.photo import fit as photo_fit

    out = {}
    camera = camera_for_image(path, width, height)   # a user's camera, never the labels' intrinsics
    fitted = None
    try:
        fitted = photo_fit.fit_to_image(detection, rest, camera, body=body, lifter=lifter)
        rot = forward_kinematics(fitted.local_rot, rest, PARENTS).rotations
        points = smpl_points(np.asarray(fitted.joints, dtype=np.float64), rot, offsets)
        flat = projected(points, fitted.camera)
        up = photo_fit.photo_up(fitted, rest)
        out["fit"] = Estimate(points, flat, overlay_share(flat, detection), up)
    except SmplIkError as exc:
        out["fit"] = str(exc)
    try:
        pose = photo_fit.pose_from_detection(detection, rest)
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
        from models.photo.fit import DIRECT

        out["mediapipe_raw"] = Estimate(mediapipe_points(detection),
                                        {n: detection.image_xy[i] for n, i in DIRECT.items()})
    except SmplIkError as exc:
        out["mediapipe_raw"] = str(exc)
    used = fitted.camera if fitted is not None else camera
    return out, {"from": "camera_for_image", "focal_px": float(used.focal_px)}


def run_image(image, frames, body, rest, offsets, lifter=None, landmarker=None):
    """The per-frame records of the LabelledFrames of one image: found, IoU, camera and each
    method's figures (lifter: as frame_estimates; landmarker: as detect_people's)."""
    from models.photo.detect import detect_people, read_image

    records = [{"image": f.image.name, **({} if f.person is None else {"person": f.person}), "found": False}
               for f in frames]
    try:
        rgb = read_image(image)
        matched = match_people(detect_people(rgb, max_people=MAX_PEOPLE, landmarker=landmarker),
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
        estimates, camera = frame_estimates(person, frame.image, width, height, body, rest, offsets, lifter)
        record.update(found=True, camera=camera,
                      methods={m: score(e, frame) if isinstance(e, Estimate) else {"error": e}
                               for m, e in estimates.items()})
    return records


def run_frames(frames, body, rest, offsets, lifter=None, landmarker=None):
    """The per-frame records of every LabelledFrame, in their order (each image read once;
    lifter: as frame_estimates; landmarker: as detect_people's)."""
    images = {}
    for i, frame in enumerate(frames):
        images.setdefault(frame.image, []).append(i)
    records = [None] * len(frames)
    for image, order in images.items():
        for i, record in zip(order, run_image(image, [frames[i] for i in order], body, rest, offsets, lifter,
                                              landmarker)):
            records[i] = record
    return records


def rounded(value):
    if isinstance(value, float):
        return round(value, 3) if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="folder of images and labels.json (or keypoints.json)")
    ap.add_argument("--json", type=Path, required=True, help="JSON output")
    ap.add_argument("--max-frames", type=int, default=None, help="frames spread over the labels (default all)")
    ap.add_argument("--lifter", type=Path, default=None,
                    help="lifter weights (scripts/train_lifter.py) for the fit and the lifter rows (default the shipped ones)")
    args = ap.parse_args(argv)
    lifter = None
    if args.lifter is not None:
        try:
            lifter = PhotoLifter.load(args.lifter)
        except SmplIkError as exc:
            raise SystemExit(str(exc))

    frames = read_labels(args.data)
    if args.max_frames is not None and args.max_frames < len(frames):
        keep = np.unique(np.linspace(0, len(frames) - 1, max(args.max_frames, 0)).round().astype(int))
        frames = [frames[i] for i in keep]
    body = load_body_model()
    rest = body.rest_joints(np.zeros(10))
    offsets = head_offsets(body, rest)
    per_frame = run_frames(frames, body, rest, offsets, lifter)
    found = sum(f["found"] for f in per_frame)
    methods = {m: summary(per_frame, m) for m in METHODS}
    if "pck2d_gt" not in methods["lift"]:
        methods["lift"]["pck2d_gt_missing"] = "the lift is projected through the fit's camera; no fit ran"
    skipped = {f["methods"]["fit"]["error"] for f in per_frame if f["found"] and "error" in f["methods"]["fit"]}
    if found and not methods["fit"]["frames"] and len(skipped) == 1:
        methods["fit"] = {"frames": 0, "skipped": skipped.pop()}
    cameras = sorted({f["camera"]["from"] for f in per_frame if f["found"]})
    report = rounded({"frames": len(per_frame), "found": found, "data": str(args.data),
                      **({} if args.lifter is None else {"lifter": str(args.lifter)}),
                      "camera": cameras[0] if len(cameras) == 1 else cameras,
                      "methods": methods, "per_frame": per_frame})
    print(f"{found} of {len(per_frame)} labelled frames found in {args.data}")
    print(f"{'method':15}{'frames':>8}" + "".join(f"{c:>13}" for c in FIGURES))
    for name, r in report["methods"].items():
        cells = "".join(f"{r[c]:>13.3f}" if r.get(c) is not None else f"{'':>13}" for c in FIGURES)
        print(f"{name:15}{r['frames']:>8}{cells}" + (f"  ({r['skipped']})" if "skipped" in r else ""))
    write_json(args.json, report)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""Readers of labelled photos for the photo benchmarks: labels.json (3DHP), COCO's and MPII's keypoints.json."""
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.core.errors import SmplIkError
from models.core.rotations import unit

COCO_NAMES = ("nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
              "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip",
              "left_knee", "right_knee", "left_ankle", "right_ankle")
MPII_NAMES = ("right_ankle", "right_knee", "right_hip", "left_hip", "left_knee", "left_ankle", "pelvis",
              "thorax", "upper_neck", "head_top", "right_wrist", "right_elbow", "right_shoulder",
              "left_shoulder", "left_elbow", "left_wrist")
SIDES = ("left", "right")
# the labelled joints compared with SMPL's joints of the same name, and the hips they are aligned on
COMPARED = tuple(f"{s}_{j}" for j in ("shoulder", "elbow", "wrist", "knee", "ankle") for s in SIDES) + ("neck",)
HIPS = ("left_hip", "right_hip")
FACE = ("nose", "left_ear", "right_ear")                            # the head's "face" forward
CROWN = ("head_top", "neck", "left_shoulder", "right_shoulder")     # the head's "crown" forward
SMPL_JOINTS = COMPARED + HIPS          # label name = SMPL joint name
USED = frozenset(SMPL_JOINTS + FACE + CROWN)
OPENCV_TO_CAMERA = np.array([1.0, -1.0, -1.0])   # OpenCV's (x right, y down, z forward) to +Y up, +Z to the camera


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
        """The box's diagonal, pixels."""
        x0, y0, x1, y1 = self.box
        return float(np.hypot(x1 - x0, y1 - y0))


def visible_mask(frame, key, count):
    """(count,) bool: frame[key] > 0 per joint (all True when the key is absent); ValueError
    when it has not `count` entries."""
    values = frame.get(key)
    if values is None:
        return np.ones(count, dtype=bool)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.shape != (count,):
        raise ValueError(f"{key} has {values.size} entries for {count} joints")
    return values > 0


def named_points(frame, key, visible_key, names, width, scale=None):
    """name -> (width,) of frame[key] (len(names), width) times `scale`, for the names in USED
    visible by frame[visible_key] and finite ({} when the key is absent); ValueError on a bad shape."""
    if frame.get(key) is None:
        return {}
    values = np.asarray(frame[key], dtype=np.float64)
    if values.shape != (len(names), width):
        raise ValueError(f"{key} is {values.shape}, expected ({len(names)}, {width})")
    if scale is not None:
        values = values * scale
    seen = visible_mask(frame, visible_key, len(names)) & np.isfinite(values).all(axis=1)
    return {n: values[i] for i, n in enumerate(names) if n in USED and seen[i]}


def read_labels(folder):
    """LabelledFrame per labelled person of folder/labels.json, or of folder/keypoints.json in
    COCO's or MPII's layout (the layouts scripts/benchmark_photo.py --help describes); SmplIkError
    naming the file when it cannot be read."""
    folder = Path(folder)
    path = folder / "labels.json"
    if not path.exists() and (folder / "keypoints.json").exists():
        path = folder / "keypoints.json"
    try:
        data = json.loads(path.read_text())
        if path.name == "keypoints.json":
            return coco_frames(data, folder) if isinstance(data, dict) else mpii_frames(data, folder)
        names = [str(n) for n in data["joint_names"]]
        frames = []
        for entry in data["frames"]:
            frames.append(LabelledFrame(
                image=path.parent / entry["image"],
                joints_3d=named_points(entry, "joints_3d_camera_m", "visible_3d", names, 3, OPENCV_TO_CAMERA),
                joints_2d=named_points(entry, "joints_2d_px", "visible_2d", names, 2),
                box=square_box(entry["bbox_center_px"], entry["bbox_scale_200px"]), up=labelled_up(entry)))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SmplIkError(f"{path}: cannot read the labels ({type(exc).__name__}: {exc})") from None
    return frames


def labelled_up(entry):
    """The frame's labelled up (`up_camera`, OpenCV axes) as a unit vector in the camera's axes,
    or None."""
    if entry.get("up_camera") is None:
        return None
    up = np.asarray(entry["up_camera"], dtype=np.float64)
    if up.shape != (3,) or not np.isfinite(up).all() or not np.linalg.norm(up) > 0:
        raise ValueError(f"{entry.get('image')}: up_camera is not 3 finite numbers, not all zero")
    return unit(up * OPENCV_TO_CAMERA)


def square_box(centre, scale_200px):
    """(x0, y0, x1, y1) pixels of a square box 200 x scale_200px a side around centre (2,);
    ValueError on a bad centre."""
    centre, half = np.asarray(centre, dtype=np.float64), 100.0 * float(scale_200px)
    if centre.shape != (2,):
        raise ValueError(f"a box centre is {centre.shape}, expected (2,)")
    return (*(centre - half), *(centre + half))


def coco_frames(data, folder):
    """LabelledFrame per annotated person (not a crowd, any keypoint) of COCO's keypoints.json
    data; hidden keypoints count as placed, the box is COCO's x, y, w, h."""
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
            joints_2d=named_points({"xy": xyv[:, :2], "seen": xyv[:, 2]}, "xy", "seen", COCO_NAMES, 2),
            box=(x, y, x + w, y + h), person=count.setdefault(image, 0)))
        count[image] += 1
    return frames


def mpii_frames(data, folder):
    """LabelledFrame per entry of MPII's keypoints.json list, its box from `center` and `scale`."""
    return [LabelledFrame(image=folder / entry["image"], joints_3d={},
                          joints_2d=named_points(entry, "joints", "joints_vis", MPII_NAMES, 2),
                          box=square_box(entry["center"], entry["scale"]))
            for entry in data]


def spread_frames(frames, count):
    """`count` of `frames` spread evenly over their order (all when count is None or not fewer)."""
    if count is None or count >= len(frames):
        return frames
    keep = np.unique(np.linspace(0, len(frames) - 1, max(count, 0)).round().astype(int))
    return [frames[i] for i in keep]

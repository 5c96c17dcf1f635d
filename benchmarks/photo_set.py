"""Labelled pictures rendered from motion capture (scripts/render_photo_set.py): frames of
rendered clips (benchmarks.render) saved as PNGs, with the 3D and 2D labels of each."""
from dataclasses import replace
from pathlib import Path

import numpy as np

from models.body.model import load_body_model
from models.core.errors import SmplIkError
from models.core.files import atomic_path
from models.core.skeleton import JOINT_NAMES

from .render import render_clip

HEAD_POINTS = {"nose": "nose", "left_ear": "lear", "right_ear": "rear"}   # label -> body landmark
BOX_PAD = 1.2            # a person's box: this many times the labelled points' larger extent, as 3DHP's
OPENCV = np.array([1.0, -1.0, -1.0])    # the camera's axes (+Y up, +Z back) <-> OpenCV's


def label_names():
    """The labelled points' names, in the labels' order: SMPL's 24 joints, HEAD_POINTS, head_top."""
    return list(JOINT_NAMES) + list(HEAD_POINTS) + ["head_top"]


def frame_labels(truth, t, body, crown):
    """(3D points (N, 3) in the camera's frame, their pixels (N, 2)) of frame t of a
    ClipTruth: the joints, then HEAD_POINTS and the crown vertex of the body posed."""
    verts = body.forward(truth.betas, rel_rotmats=truth.local_rot[t], trans=truth.trans[t]).vertices
    face = [body.landmarks[v] for v in HEAD_POINTS.values()]
    points = np.concatenate([truth.joints[t], verts[face + [crown]]])
    return points, truth.camera.project(points)


def render_set(clips, out, options, azimuths=None):
    """Render `clips` (paths) into the folder `out`, seen from each of `azimuths` (degrees;
    None: options.azimuth alone, the pictures named <clip>_<n>.png; several: each view's named
    <clip>_az<degrees>_<n>.png); returns (labels' frames, failures). A frame's labels, in
    OpenCV's camera axes (x right, y down, z forward): joints_3d_camera_m (N, 3) and
    joints_2d_px (N, 2) of label_names(), bbox_center_px, bbox_scale_200px, up_camera."""
    import cv2

    body = load_body_model()
    missing = [v for v in HEAD_POINTS.values() if v not in body.landmarks]
    if missing:
        raise SmplIkError(f"the open body has no {', '.join(missing)} landmark")
    crown = int(np.argmax(body.v_template[:, 1]))
    frames, failures = [], []
    views = [(clip, None) for clip in clips] if azimuths is None else \
        [(clip, float(a)) for clip in clips for a in azimuths]
    for clip, azimuth in views:
        clip = Path(clip)
        stem = clip.stem if azimuth is None else f"{clip.stem}_az{azimuth:g}"
        try:
            seen = options if azimuth is None else replace(options, azimuth=azimuth)
            truth = render_clip(clip, out / "clips" / f"{stem}.mp4", seen)
            video = cv2.VideoCapture(str(truth.video))
            try:
                for t in range(len(truth.frames)):
                    ok, image = video.read()
                    if not ok:
                        raise SmplIkError(f"{truth.video}: frame {t} cannot be read back")
                    points, pixels = frame_labels(truth, t, body, crown)
                    name = f"{stem}_{t:03d}.png"
                    with atomic_path(out / name) as partial:
                        if not cv2.imwrite(partial, image):
                            raise SmplIkError(f"{out / name}: cannot be written")
                    lo, hi = pixels.min(0), pixels.max(0)
                    frames.append({"image": name, "joints_3d_camera_m": (points * OPENCV).tolist(),
                                   "joints_2d_px": pixels.tolist(), "bbox_center_px": ((lo + hi) / 2).tolist(),
                                   "bbox_scale_200px": float(BOX_PAD * (hi - lo).max() / 200.0),
                                   "up_camera": (truth.up * OPENCV).tolist()})
            finally:
                video.release()
        except (SmplIkError, OSError, ValueError) as exc:
            failures.append(str(exc) if str(clip) in str(exc) else f"{clip}: {exc}")
    return frames, failures

"""Scores of a photo method's answer against labelled frames: joint, limb, head and up errors, and their means."""
from dataclasses import dataclass

import numpy as np

from models.core.metrics import aligned_error, angle_deg, pck, procrustes_error
from models.core.rotations import unit

from .photo_labels import COMPARED, CROWN, FACE, HIPS, SIDES

PCK_FRACTION = 0.1       # of the labels' box diagonal: a 2D joint this near its label counts as found
LIMBS = {"upper_arm": ("shoulder", "elbow"), "forearm": ("elbow", "wrist"),
         "thigh": ("hip", "knee"), "shin": ("knee", "ankle")}
FIGURES = ("mpjpe_mm", "pa_mpjpe_mm", "limb_deg", "pck2d_gt", "err2d_px", "overlay_mp", "head_deg", "up_deg")


@dataclass(frozen=True)
class Estimate:
    """A method's answer on one frame: points_3d name -> (3,) in the camera's axes (the names
    of SMPL_JOINTS, FACE and head_top that the method has), points_2d name -> (2,) pixels (or
    None without a projection)."""

    points_3d: dict
    points_2d: dict | None = None
    overlay: float | None = None
    up: np.ndarray | None = None


def head_forward(points, construction):
    """(3,) unit forward direction of the head by `construction` ("face": from the ears'
    midpoint to the nose; "crown": cross(left - right shoulder, head top - neck)), or None when
    a point it needs is missing."""
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
    """Per-frame figures (scripts/benchmark_photo.py --help) of an Estimate against a LabelledFrame: a dict of
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


def method_summary(per_frame, method):
    """{"frames": frames scored, FIGURES' means over them, "limb_deg_by_limb", "failed"} of
    `method` from run_frames' per-frame records (a figure, limb or failure list only where
    there is one)."""
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

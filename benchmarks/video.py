"""The video benchmark (scripts/benchmark_video.py): clips chosen and rendered with their truth,
the video pipeline run on them, and its figures against the truth (mm, mm/frame, degrees)."""
import logging
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from models.body.measure import measure
from models.body.model import load_body_model
from models.core.errors import SmplIkError
from models.core.metrics import acceleration_error, aligned_error, angle_deg, foot_skating, procrustes_error
from models.ik.nn import WEIGHTS_DIR
from models.motion.bvh import find_bvh_files
from models.photo.video import pose_from_video

from .data import trained_clips
from .render import CONTACT_INDICES, render_clip

logger = logging.getLogger(__name__)
FIGURES = ("mpjpe_mm", "pa_mpjpe_mm", "accel_mm", "accel_camera_mm", "skate_mm", "up_deg", "fps", "found")


def choose_clips(data, names=None, weights_dir=WEIGHTS_DIR):
    """BVH paths to benchmark: `names` (file names or stems) in `data`, else the files of
    `data` no network in weights_dir trained on, sorted by name."""
    files = sorted((f.path for f in find_bvh_files([data]).found), key=lambda p: p.name)
    if names:
        wanted = {Path(n).stem for n in names}
        files = [f for f in files if f.stem in wanted]
        missing = wanted - {f.stem for f in files}
        if missing:
            raise SmplIkError(f"{data}: no clip named {', '.join(sorted(missing))}")
    else:
        trained = trained_clips(weights_dir)
        files = [f for f in files if f.name not in trained and not f.stem.endswith("_t")]   # m21_data_t: a T-pose
    if not files:
        raise SmplIkError(f"{data}: no BVH clips to benchmark on")
    return files


def render_clips(clips, per_clip, max_frames, render_options, cache, render=render_clip):
    """ClipTruth of each clip (paths, in order) rendered (or read from `cache`) with up to
    `per_clip` frames while the run's total stays within `max_frames` (None: no cap); a clip
    shorter than its share leaves the rest to the next. Stops where fewer than 3 frames are
    left. `render` is benchmarks.render.render_clip (replaceable in tests)."""
    truths, left = [], max_frames if max_frames is not None else per_clip * len(clips)
    for path in clips:
        take = min(per_clip, left)
        if take < 3:
            break
        options = replace(render_options, frames=take)
        w, h = options.resolution
        video = Path(cache) / f"{path.stem}_{options.start}+{take}_{w}x{h}_{options.engine.lower()}.mp4"
        started = time.perf_counter()
        truth = render(path, video, options)
        logger.info(f"{path.name}: {len(truth.frames)} frames ({time.perf_counter() - started:.0f} s to render or "
                    f"read; {truth.render_s_per_frame:.2f} s a frame when rendered)")
        truths.append(truth)
        left -= len(truth.frames)
    return truths


def joined(tracks):
    """Tracks (T_i, ...) laid end to end with one NaN frame between clips, so that no
    difference spans two clips."""
    gap = np.full((1,) + tracks[0].shape[1:], np.nan)
    return np.concatenate([x for t in tracks for x in (t, gap)][:-1])


def figures(predicted, truth, contact, up, seconds, found_up):
    """The module docstring's figures (mm, mm/frame, mm/frame^2, degrees, frames a second) of
    predicted joints (T_i, 24, 3) per clip against truth's, `contact` (T_i, 2) per clip, `up`
    (3,) per clip and the pipeline's `found_up` (3,) per clip, wall `seconds` per clip."""
    p, g = np.concatenate(predicted), np.concatenate(truth)
    pj, gj = joined(predicted), joined(truth)
    frames = len(p)
    # one up for all: every clip's camera is tilted alike (TILT_DEG), within float noise
    up_all = np.mean(up, axis=0)
    return {"mpjpe_mm": 1000.0 * float(aligned_error(p, g).mean()),
            "pa_mpjpe_mm": 1000.0 * float(procrustes_error(p, g).mean()),
            "accel_mm": 1000.0 * acceleration_error(pj - pj[:, :1], gj - gj[:, :1]),
            "accel_camera_mm": 1000.0 * acceleration_error(pj, gj),
            "skate_mm": 1000.0 * foot_skating(pj[:, list(CONTACT_INDICES)],
                                              joined([c.astype(float) for c in contact]) == 1, up_all),
            "up_deg": float(np.mean([angle_deg(a, b) for a, b in zip(found_up, up)])),
            "fps": frames / float(np.sum(seconds))}


def score_clip(motion, truth):
    """The truth's joints (T, 24, 3) on the frames `motion` (a VideoMotion) has, and its own."""
    frames = np.asarray(motion.frames)
    if frames.max() >= len(truth.joints):
        raise ValueError(f"{truth.video}: the pipeline gave frame {frames.max()} of {len(truth.joints)}")
    return np.asarray(motion.joints, dtype=np.float64), truth.joints[frames], truth.contact[frames]


def truth_height(truth):
    """The height (metres) of the body a clip was rendered with: the open body in the actor's
    shape, as a user who knows the person's height would give it."""
    return measure(load_body_model(), truth.betas).height


def run(truths, methods):
    """{"methods": {name: figures}, "truth": {...}, "per_clip": [...], "render": {...}} over
    rendered clips (ClipTruth); methods name -> VideoOptions, or a callable giving a clip's
    VideoOptions from its ClipTruth."""
    out = {"methods": {}, "per_clip": [{"clip": t.video.name, "bvh": Path(t.bvh).name, "frames": len(t.frames),
                                        "source_frames": [int(t.frames[0]), int(t.frames[-1])], "fps": t.fps,
                                        "methods": {}} for t in truths]}
    for name, video_options in methods.items():
        predicted, true, contacts, ups, found_ups, seconds, found = [], [], [], [], [], [], []
        for truth, record in zip(truths, out["per_clip"]):
            started = time.perf_counter()
            motion = pose_from_video(truth.video, options=video_options(truth) if callable(video_options)
                                     else video_options)
            seconds.append(time.perf_counter() - started)
            p, g, c = score_clip(motion, truth)
            predicted.append(p)
            true.append(g)
            contacts.append(c)
            ups.append(truth.up)
            found_ups.append(np.asarray(motion.up, dtype=np.float64))
            found.append(np.asarray(motion.found, dtype=bool) if motion.found is not None else np.ones(len(p), bool))
            record["methods"][name] = {**figures([p], [g], [c], [truth.up], [seconds[-1]], [found_ups[-1]]),
                                       "found": float(found[-1].mean())}
            logger.info(f"  {name} on {truth.video.name}: " + ", ".join(
                f"{k} {v:.1f}" for k, v in record["methods"][name].items()))
        out["methods"][name] = {**figures(predicted, true, contacts, ups, seconds, found_ups),
                                "found": float(np.concatenate(found).mean())}
    gj = joined([t.joints for t in truths])
    contact = joined([t.contact.astype(float) for t in truths]) == 1
    out["truth"] = {"skate_mm": 1000.0 * foot_skating(gj[:, list(CONTACT_INDICES)], contact,
                                                      np.mean([t.up for t in truths], 0)),
                    "contact_share": float(np.mean(np.concatenate([t.contact for t in truths])))}
    out["render"] = {**{k: v for k, v in truths[0].key.items() if k != "frames"},
                     "s_per_frame": [t.render_s_per_frame for t in truths]}
    return out

"""One video file to one motion file (scripts/video_to_smpl.py, locally or on dask): the job, and
what the file holds beside the motion."""
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..body.model import load_body_model
from ..core.rotations import matrix_to_axis_angle
from ..motion.amass import MotionFile, write_motion_npz
from ..motion.batch import JobResult, body_name, failed_job
from .video import VideoClip, VideoOptions, pose_from_video, video_scene


@dataclass(frozen=True)
class VideoJob:
    """One video to turn into an AMASS-style .npz at `output`: the frames, person and options
    of pose_from_video; body a model file ('' the open body); overwrite an existing output."""

    source: str
    output: str
    frame_start: int = 0
    frame_end: int | None = None
    step: int = 1
    person: int = 0
    body: str = ""
    options: VideoOptions = VideoOptions()
    overwrite: bool = False


def video_record(motion, scene):
    """What a video's motion file holds beside the motion (write_motion_npz's extras): the
    camera (camera_rotation (3, 3) and camera_position (3,), the scene's from the camera's
    frame; focal_px, image_size (width, height)), source_frames (T,), contact (T, 2) and found
    (T,) as in VideoMotion, and video_fps."""
    return {"camera_rotation": scene.camera_rotation, "camera_position": scene.camera_position,
            "focal_px": np.float64(motion.camera.focal_px),
            "image_size": np.array([motion.camera.width, motion.camera.height], np.int64),
            "source_frames": np.asarray(motion.frames, np.int64), "contact": np.asarray(motion.contact, bool),
            "found": np.asarray(motion.found, bool), "video_fps": np.float64(motion.video_fps)}


def run_video_job(job):
    """Turn one video into a motion file (models.motion.amass.write_motion_npz, atomically):
    the motion levelled by video_scene (SMPL's frame, Y up, the floor under the feet), with
    video_record beside it. Never raises: returns a models.motion.batch.JobResult (skipped when
    the output exists and not job.overwrite; failed with the error's message)."""
    started = time.perf_counter()
    try:
        out = Path(job.output)
        if out.exists() and not job.overwrite:
            return JobResult(source=job.source, output=job.output, ok=False,
                             skipped=f"{out} exists; pass --overwrite to replace it",
                             seconds=time.perf_counter() - started)
        body = load_body_model(job.body or None)
        motion = pose_from_video(job.source, VideoClip(job.frame_start, job.frame_end, job.step, job.person),
                                 body=body, options=job.options)
        scene = video_scene(motion, body.rest_joints(motion.betas))
        write_motion_npz(out, MotionFile(poses=matrix_to_axis_angle(scene.local_rot), trans=scene.trans,
                                         betas=motion.betas, gender=body.gender, fps=motion.fps,
                                         body_model=body_name(job.body), up_axis="Y"),
                         extras=video_record(motion, scene))
        return JobResult(source=job.source, output=str(out), ok=True, frames=len(motion.frames), fps=motion.fps,
                         seconds=time.perf_counter() - started, notes=motion.notes)
    except Exception as exc:   # a job never raises
        return failed_job(job, exc, started)

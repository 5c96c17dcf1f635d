"""One retargeting job per file, for local processes or a dask cluster alike.

A job never raises: bad input comes back as a result with an error message, so a batch
goes on. Outputs are written to a temporary file beside the target and renamed, so a
failure never leaves a half-written file.
"""
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..body.model import load_body_model, open_body_name
from .bvh import read_bvh
from ..core.errors import SmplIkError
from ..core.files import atomic_write
from .mapping import build_mapping, load_overrides
from .retarget import retarget, write_smpl_bvh
from ..core.rotations import axis_angle_to_matrix


@dataclass(frozen=True)
class RetargetJob:
    source: str
    output: str                 # the .npz to write
    body: str = ""              # body model file; "" is the open body
    mapping: str = ""           # JSON overrides file, optional
    polish: bool = True
    bvh_output: str = ""        # also write an SMPL-skeleton BVH here, optional
    overwrite: bool = False
    unit: str = ""              # the file's length unit (retarget.parse_unit); "" infers it


@dataclass(frozen=True)
class JobResult:
    source: str
    output: str
    ok: bool
    error: str = ""
    frames: int = 0
    fps: float = 0.0
    limb_error_deg: float = float("nan")
    seconds: float = 0.0
    convention: str = ""
    notes: tuple = field(default_factory=tuple)
    unit: str = ""                      # the length unit used (inferred or given)
    body: dict = field(default_factory=dict)   # retarget.BodyCheck.report(): height, betas, ...
    warnings: tuple = field(default_factory=tuple)  # an implausible body: why (BodyCheck)


def body_name(path):
    """What a motion file's `body_model` says of the body its betas are for: the open body's
    name (models.body.model.open_body_name), else the file's name."""
    return open_body_name(path) or Path(path).name


def save_npz_atomically(path, overwrite=False, **arrays):
    """np.savez through `atomic_write`; refuses to overwrite unless asked. Raises SmplIkError
    with the reason when the file exists or the folder is not writable."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise SmplIkError(f"{path} exists; pass --overwrite to replace it")
    with atomic_write(path) as fh:
        np.savez(fh, **arrays)


def retarget_source(job):
    """(body, motion, mapping, Retarget) for a job's source file; raises SmplIkError."""
    body = load_body_model(job.body or None)
    motion = read_bvh(job.source)
    overrides = load_overrides(job.mapping) if job.mapping else None
    mapping = build_mapping(motion.skeleton.names, job.source, overrides, job.mapping)
    return body, motion, mapping, retarget(motion, body, mapping, polish=job.polish,
                                           length_unit=job.unit or None)


def dataset_clip(job, fps=None, skip_first=0):
    """A clip for a training set: dict of arrays, or {'error': message}.

    Keeps frames from `skip_first` on, every k-th so the rate comes near `fps`.
    """
    try:
        _, motion, _, result = retarget_source(job)
    except SmplIkError as exc:
        return {"error": str(exc)}
    step = max(1, int(round(result.fps / fps))) if fps else 1
    keep = np.arange(skip_first, motion.num_frames, step)
    return {"poses": result.poses.reshape(len(result.poses), -1)[keep].astype(np.float32),
            "trans": result.trans[keep].astype(np.float32), "betas": result.betas.astype(np.float32),
            "frame": keep.astype(np.int32), "fps": result.fps / step, "source_fps": result.fps,
            "limb_error_deg": result.mean_limb_error_deg, "warnings": result.check.warnings}


def run_job(job):
    """Retarget one BVH file to SMPL parameters (AMASS-style .npz). Returns a JobResult."""
    start = time.perf_counter()
    try:
        out = Path(job.output)
        if out.exists() and not job.overwrite:
            raise SmplIkError(f"{out} exists; pass --overwrite to replace it")
        if job.bvh_output and Path(job.bvh_output).exists() and not job.overwrite:
            raise SmplIkError(f"{job.bvh_output} exists; pass --overwrite to replace it")
        body, motion, mapping, result = retarget_source(job)
        t = motion.num_frames
        save_npz_atomically(
            out, overwrite=job.overwrite,
            poses=result.poses.reshape(t, -1).astype(np.float32),
            trans=result.trans.astype(np.float32),
            betas=result.betas.astype(np.float32),
            mocap_framerate=np.float64(result.fps),
            gender=np.array(body.gender),
            body_model=np.array(body_name(job.body)),
            source=np.array(Path(job.source).name),
            limb_error_deg=np.float32(result.mean_limb_error_deg),
            length_unit=np.array(result.rig.unit_name),
            height_m=np.float32(result.check.height_m),
            max_abs_beta=np.float32(result.check.max_abs_beta),
            length_residual_pct=np.float32(result.check.length_residual_pct),
            torso_lean_deg=np.array([result.check.lean_source_deg, result.check.lean_body_deg], np.float32),
            warnings=np.array(result.check.warnings, dtype=str),
        )
        if job.bvh_output:
            try:
                write_smpl_bvh(job.bvh_output, axis_angle_to_matrix(result.poses), result.trans,
                               body.rest_joints(result.betas), result.fps)
            except OSError as exc:
                raise SmplIkError(f"cannot write {job.bvh_output}: {exc.strerror or exc}") from None
        return JobResult(source=job.source, output=str(out), ok=True, frames=t, fps=result.fps,
                         limb_error_deg=result.mean_limb_error_deg,
                         seconds=time.perf_counter() - start, convention=mapping.convention,
                         notes=result.notes, unit=result.rig.unit_name, body=result.check.report(),
                         warnings=result.check.warnings)
    except SmplIkError as exc:
        return JobResult(source=job.source, output=job.output, ok=False, error=str(exc),
                         seconds=time.perf_counter() - start)
    except Exception as exc:  # a bug: report it for this file and let the batch go on
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return JobResult(source=job.source, output=job.output, ok=False,
                         error=f"internal error ({detail}); please report it with this file",
                         seconds=time.perf_counter() - start)

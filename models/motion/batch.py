"""One retargeting job per file, for local processes or a dask cluster alike, what runs a batch
of them (`run_jobs` on local processes, `run_batch` also on dask, with progress), and training
sets built from a folder of clips.

A job never raises: bad input comes back as a result with an error message, so a batch
goes on; outputs that exist already are kept and the job reported as skipped. Outputs are
written to a temporary file beside the target and renamed, so a failure never leaves a
half-written file.
"""
import dataclasses
import functools
from concurrent.futures import ProcessPoolExecutor, as_completed
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..body.model import load_body_model, open_body_name
from .amass import MotionFile, write_motion_npz
from .bvh import find_bvh_files, read_bvh, write_smpl_bvh
from ..core.errors import SmplIkError
from ..core.files import atomic_write
from .mapping import build_mapping, load_overrides
from .skeleton_shape import SkeletonShape
from .rates import given_fps, rate_rules
from .retarget import retarget
from ..core.rotations import axis_angle_to_matrix

ROOT = Path(__file__).resolve().parents[2]   # the repository: dask workers started here import models/ from it


@dataclass(frozen=True)
class RetargetJob:
    source: str
    output: str                 # the .npz to write
    body: str = ""              # body model file; "" is the open body
    mapping: str = ""           # JSON overrides file, optional
    polish: bool = True
    bvh_output: str = ""        # also write an SMPL-skeleton BVH here, optional
    overwrite: bool = False
    unit: str = ""              # the file's length unit (units.parse_unit); "" infers it
    source_fps: float = 0.0     # the file's frame rate when its header's is wrong; 0: the header's


@dataclass(frozen=True)
class JobResult:
    """What became of one job: ok (retargeted and written), skipped (its outputs exist and
    the job did not ask to overwrite them: they are kept; `skipped` says which) or failed
    (`error` says why)."""

    source: str
    output: str
    ok: bool
    error: str = ""
    skipped: str = ""           # why the job did not run ("... exists"), "" when it ran
    frames: int = 0
    fps: float = 0.0                    # the source's frame rate used: the given one, else the header's
    fps_given: bool = False             # fps was given (RetargetJob.source_fps), not read from the header
    header_fps: float = 0.0             # the rate the file's header states (0: not read)
    limb_error_deg: float = float("nan")
    seconds: float = 0.0
    convention: str = ""
    notes: tuple = field(default_factory=tuple)
    mapping: tuple = field(default_factory=tuple)   # mapping.JointReport per SMPL joint
    unit: str = ""                      # the length unit used (inferred or given)
    body: dict = field(default_factory=dict)   # shape_fit.BodyCheck.report(): height, betas, ...
    warnings: tuple = field(default_factory=tuple)  # an implausible body: why (BodyCheck)

    @property
    def failed(self):
        return not self.ok and not self.skipped


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
    """(body, motion as read, mapping, Retarget) for a job's source file; the motion's fps is
    its header's, the Retarget's the rate used: job.source_fps when given, which every output
    then carries. Raises SmplIkError."""
    body = load_body_model(job.body or None)
    motion = read_bvh(job.source)
    overrides = load_overrides(job.mapping) if job.mapping else None
    mapping = build_mapping(motion.skeleton.names, job.source, overrides, job.mapping,
                            shape=SkeletonShape.of_motion(motion), names_first=True)
    timed = dataclasses.replace(motion, frame_time=1.0 / job.source_fps) if job.source_fps else motion
    return body, motion, mapping, retarget(timed, body, mapping, polish=job.polish,
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
            "fps_given": bool(job.source_fps),
            "limb_error_deg": result.mean_limb_error_deg, "warnings": result.check.warnings}


def retarget_record(job, result):
    """The retargeting report `run_job` writes beside the motion (write_motion_npz's extras):
    source (the BVH's name), limb_error_deg, length_unit, and the body check: height_m,
    max_abs_beta, length_residual_pct, torso_lean_deg (source, body; NaN where not known)
    and warnings (one string each). Numbers are float64 like the motion's, text unicode."""
    check = result.check
    return {"source": np.array(Path(job.source).name),
            "limb_error_deg": np.float64(result.mean_limb_error_deg),
            "length_unit": np.array(result.rig.unit_name),
            "height_m": np.float64(check.height_m),
            "max_abs_beta": np.float64(check.max_abs_beta),
            "length_residual_pct": np.float64(check.length_residual_pct),
            "torso_lean_deg": np.array([check.lean_source_deg, check.lean_body_deg], np.float64),
            "warnings": np.array(check.warnings, dtype=str)}


def run_job(job):
    """Retarget one BVH file to SMPL parameters: an AMASS-style .npz through
    amass.write_motion_npz, in SMPL's frame (up_axis 'Y'), with retarget_record's report
    beside the motion. Returns a JobResult; outputs that exist are kept (skipped) unless
    job.overwrite."""
    start = time.perf_counter()
    try:
        out = Path(job.output)
        outputs = [out] + ([Path(job.bvh_output)] if job.bvh_output else [])
        existing = [str(p) for p in outputs if p.exists()]
        if existing and not job.overwrite:
            said = f"{existing[0]} exists" if len(existing) == 1 else f"{' and '.join(existing)} exist"
            return JobResult(source=job.source, output=job.output, ok=False,
                             skipped=f"{said}; pass --overwrite to replace it", seconds=time.perf_counter() - start)
        body, motion, mapping, result = retarget_source(job)
        t = motion.num_frames
        write_motion_npz(out, MotionFile(poses=result.poses, trans=result.trans, betas=result.betas,
                                         gender=body.gender, fps=result.fps, body_model=body_name(job.body),
                                         up_axis="Y"),
                         extras=retarget_record(job, result))
        if job.bvh_output:
            try:
                write_smpl_bvh(job.bvh_output, axis_angle_to_matrix(result.poses), result.trans,
                               body.rest_joints(result.betas), result.fps)
            except OSError as exc:
                raise SmplIkError(f"cannot write {job.bvh_output}: {exc.strerror or exc}") from None
        return JobResult(source=job.source, output=str(out), ok=True, frames=t, fps=result.fps,
                         fps_given=bool(job.source_fps), header_fps=motion.fps,
                         limb_error_deg=result.mean_limb_error_deg,
                         seconds=time.perf_counter() - start, convention=mapping.convention,
                         notes=result.notes, mapping=mapping.report, unit=result.rig.unit_name,
                         body=result.check.report(),
                         warnings=result.check.warnings)
    except Exception as exc:  # a job never raises
        return failed_job(job, exc, start)


def failed_job(job, exc, start):
    """The JobResult of a job (with `source` and `output`) that raised `exc` after starting at
    time.perf_counter() `start`: an SmplIkError's message; anything else is a bug, reported
    as an internal error for this file so the batch goes on."""
    error = str(exc)
    if not isinstance(exc, SmplIkError):
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        error = f"internal error ({detail}); please report it with this file"
    return JobResult(source=job.source, output=job.output, ok=False, error=error, seconds=time.perf_counter() - start)


# --- many jobs on local processes ------------------------------------------------------------

def run_jobs(work, items, workers=1, on_result=lambda result: None):
    """[work(item) for item in items], in the items' order, on `workers` local processes (1:
    in this process, one after another); on_result(result) is called as each finishes. work
    must be picklable (a module-level function, or functools.partial of one) when workers > 1,
    and should not raise (run_job and dataset_clip return their errors): an exception ends
    the batch."""
    if workers <= 1:
        results = []
        for item in items:
            results.append(work(item))
            on_result(results[-1])
        return results

    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(work, item): i for i, item in enumerate(items)}
        results = [None] * len(items)
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            on_result(results[futures[fut]])
    return results


def output_paths(found, out, missing=()):
    """Where each input of a batch goes: ([(source, target)], [JobResult]) for `found`
    (source path, its path relative to what was searched), the target `out`/relative as .npz;
    the JobResults are failures: every `missing` (input, error), then every source whose
    target another source already claimed."""
    failures = [JobResult(source=i, output="", ok=False, error=e) for i, e in missing]
    pairs, claimed = [], {}
    for src, relative in found:
        target = Path(out) / relative.with_suffix(".npz")
        if target in claimed:
            failures.append(JobResult(source=str(src), output=str(target), ok=False,
                                      error=f"same output as {claimed[target]}; rename one of them"))
            continue
        claimed[target] = src
        pairs.append((src, target))
    return pairs, failures


class Progress:
    """A one-line progress bar on a terminal, one line per file otherwise."""

    def __init__(self, total, stream=sys.stderr):
        self.total, self.done, self.failed, self.stream = total, 0, 0, stream
        self.tty = stream.isatty()
        self.start = time.perf_counter()

    def update(self, result):
        self.done += 1
        self.failed += result.failed
        if self.tty:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            rate = self.done / max(time.perf_counter() - self.start, 1e-9)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                              f"files, {self.failed} failed, {rate:.1f} files/s ")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            status = (("WARNING" if result.warnings else "ok") if result.ok
                      else "skipped" if result.skipped else "FAILED")
            self.stream.write(f"[{self.done}/{self.total}] {status} {result.source}\n")
        self.stream.flush()


def run_dask(jobs, scheduler, workers, progress, work=run_job):
    """Run the jobs (work(job) each, run_job by default: a module-level function of models/
    that returns a JobResult) on a dask.distributed cluster (at `scheduler`, else a local one
    of `workers` processes); workers must import this repository. SmplIkError without
    dask.distributed."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise SmplIkError("--executor dask needs dask.distributed: pip install 'distributed'") from None
    # worker processes started here import models/ from this checkout
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        futures = client.map(work, jobs, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        results = [None] * len(jobs)
        for fut in as_completed(futures):
            results[index[fut.key]] = fut.result()
            progress.update(results[index[fut.key]])
        return results
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_batch(jobs, failures, executor="local", scheduler=None, workers=1, work=run_job):
    """failures (JobResults of inputs that were not found) then work(job) for every job, on
    `workers` local processes (executor "local") or a dask cluster ("dask", at `scheduler` or
    a local one), with the progress shown on stderr as each finishes. SmplIkError when dask is
    asked for and not installed."""
    progress = Progress(len(jobs) + len(failures))
    for f in failures:
        progress.update(f)
    if executor == "dask":
        results = run_dask(jobs, scheduler, workers, progress, work)
    else:
        results = run_jobs(work, jobs, workers, progress.update)
    return failures + results


def results_report(results):
    """A batch's JSON report: one entry per input file (its JobResult's fields)."""
    return {"files": [{"source": r.source, "output": r.output, "ok": r.ok, "error": r.error, "skipped": r.skipped,
                       "frames": r.frames, "fps": r.fps, "fps_given": r.fps_given, "header_fps": r.header_fps,
                       "unit": r.unit, "body": r.body,
                       "warnings": list(r.warnings), "notes": list(r.notes), "convention": r.convention,
                       "mapping": [{"joint": m.joint, "source": m.source or None, "how": m.how,
                                    "confidence": m.confidence, "note": m.note} for m in r.mapping],
                       "limb_error_deg": None if r.limb_error_deg != r.limb_error_deg else round(r.limb_error_deg, 3)}
                      for r in results]}


def rate_text(result):
    """A JobResult's frame rate for a person: "120", or "60 (given; header says 120)"."""
    def number(fps):
        return f"{fps:.2f}".rstrip("0").rstrip(".")
    if not result.fps_given:
        return number(result.fps)
    return f"{number(result.fps)} (given; header says {number(result.header_fps)})"


def results_table(results):
    """A batch's results for a person (scripts/retarget.py prints it): a row per file, its
    frames, frame rate (rate_text), length unit, body figures, limb-direction error, seconds
    and result (ok, WARNING, skipped or FAILED with the reason), then a line of totals."""
    out = []
    rows = [("file", "frames", "fps", "unit", "height m", "max |beta|", "length resid %",
             "lean src/body deg", "limb err deg", "seconds", "result")]
    for r in results:
        name = Path(r.source).name if r.source else "?"
        if r.ok:
            b = r.body
            lean = b["torso_lean_deg"]
            rows.append((name, str(r.frames), rate_text(r), r.unit, f"{b['height_m']:.2f}",
                         f"{b['max_abs_beta']:.1f}", f"{b['length_residual_pct']:.1f}",
                         "/".join("-" if x is None else f"{x:.0f}" for x in (lean["source"], lean["body"])),
                         f"{r.limb_error_deg:.2f}",
                         f"{r.seconds:.2f}", "WARNING: " + "; ".join(r.warnings) if r.warnings else "ok"))
        else:
            rows.append((name,) + ("",) * 8 + (f"{r.seconds:.2f}", ("skipped: " + r.skipped) if r.skipped
                                                else "FAILED: " + r.error))
    widths = [max(len(row[k]) for row in rows) for k in range(10)]
    for row in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(row[:10], widths)) + "  " + row[10] + "\n")
    ok = [r for r in results if r.ok]
    frames = sum(r.frames for r in ok)
    out.append(f"{len(ok)} of {len(results)} files retargeted, {frames} frames")
    skipped = sum(bool(r.skipped) for r in results)
    if skipped:
        out.append(f", {skipped} skipped (their outputs exist; --overwrite replaces them)")
    if ok:
        out.append(f", mean limb-direction error {sum(r.limb_error_deg for r in ok) / len(ok):.2f} deg")
        warned = sum(bool(r.warnings) for r in ok)
        if warned:
            out.append(f"; {warned} with warnings (implausible bodies: see the result column)")
    return "".join(out) + "\n"


# --- training sets -------------------------------------------------------------------------

@dataclass(frozen=True)
class Dataset:
    """A training set built from clips (build_dataset): arrays, the file's contents ({} when
    no clip could be retargeted); files, every clip found; failed, (file, error) of those
    left out; warned, (file, warnings) of those kept with an implausible body; given, the
    files kept at a frame rate given for them (not their header's)."""

    arrays: dict
    files: tuple
    failed: tuple
    warned: tuple
    given: tuple = ()

    @property
    def clips(self):
        return len(self.files) - len(self.failed)

    def messages(self):
        """Lines for a person: a FAILED line per clip left out, a WARNING line per clip kept
        with an implausible body."""
        return [f"FAILED {f}: {e}" for f, e in self.failed] + \
            [f"WARNING {f}: {'; '.join(w)}" for f, w in self.warned]

    def summary(self, out):
        a = self.arrays
        given = f" ({len(self.given)} at a given source frame rate)" if self.given else ""
        return (f"{out}: {len(a['poses'])} frames from {self.clips} of {len(self.files)} clips{given}, "
                f"mean limb-direction error {a['limb_error_deg'].mean():.2f} deg")


def build_dataset(source, body="", mapping="", fps=None, skip_first=0, workers=1, *, source_fps=()):
    """Retarget every clip of `source` (a folder, searched recursively, a .bvh file or a glob:
    bvh.find_bvh_files) into one training set; a Dataset whose arrays hold, for N kept frames
    of C clips: poses (N, 72) axis-angle, SMPL joint order, and trans (N, 3) metres (float32:
    training reads float32, and a set is large); clip (N,) clip index and frame (N,) frame in
    its source file (int32); betas (C, 10) each clip's fitted shape (float32); clips (C,)
    source paths below the folder; fps (C,) kept frame rate and source_fps (C,) (float64);
    limb_error_deg (C,) (float32); body_model. Frames from `skip_first` on are kept, every
    k-th so the rate comes near `fps` (dataset_clip). source_fps: frame rates for files whose
    header states a wrong one, rules "[PATTERN=]RATE" (models.motion.rates; the first that
    matches a file's name gives its rate, the others keep their header's), which source_fps
    and fps then follow. SmplIkError when no clip is found or a rule is bad."""
    rules = rate_rules(source_fps)
    search = find_bvh_files([source])
    if search.missing:
        raise SmplIkError(f"{source}: {search.missing[0][1]}")
    files = [f.path for f in search.found]
    jobs = [RetargetJob(source=str(f), output="", body=body, mapping=mapping, source_fps=given_fps(rules, f))
            for f in files]
    clips = run_jobs(functools.partial(dataset_clip, fps=fps, skip_first=skip_first), jobs, workers)
    failed = tuple((f, c["error"]) for f, c in zip(files, clips) if "error" in c)
    warned = tuple((f, tuple(c["warnings"])) for f, c in zip(files, clips) if "error" not in c and c["warnings"])
    good = [(found, c) for found, c in zip(search.found, clips) if "error" not in c and len(c["frame"])]
    failed += tuple((found.path, "no frames kept") for found, c in zip(search.found, clips)
                    if "error" not in c and not len(c["frame"]))
    arrays = {}
    if good:
        arrays = {
            "poses": np.concatenate([c["poses"] for _, c in good]),
            "trans": np.concatenate([c["trans"] for _, c in good]),
            "clip": np.concatenate([np.full(len(c["frame"]), i, np.int32) for i, (_, c) in enumerate(good)]),
            "frame": np.concatenate([c["frame"] for _, c in good]),
            "betas": np.stack([c["betas"] for _, c in good]),
            "clips": np.array([str(found.relative) for found, _ in good]),
            "fps": np.array([c["fps"] for _, c in good]),
            "source_fps": np.array([c["source_fps"] for _, c in good]),
            "limb_error_deg": np.array([c["limb_error_deg"] for _, c in good], np.float32),
            "body_model": np.array(body_name(body)),
        }
    given = tuple(found.path for found, c in good if c["fps_given"])
    return Dataset(arrays=arrays, files=tuple(files), failed=failed, warned=warned, given=given)

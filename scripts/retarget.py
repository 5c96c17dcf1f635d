"""Retarget BVH motion capture onto an SMPL body: one AMASS-style .npz per input file.

    python scripts/retarget.py INPUT... --out DIR [options]

INPUT is a .bvh file, a folder (searched recursively) or a glob ("mocap/**/*.bvh").
For X.bvh it writes DIR/X.npz (folders keep their sub-folders), as every motion file of this
project is written (models.motion.amass.write_motion_npz), with
  poses (T, 72) axis-angle in SMPL joint order, root first;  root_orient (T, 3) and
  pose_body (T, 63), AMASS's split of them;  trans (T, 3) metres;  betas (10,) from shape
  inversion, at the source's size;  mocap_framerate and mocap_frame_rate;  gender;
  body_model;  up_axis ("Y": SMPL's frame, Y up);  and the retargeting report: source,
  limb_error_deg, length_unit and the body check: height_m, max_abs_beta,
  length_residual_pct, torso_lean_deg (source, body) and warnings (one string each).
The file's length unit is inferred from its skeleton (an adult is 1.4-2.1 m tall) unless
--unit gives it. A body that is not plausible (height outside 1.4-2.1 m with an inferred
unit, betas at their bound, bone lengths missed by over 5%, the torso leaning 10 degrees off
the source's) is retargeted with a WARNING in the table, the .npz and the --report JSON. Existing outputs are kept unless --overwrite: their files are
reported as skipped, so a batch can be run again to finish what it left. A failed file never
leaves a partial output and the others still run; the exit status is 1 if any file failed.
"""
import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.core.errors import SmplIkError  # noqa: E402
from models.core.files import write_json  # noqa: E402
from models.motion.batch import JobResult, RetargetJob, run_job, run_jobs  # noqa: E402
from models.motion.bvh import find_bvh_files  # noqa: E402
from models.motion.retarget import LENGTH_UNITS, parse_unit  # noqa: E402


def make_jobs(args):
    search = find_bvh_files(args.inputs)
    out = Path(args.out)
    jobs, failures, claimed = [], [JobResult(source=i, output="", ok=False, error=e) for i, e in search.missing], {}
    for found in search.found:
        src, target = found.path, out / found.relative.with_suffix(".npz")
        if target in claimed:
            failures.append(JobResult(source=str(src), output=str(target), ok=False,
                                      error=f"same output as {claimed[target]}; rename one of them"))
            continue
        claimed[target] = src
        bvh_out = str(target.with_name(target.stem + "_smpl.bvh")) if args.bvh_out else ""
        jobs.append(RetargetJob(source=str(src), output=str(target), body=args.body or "",
                                mapping=args.mapping or "", polish=not args.no_polish,
                                bvh_output=bvh_out, overwrite=args.overwrite, unit=args.unit or ""))
    return jobs, failures


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
            status = ("WARNING" if result.warnings else "ok") if result.ok else "skipped" if result.skipped else "FAILED"
            self.stream.write(f"[{self.done}/{self.total}] {status} {result.source}\n")
        self.stream.flush()


def run_dask(jobs, scheduler, workers, progress, work=run_job):
    """Run the jobs (work(job) each, run_job by default: a module-level function of models/
    that returns a JobResult) on a dask.distributed cluster; workers must import this
    repository."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise SystemExit("--executor dask needs dask.distributed: pip install 'distributed'")
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


def add_batch_options(ap):
    """--jobs, --executor and --scheduler: how a batch script runs its jobs (run_batch)."""
    ap.add_argument("--jobs", type=int, default=1, help="parallel workers (default 1)")
    ap.add_argument("--executor", choices=("local", "dask"), default="local",
                    help="local processes (default) or a dask.distributed cluster")
    ap.add_argument("--scheduler", help="dask scheduler address (default: a local cluster of --jobs workers)")


def check_batch_options(ap, args):
    if args.scheduler and args.executor != "dask":
        ap.error("--scheduler needs --executor dask")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")


def run_batch(jobs, failures, args, work=run_job):
    """failures (JobResults of inputs that were not found) then work(job) for every job, as
    args' batch options say, with the progress shown as each finishes."""
    progress = Progress(len(jobs) + len(failures))
    for f in failures:
        progress.update(f)
    if args.executor == "dask":
        results = run_dask(jobs, args.scheduler, args.jobs, progress, work)
    else:
        results = run_jobs(work, jobs, args.jobs, progress.update)
    return failures + results


def summary(results, stream=sys.stdout):
    rows = [("file", "frames", "fps", "unit", "height m", "max |beta|", "length resid %",
             "lean src/body deg", "limb err deg", "seconds", "result")]
    for r in results:
        name = Path(r.source).name if r.source else "?"
        if r.ok:
            b = r.body
            lean = b["torso_lean_deg"]
            rows.append((name, str(r.frames), f"{r.fps:.0f}", r.unit, f"{b['height_m']:.2f}",
                         f"{b['max_abs_beta']:.1f}", f"{b['length_residual_pct']:.1f}",
                         "/".join("-" if x is None else f"{x:.0f}" for x in (lean["source"], lean["body"])),
                         f"{r.limb_error_deg:.2f}",
                         f"{r.seconds:.2f}", "WARNING: " + "; ".join(r.warnings) if r.warnings else "ok"))
        else:
            rows.append((name,) + ("",) * 8 + (f"{r.seconds:.2f}", ("skipped: " + r.skipped) if r.skipped
                                                else "FAILED: " + r.error))
    widths = [max(len(row[k]) for row in rows) for k in range(10)]
    for row in rows:
        stream.write("  ".join(c.ljust(w) for c, w in zip(row[:10], widths)) + "  " + row[10] + "\n")
    ok = [r for r in results if r.ok]
    frames = sum(r.frames for r in ok)
    stream.write(f"{len(ok)} of {len(results)} files retargeted, {frames} frames")
    skipped = sum(bool(r.skipped) for r in results)
    if skipped:
        stream.write(f", {skipped} skipped (their outputs exist; --overwrite replaces them)")
    if ok:
        stream.write(f", mean limb-direction error {sum(r.limb_error_deg for r in ok) / len(ok):.2f} deg")
        warned = sum(bool(r.warnings) for r in ok)
        if warned:
            stream.write(f"; {warned} with warnings (implausible bodies: see the result column)")
    stream.write("\n")


def report(results):
    """The --report JSON: one entry per input file."""
    return {"files": [{"source": r.source, "output": r.output, "ok": r.ok, "error": r.error, "skipped": r.skipped,
                       "frames": r.frames, "fps": r.fps, "unit": r.unit, "body": r.body,
                       "warnings": list(r.warnings), "notes": list(r.notes),
                       "limb_error_deg": None if r.limb_error_deg != r.limb_error_deg else round(r.limb_error_deg, 3)}
                      for r in results]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", metavar="INPUT", help="BVH files, folders or globs")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--body", help="SMPL/SMPL-H/SMPL-X model file (default: the open body)")
    ap.add_argument("--mapping", help='JSON {"smpl_joint": "source joint" or null} overriding the automatic mapping')
    ap.add_argument("--bvh-out", action="store_true", help="also write DIR/X_smpl.bvh on SMPL's skeleton")
    ap.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    ap.add_argument("--unit", help=f"the files' length unit: {', '.join(LENGTH_UNITS)} ('cmu': CMU's own "
                                   "1/0.45 inch) or metres per unit; default: inferred from each skeleton")
    ap.add_argument("--report", help="also write a JSON report of every file (body figures, warnings)")
    ap.add_argument("--no-polish", action="store_true",
                    help="rotation transfer only: skip the pass that makes segments follow the source's")
    add_batch_options(ap)
    args = ap.parse_args(argv)
    check_batch_options(ap, args)
    if args.unit:
        try:
            parse_unit(args.unit)
        except SmplIkError as exc:
            ap.error(str(exc))

    jobs, failures = make_jobs(args)
    results = run_batch(jobs, failures, args)
    summary(results)
    if args.report:
        write_json(args.report, report(results))
    return 0 if results and not any(r.failed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

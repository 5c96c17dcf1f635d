"""Command-line options the batch programs share (scripts/retarget.py, scripts/video_to_smpl.py):
how a batch runs its jobs, locally or on a dask cluster (models.motion.batch.run_batch)."""
from models.motion.batch import run_batch, run_job


def add_batch_options(ap):
    """--jobs, --executor and --scheduler: how a batch script runs its jobs (run_batch_as_asked)."""
    ap.add_argument("--jobs", type=int, default=1, help="parallel workers (default 1)")
    ap.add_argument("--executor", choices=("local", "dask"), default="local",
                    help="local processes (default) or a dask.distributed cluster")
    ap.add_argument("--scheduler", help="dask scheduler address (default: a local cluster of --jobs workers)")


def check_batch_options(ap, args):
    """Stop with a usage error where the batch options contradict each other."""
    if args.scheduler and args.executor != "dask":
        ap.error("--scheduler needs --executor dask")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")


def run_batch_as_asked(jobs, failures, args, work=run_job):
    """models.motion.batch.run_batch with args' batch options; SmplIkError with the reason when
    the executor asked for cannot run."""
    return run_batch(jobs, failures, args.executor, args.scheduler, args.jobs, work)

"""Writing files so that a failure never leaves a half-written one: a temporary file beside
the target, renamed over it only once everything is written."""
import contextlib
import json
import os
import tempfile
from pathlib import Path

from .errors import SmplIkError


@contextlib.contextmanager
def atomic_path(path):
    """A temporary file's name in `path`'s folder (creating the folder), for a writer that
    takes a file name rather than a handle (Blender's render and save): when the block ends
    without an exception the file written there replaces `path` (mode 644), otherwise it is
    removed and `path` is untouched. The name ends with `path`'s own suffix, so a writer that
    adds a missing extension writes where it is told. An operating-system failure (no
    permission, disk full) raises SmplIkError naming the file."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".partial{path.suffix}", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise SmplIkError(f"cannot write to {path.parent}: {exc.strerror or exc}") from None
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise SmplIkError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_write(path, mode="wb"):
    """Open a temporary file in `path`'s folder (creating the folder) for writing ("wb" or
    "w"); when the block ends without an exception it replaces `path` (mode 644), otherwise it
    is removed and `path` is untouched (atomic_path). An operating-system failure (no
    permission, disk full) raises SmplIkError naming the file."""
    with atomic_path(path) as tmp:
        try:
            fh = open(tmp, mode)
        except OSError as exc:
            raise SmplIkError(f"cannot write {path}: {exc.strerror or exc}") from None
        with fh:
            yield fh


def write_json(path, data):
    """Write `data` as indented JSON (one trailing newline), atomically."""
    with atomic_write(path, "w") as fh:
        fh.write(json.dumps(data, indent=1) + "\n")

"""Writing files so that a failure never leaves a half-written one: a temporary file beside
the target, renamed over it only once everything is written; and finding the input files a
command line names."""
import contextlib
import glob
import json
import os
import tempfile
from dataclasses import dataclass
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


@dataclass(frozen=True)
class FoundFile:
    """A file an input named: path, and relative, its path below the folder it was found
    in (a file named alone, or a glob's match: its name), for outputs that keep sub-folders."""

    path: Path
    relative: Path


@dataclass(frozen=True)
class FileSearch:
    """find_files' answer: found (FoundFile, each folder's in sorted order) and missing
    ((input, reason) for each input that named no file)."""

    found: tuple
    missing: tuple


def find_files(inputs, suffixes, kind=None):
    """The files that command-line `inputs` name, each input being a file (taken whatever its
    suffix), a folder (searched recursively for files ending in one of `suffixes`, such as
    ('.bvh',), in any case) or a glob ('mocap/**/*.bvh', with ** reaching into sub-folders;
    the files it matches). kind: what a folder with none of them is said to lack ("video":
    "folder has no video files"; None: the suffixes). Returns a FileSearch."""
    suffixes = tuple(s.lower() for s in suffixes)
    found, missing = [], []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.suffix.lower() in suffixes and f.is_file())
            found += [FoundFile(f, f.relative_to(p)) for f in files]
            if not files:
                named = kind or (", ".join(suffixes[:-1]) + " or " + suffixes[-1] if len(suffixes) > 1 else suffixes[0])
                missing.append((str(item), f"folder has no {named} files"))
        elif p.is_file():
            found.append(FoundFile(p, Path(p.name)))
        elif any(ch in str(item) for ch in "*?["):
            files = sorted(Path(f) for f in glob.glob(str(item), recursive=True) if Path(f).is_file())
            found += [FoundFile(f, Path(f.name)) for f in files]
            if not files:
                missing.append((str(item), "pattern matches no files"))
        else:
            missing.append((str(item), "no such file or folder"))
    return FileSearch(found=tuple(found), missing=tuple(missing))

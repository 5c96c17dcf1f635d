"""Reading `.npz` archives and `.npy` arrays with allow_pickle=False, refusing what is not one
in words of our own: the file's first bytes say what it is before numpy reads it, so a BVH, a
photo, a pickle, an empty or a damaged file gets the same message on numpy 1 and numpy 2
(whose exception texts differ, and give advice about unpickling that we never want shown)."""
import ast
import struct
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .errors import SmplIkError

NPZ_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")   # a zip's first member; an empty zip's end record
NPY_MAGIC = b"\x93NUMPY"
# What numpy and zipfile raise for a damaged archive or array: not a zip, a damaged member or
# array header (ValueError, EOFError, zlib and struct errors, a CRC mismatch; numpy's Python 2
# header fallback lets SyntaxError and tokenize's TokenError through), a member compressed or
# flagged encrypted in a way zipfile cannot read (NotImplementedError, RuntimeError), or a
# header asking for an array larger than memory.
READ_ERRORS = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error, struct.error,
               SyntaxError, tokenize.TokenError, NotImplementedError, RuntimeError, MemoryError,
               OverflowError, RecursionError)
# What each kind of file (file_kind) is called when it is not the kind a reader wants.
_CALLED = {"npz": "an .npz archive", "npy": "a single .npy array", "pickle": "a pickle"}
_MAX_HEADER = 10000   # bytes; numpy's own limit on an array header it reads without being told


def file_kind(path):
    """What a file is by its first bytes: 'npz' (a zip archive), 'npy', 'pickle' (protocol 2
    or later: PROTO, then 2-5), 'empty' or 'other'. SmplIkError naming a missing or
    unreadable file."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(NPY_MAGIC))
    except FileNotFoundError:
        raise SmplIkError(f"{path}: no such file") from None
    except OSError as exc:
        raise SmplIkError(f"{path}: cannot read ({exc.strerror or 'the system refused'})") from None
    if not head:
        return "empty"
    if head[:4] in NPZ_MAGIC:
        return "npz"
    if head == NPY_MAGIC:
        return "npy"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "pickle"
    return "other"


def _refuse(path, what, kind, wanted):
    """SmplIkError: `path` is of `kind` (file_kind), not the `wanted` ('npz' or 'npy')."""
    want = {"npz": "an .npz archive", "npy": "a .npy array"}[wanted]
    why = ("the file is empty" if kind == "empty" else f"{_CALLED[kind]}, not {want}" if kind in _CALLED
           else f"not {want}")
    return SmplIkError(f"{path}: not a readable {what} ({why})")


def read_npz(path, keys=None, what="file"):
    """{key: array} for those of `keys` (None: every array) an `.npz` archive holds, read with
    allow_pickle=False. SmplIkError naming the file and saying it is not a readable `what`
    (and what it is instead: not an archive, a single .npy array, a pickle, empty, damaged),
    naming the array that holds pickled objects or is damaged."""
    path = Path(path)
    kind = file_kind(path)
    if kind != "npz":
        raise _refuse(path, what, kind, "npz")
    try:
        npz = np.load(path, allow_pickle=False)
    except READ_ERRORS:
        raise SmplIkError(f"{path}: not a readable {what} (a damaged or cut-short .npz archive)") from None
    with npz:
        out = {}
        for k in npz.files if keys is None else keys:
            if k not in npz.files:
                continue
            try:
                value = npz[k]
            except READ_ERRORS:
                if _holds_objects(npz.zip, k + ".npy"):
                    raise SmplIkError(f"{path}: array '{k}' is stored as pickled objects") from None
                raise SmplIkError(f"{path}: not a readable {what}: array '{k}' is damaged") from None
            if not isinstance(value, np.ndarray):   # a zip member that is no .npy: numpy gives its bytes
                raise SmplIkError(f"{path}: not a readable {what}: '{k}' in the archive is not a .npy array")
            out[k] = value
    return out


def read_npy(path, what="file"):
    """The array a `.npy` file holds, read with allow_pickle=False. SmplIkError naming the file
    and saying it is not a readable `what` (and what it is instead), or that its array is
    stored as pickled objects."""
    path = Path(path)
    kind = file_kind(path)
    if kind != "npy":
        raise _refuse(path, what, kind, "npy")
    try:
        return np.load(path, allow_pickle=False)
    except READ_ERRORS:
        with open(path, "rb") as fh:
            if _holds_objects_stream(fh):
                raise SmplIkError(f"{path}: the array is stored as pickled objects") from None
        raise SmplIkError(f"{path}: not a readable {what} (a damaged or cut-short .npy array)") from None


def _holds_objects(archive, member):
    """True when the archive's member is an .npy array whose header declares Python objects."""
    try:
        with archive.open(member) as fh:
            return _holds_objects_stream(fh)
    except READ_ERRORS:
        return False


def _holds_objects_stream(fh):
    """True when the .npy stream's header (read here, never its data) declares an object dtype;
    False for one that does not or cannot be read."""
    try:
        head = fh.read(len(NPY_MAGIC) + 2)
        if len(head) < 8 or not head.startswith(NPY_MAGIC) or head[6] not in (1, 2, 3):
            return False
        width = 2 if head[6] == 1 else 4
        size = int.from_bytes(fh.read(width), "little")
        if size > _MAX_HEADER:
            return False
        text = fh.read(size).decode("utf-8" if head[6] == 3 else "latin-1")
        header = ast.literal_eval(text)
        return isinstance(header, dict) and np.lib.format.descr_to_dtype(header.get("descr")).hasobject
    except (*READ_ERRORS, TypeError, AttributeError):
        return False

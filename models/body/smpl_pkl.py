"""Official SMPL-family .pkl body files, read through a restricted unpickler that needs neither
chumpy nor scipy and imports nothing but the few constructors such a file uses."""
import io
import pickle
import re
import struct

import numpy as np

from ..core.errors import SmplIkError


class _Unreadable(ValueError):
    """Why a pickled body file's content is not read, in our own words."""


class _ChumpyArray:
    """Stands in for a pickled chumpy object; keeps its value array (state key 'x')."""

    def __setstate__(self, state):
        self.value = state.get("x") if isinstance(state, dict) else None


class _SparseMatrix:
    """Stands in for a pickled scipy.sparse CSC/CSR matrix; converts itself to dense."""

    fmt = None

    def __setstate__(self, state):
        self.state = state

    def to_dense(self):
        s = self.state
        shape = tuple(int(n) for n in (s.get("_shape") or s.get("shape")))
        data, indices, indptr = (np.asarray(_plain(s[k])) for k in ("data", "indices", "indptr"))
        if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu" or data.dtype.kind not in "biuf":
            raise _Unreadable("the sparse matrix's arrays are not numbers")
        dense = np.zeros(shape, dtype=np.float64)
        outer = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        if self.fmt == "csc":
            np.add.at(dense, (indices, outer), data)
        else:
            np.add.at(dense, (outer, indices), data)
        return dense


class _CSC(_SparseMatrix):
    fmt = "csc"


class _CSR(_SparseMatrix):
    fmt = "csr"


# Arrays, dtypes and scalars are stood in for: only a dtype's type code and byte order are kept
# and plain arrays are built with np.frombuffer (docs/training_log.md, "SMPL pickles").
_PLAIN_CODE = re.compile(r"[biufUS]\d{1,3}")


class _PickledDtype:
    def __init__(self, code=None, align=False, copy=True):
        self.code, self.order = code, "="

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) > 1 and state[1] in ("<", ">", "|", "="):
            self.order = state[1]

    def to_numpy(self):
        try:
            if not isinstance(self.code, str) or not _PLAIN_CODE.fullmatch(self.code):
                raise TypeError
            dtype = np.dtype(self.code)
        except TypeError:   # not a code, or one numpy does not know ('f3')
            raise _Unreadable(f"an array of {self.code!r} values, not plain numbers") from None
        return dtype.newbyteorder(self.order) if self.order in "<>" else dtype


class _PickledArray:
    value = None
    error = "an array without data"

    def __setstate__(self, state):
        try:
            self.value, self.error = _array_from_state(state), None
        except (TypeError, ValueError, OverflowError, MemoryError) as exc:
            self.value, self.error = None, _own_words(exc, "an array that cannot be rebuilt")


def _array_from_state(state):
    """An ndarray from a pickled ndarray's state (version, shape, dtype, fortran, data)."""
    if not isinstance(state, tuple) or len(state) not in (4, 5):
        raise _Unreadable("not an array's pickled state")
    shape, dtype, fortran, data = state[-4:]
    if not isinstance(dtype, _PickledDtype):
        raise _Unreadable("an array without a dtype")
    dtype = dtype.to_numpy()
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and 0 <= n < 2 ** 40 for n in shape):
        raise _Unreadable(f"an array of shape {shape!r}")
    if isinstance(data, str):   # Python 2 pickles: bytes as latin-1 text
        data = data.encode("latin-1")
    if not isinstance(data, (bytes, bytearray)):
        raise _Unreadable("an array whose data are not bytes")
    count = 1
    for n in shape:
        count *= n
    if len(data) != count * dtype.itemsize:
        raise _Unreadable(f"an array of shape {shape} with {len(data)} bytes of {dtype}")
    array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return array.astype(dtype.newbyteorder("="))   # a writable copy in native byte order


def _reconstruct(cls, *args):
    if cls is not _PickledArray:
        raise _Unreadable("refusing to reconstruct anything but a numpy array")
    return _PickledArray()


def _scalar(dtype, data=None):
    if not isinstance(dtype, _PickledDtype):
        raise _Unreadable("a numpy scalar without a dtype")
    try:
        return _array_from_state((1, (), dtype, False, data))[()]
    except ValueError:
        return None   # a scalar we do not read (an object); no body array is one


class _RestrictedUnpickler(pickle.Unpickler):
    """Loads official SMPL-family pickles while refusing to import anything else."""

    _STAND_INS = {
        ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy.core.multiarray", "scalar"): _scalar, ("numpy._core.multiarray", "scalar"): _scalar,
        ("numpy", "ndarray"): _PickledArray, ("numpy", "dtype"): _PickledDtype,
    }
    _ALLOWED = {
        ("copyreg", "_reconstructor"), ("copyreg", "__newobj__"), ("builtins", "object"),
        ("builtins", "set"), ("builtins", "frozenset"),
        ("_codecs", "encode"),  # how protocol-2 pickles written by Python 3 store bytes
    }
    _PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}

    def find_class(self, module, name):
        module = self._PY2_MODULES.get(module, module)
        if module.split(".")[0] == "chumpy":
            return _ChumpyArray
        if module.startswith("scipy.sparse") and name in ("csc_matrix", "csr_matrix"):
            return _CSC if name == "csc_matrix" else _CSR
        if (module, name) in self._STAND_INS:
            return self._STAND_INS[(module, name)]
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise _Unreadable(f"refusing to load {module}.{name}")


def _plain(value):
    """A pickled value as numpy data: chumpy and sparse stand-ins give their arrays."""
    if isinstance(value, _ChumpyArray):
        value = value.value
    if isinstance(value, _SparseMatrix):
        return value.to_dense()
    if isinstance(value, _PickledArray):
        if value.error:
            raise _Unreadable(value.error)
        return value.value
    return value


# What unpickling damaged bytes through the restricted unpickler can raise: besides the
# unpickler's own errors, the few constructors it allows (numpy's array reconstruction,
# copyreg, sets, codecs) fail with whatever their arguments provoke.
PICKLE_ERRORS = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, LookupError,
                 MemoryError, OverflowError, RecursionError, struct.error)


def _own_words(exc, otherwise):
    """exc's message when it is one of ours (_Unreadable), else `otherwise`: the words of
    pickle's and numpy's own errors change between versions and mean nothing to an artist."""
    return str(exc) if isinstance(exc, _Unreadable) and str(exc) else otherwise


def read_pkl_arrays(path, names):
    """{name: array} of the arrays `names` that an SMPL-family .pkl file at `path` holds (those
    it lacks are left out), read through the restricted unpickler. SmplIkError naming the file
    when it cannot be read, is not a pickled dictionary, or holds an array that is unreadable.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SmplIkError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        raw = _RestrictedUnpickler(io.BytesIO(raw), encoding="latin1").load()
        if not isinstance(raw, dict):
            raise SmplIkError(f"{path}: expected a dictionary of arrays, found {type(raw).__name__}")
        arrays = {}
        for k, v in raw.items():
            if k in names:
                try:
                    arrays[k] = _plain(v)
                except (KeyError, TypeError, ValueError, IndexError, AttributeError, MemoryError,
                        OverflowError) as exc:
                    raise SmplIkError(f"{path}: array '{k}' is not readable "
                                      f"({_own_words(exc, 'its values do not make an array')})") from None
    except PICKLE_ERRORS as exc:
        raise SmplIkError(f"{path}: not a readable body model file "
                          f"({_own_words(exc, 'not a pickle of arrays, or a damaged one')})") from None
    return arrays

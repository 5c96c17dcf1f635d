"""The detector's model files and the runtime that runs them: MediaPipe's pose and hand models
(TFLite files, recorded with their source, licence and checksum in detector_models.toml) run by
LiteRT, an optional package that the per-platform builds of the extension bundle."""
import functools
import hashlib
import importlib
import importlib.util
import os
import threading
import tomllib
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError

HERE = Path(__file__).resolve().parent
RECORD = HERE / "detector_models.toml"
WEIGHTS = HERE / "weights"
# The packages that detection imports, by import name and PyPI name.
PACKAGES = (("ai_edge_litert", "ai-edge-litert"), ("cv2", "opencv-python-headless"))
MAX_THREADS = 4         # more threads than this gain nothing on models this small


class MissingPackage(SmplIkError):
    """A package the detector needs is not installed (the build of the extension has no photo
    packages); `package` names it."""

    def __init__(self, package, what):
        self.package = package
        super().__init__(f"{what} needs the Python package '{package}', which is not installed")


@functools.lru_cache(maxsize=1)
def record():
    """The models' record: {file name: {"sha256", "bytes", "path_in_wheel", "what"}}."""
    with open(RECORD, "rb") as f:
        return tomllib.load(f)["models"]


def require_packages(what):
    """Import the detector's packages; MissingPackage naming the first one that is absent."""
    for module, package in PACKAGES:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise MissingPackage(package, what) from e


def unavailable(what="pose from a photo"):
    """Why the detector cannot run in this installation, or None: a MissingPackage, or a
    SmplIkError for a model file missing. Packages are looked for, not imported, and files not
    read (model_path checks their contents when a model loads)."""
    for module, package in PACKAGES:
        if importlib.util.find_spec(module) is None:
            return MissingPackage(package, what)
    for name in record():
        if not (WEIGHTS / name).is_file():
            return SmplIkError(_missing_file(name))
    return None


def _missing_file(name):
    return (f"the detector's model file {name} is missing from this installation ({WEIGHTS}): "
            "reinstall the extension")


def model_path(name):
    """The checked path of model file `name`: SmplIkError when it is missing from the build or
    its bytes are not the recorded ones (a damaged or replaced file)."""
    entry = record().get(name)
    if entry is None:
        raise SmplIkError(f"{name}: not one of the detector's models ({', '.join(sorted(record()))})")
    path = WEIGHTS / name
    if not path.is_file():
        raise SmplIkError(_missing_file(name))
    if _sha256(path, path.stat().st_size, path.stat().st_mtime_ns) != entry["sha256"]:
        raise SmplIkError(f"the detector's model file {name} is damaged (its contents are not the "
                          f"recorded ones; {path}): reinstall the extension")
    return path


@functools.lru_cache(maxsize=16)
def _sha256(path, size, mtime):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Model:
    """One model file loaded by LiteRT: `run(array)` takes its single input (float32, the input's
    shape) and returns its outputs in order, as float32 arrays. Not safe for two threads at
    once: callers hold `lock`. Call require_packages first."""

    def __init__(self, name):
        from ai_edge_litert.interpreter import Interpreter

        path = model_path(name)
        try:
            self.interpreter = Interpreter(model_path=str(path), num_threads=min(os.cpu_count() or 1, MAX_THREADS))
            self.interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as e:
            raise SmplIkError(f"the detector's model file {name} could not be loaded ({path}): "
                              "reinstall the extension") from e
        self.name = name
        self.input = self.interpreter.get_input_details()[0]
        self.outputs = [d["index"] for d in self.interpreter.get_output_details()]
        self.lock = threading.Lock()

    @property
    def input_shape(self):
        return tuple(int(v) for v in self.input["shape"])

    def run(self, array):
        array = np.ascontiguousarray(array, dtype=np.float32).reshape(self.input_shape)
        self.interpreter.set_tensor(self.input["index"], array)
        self.interpreter.invoke()
        return [np.array(self.interpreter.get_tensor(i)) for i in self.outputs]


@functools.lru_cache(maxsize=None)
def shared_model(name):
    """The one loaded Model of file `name` in this process (require_packages first)."""
    return Model(name)

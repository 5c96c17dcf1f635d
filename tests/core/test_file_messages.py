"""Every reader of array files (motions, body models, joint files, weights) refuses a file of
the wrong kind in words of its own, the same on numpy 1 and numpy 2: the message names the
file and says what it is not (and what it is, when that is known), and never quotes numpy's,
zipfile's or pickle's exception text or advice (numpy 2's "load it unsafely using the
`allow_pickle=` keyword argument or `pickle.load()`" reached artists through Import Motion)."""
import ast
import io
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from models.body.model import BodyModel
from models.core.errors import SmplIkError
from models.ik.library import PoseLibrary
from models.motion.amass import read_motion_npz
from models.motion.joints import read_joint_file

ROOT = Path(__file__).resolve().parents[2]

BVH = (b"HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 3 Xposition Yposition Zposition\n}\n"
       b"MOTION\nFrames: 1\nFrame Time: 0.033\n0 0 0\n")
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + bytes(200)
TEXT = b"poses: 1 2 3\nthis is a note, not a motion\n"
# A library's words that must never reach a person: exception class names, numpy 2's advice.
LIBRARY_WORDS = re.compile(r"allow_pickle|pickle\.load|unsafely|Traceback|\b[A-Z]\w*(Error|Exception)\b|Errno")


def _npz(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _npy(array, allow_pickle=False):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return buf.getvalue()


OBJECTS = np.array([{"poses": 1}, None], dtype=object)   # an array numpy can only pickle
POSES = np.zeros((3, 72))
PICKLE = pickle.dumps({"poses": [[0.0] * 72]}, protocol=4)


def _refused(read, path, data):
    path.write_bytes(data)
    with pytest.raises(SmplIkError) as raised:
        read(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: "), message
    assert not LIBRARY_WORDS.search(message), message
    return message


NOT_NPZ = {   # what an .npz reader says of each kind of file, after "<file>: not a readable <what> "
    "bvh": (BVH, "(not an .npz archive)"),
    "jpeg": (JPEG, "(not an .npz archive)"),
    "text": (TEXT, "(not an .npz archive)"),
    "empty": (b"", "(the file is empty)"),
    "pickle": (PICKLE, "(a pickle, not an .npz archive)"),
    "npy": (_npy(POSES), "(a single .npy array, not an .npz archive)"),
    "pickled npy": (_npy(OBJECTS, allow_pickle=True), "(a single .npy array, not an .npz archive)"),
    "truncated": (_npz(poses=POSES, joints=np.zeros((3, 24, 3)))[:300], "(a damaged or cut-short .npz archive)"),
}


@pytest.mark.parametrize("case", sorted(NOT_NPZ))
@pytest.mark.parametrize("read,what", [(read_motion_npz, "motion file"), (BodyModel.from_file, "body model file"),
                                       (read_joint_file, "joint file"), (PoseLibrary.load, "weights file")],
                         ids=["motion", "body", "joints", "weights"])
def test_npz_readers_say_what_a_file_is_not(tmp_path, read, what, case):
    data, why = NOT_NPZ[case]
    path = tmp_path / f"{case.replace(' ', '_')}.npz"
    assert _refused(read, path, data) == f"{path}: not a readable {what} {why}"


@pytest.mark.parametrize("read,key,message", [
    (read_motion_npz, "poses", "array 'poses' is stored as pickled objects"),
    (BodyModel.from_file, "v_template", "a required array is stored as pickled objects"),
    (read_joint_file, "joints", "array 'joints' is stored as pickled objects"),
    (PoseLibrary.load, "__config__", "array '__config__' is stored as pickled objects"),
], ids=["motion", "body", "joints", "weights"])
def test_an_array_stored_as_pickled_objects_is_named(tmp_path, read, key, message):
    path = tmp_path / "objects.npz"
    assert _refused(read, path, _npz(**{key: OBJECTS})) == f"{path}: {message}"


def test_a_bvh_given_to_import_motion_is_no_pickle_whatever_its_name(tmp_path):
    """The issue's case: the BVH itself (its own name), not renamed."""
    path = tmp_path / "walk.bvh"
    assert _refused(read_motion_npz, path, BVH) == f"{path}: not a readable motion file (not an .npz archive)"


NOT_NPY = {
    "bvh": (BVH, "(not a .npy array)"),
    "jpeg": (JPEG, "(not a .npy array)"),
    "text": (TEXT, "(not a .npy array)"),
    "empty": (b"", "(the file is empty)"),
    "pickle": (PICKLE, "(a pickle, not a .npy array)"),
    "npz": (_npz(joints=np.zeros((3, 24, 3))), "(an .npz archive, not a .npy array)"),
    "truncated": (_npy(np.zeros((30, 24, 3)))[:500], "(a damaged or cut-short .npy array)"),
}


@pytest.mark.parametrize("case", sorted(NOT_NPY))
def test_the_npy_joint_reader_says_what_a_file_is_not(tmp_path, case):
    data, why = NOT_NPY[case]
    path = tmp_path / f"{case}.npy"
    assert _refused(read_joint_file, path, data) == f"{path}: not a readable joint file {why}"


def test_a_pickled_npy_joint_file_is_named(tmp_path):
    path = tmp_path / "objects.npy"
    message = _refused(read_joint_file, path, _npy(OBJECTS, allow_pickle=True))
    assert message == f"{path}: the array is stored as pickled objects"


@pytest.mark.parametrize("suffix", [".csv", ".json"])
@pytest.mark.parametrize("case,data,message", [
    ("jpeg", JPEG, "not a UTF-8 text file"),
    ("empty", b"", "the file is empty"),
    ("npz", _npz(joints=np.zeros((3, 24, 3))), "not a UTF-8 text file"),
])
def test_text_joint_readers_say_what_a_file_is_not(tmp_path, suffix, case, data, message):
    path = tmp_path / f"{case}{suffix}"
    assert _refused(read_joint_file, path, data) == f"{path}: {message}"


@pytest.mark.parametrize("case,data", [("bvh", BVH), ("text", TEXT), ("jpeg", JPEG), ("empty", b""),
                                       ("truncated", PICKLE[:20]), ("npz", _npz(v_template=np.zeros((4, 3))))])
def test_the_pickle_body_reader_says_what_a_file_is_not(tmp_path, case, data):
    path = tmp_path / f"{case}.pkl"
    message = _refused(BodyModel.from_file, path, data)
    assert message == f"{path}: not a readable body model file (not a pickle of arrays, or a damaged one)"


def test_json_joint_files_that_do_not_parse_say_where(tmp_path):
    path = tmp_path / "broken.json"
    assert _refused(read_joint_file, path, b"[[1, 2, 3],\n [") == f"{path}: not valid JSON (line 2, column 3)"
    assert _refused(read_joint_file, path, b"[" * 100000) == f"{path}: not valid JSON (nested too deeply)"


def test_only_the_npz_module_loads_arrays_from_files():
    """np.load is called in one place (models/core/npz.py), so no reader in models/ or addon/
    passes numpy's exception texts on again."""
    calls = []
    for folder in ("models", "addon"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load"
                        and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy")):
                    calls.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert calls and {c.split(":")[0] for c in calls} == {"models/core/npz.py"}, calls

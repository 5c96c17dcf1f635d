"""Readers that never crash: valid files (a BVH, a body model .npz and .pkl made from the open
body's arrays, an AMASS-style motion .npz, a mapping JSON) truncated, bit-flipped, overwritten,
re-tokenised or replaced by random bytes must either still read or raise SmplIkError whose
message names the file, never another exception. And every writer of user files is atomic.

FUZZ_EXAMPLES=2000 explores more (and differently each run); by default each property runs a
fixed set of examples so the suite is quick and repeatable.
"""
import ast
import io
import os
import pickle
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conftest import official_smpl_pickle
from models.body.model import OPEN_BODY_PATH, REQUIRED_ARRAYS, BodyModel
from models.core.errors import SmplIkError
from models.motion.amass import read_motion_npz
from models.motion.bvh import read_bvh
from models.motion.joints import read_joint_file
from models.motion.mapping import load_overrides

ROOT = Path(__file__).resolve().parents[2]
EXPLORE = int(os.environ.get("FUZZ_EXAMPLES", "0"))


def fuzz(examples):
    return settings(max_examples=EXPLORE or examples, deadline=None, database=None, derandomize=not EXPLORE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- the valid files --------------------------------------------------------------------------

VALID_BVH = b"""HIERARCHY
ROOT Hips
{
\tOFFSET 0.0 90.0 0.0
\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
\tJOINT LeftUpLeg
\t{
\t\tOFFSET 10.0 -5.0 0.0
\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\tJOINT LeftLeg
\t\t{
\t\t\tOFFSET 0.0 -40.0 0.0
\t\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\t\tEnd Site
\t\t\t{
\t\t\t\tOFFSET 0.0 -40.0 0.0
\t\t\t}
\t\t}
\t}
\tJOINT Spine
\t{
\t\tOFFSET 0.0 10.0 0.0
\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\tEnd Site
\t\t{
\t\t\tOFFSET 0.0 30.0 0.0
\t\t}
\t}
}
MOTION
Frames: 3
Frame Time: 0.033333
0.0 90.0 0.0 0.0 0.0 0.0 5.0 0.0 0.0 10.0 0.0 0.0 0.0 0.0 0.0
1.0 90.5 0.0 1.0 2.0 3.0 6.0 1.0 0.0 12.0 0.0 0.0 1.0 0.0 0.0
2.0 91.0 0.0 2.0 4.0 6.0 7.0 2.0 0.0 14.0 0.0 0.0 2.0 0.0 0.0
"""

VALID_MAPPING = b'{\n "left_hand": "lhand",\n "spine1": null,\n "right_hand": "rhand"\n}\n'


def _small_body_arrays():
    """An SMPL-layout body of 12 vertices cut from the open body (every array's real layout and
    dtype, small enough to write a hundred times)."""
    with np.load(OPEN_BODY_PATH, allow_pickle=False) as npz:
        a = {k: npz[k] for k in REQUIRED_ARRAYS + ("landmark_names", "landmark_vertex_ids", "gender")}
    keep = np.argsort(-a["weights"], axis=0)[0]        # each joint's most weighted vertex ...
    keep = np.unique(np.concatenate([keep, np.arange(12)]))[:30]
    out = {"v_template": a["v_template"][keep], "shapedirs": a["shapedirs"][keep],
           "posedirs": a["posedirs"][keep], "weights": a["weights"][keep],
           "J_regressor": a["J_regressor"][:, keep], "kintree_table": a["kintree_table"],
           "f": np.array([[0, 1, 2], [2, 3, 4], [4, 5, 0]], dtype=a["f"].dtype),
           "landmark_names": a["landmark_names"][:3], "landmark_vertex_ids": np.array([0, 5, 7]),
           "gender": a["gender"]}
    out["J_regressor"] = out["J_regressor"] / np.maximum(out["J_regressor"].sum(1, keepdims=True), 1e-9)
    return out


BODY = _small_body_arrays()


def _npz_bytes(arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _pkl_bytes(arrays):
    """Protocol 2, as the official SMPL pickles (plain arrays here)."""
    return pickle.dumps({k: v for k, v in arrays.items() if k in REQUIRED_ARRAYS} | {"bs_style": "lbs"}, protocol=2)


def _official_pkl_bytes(arrays):
    return official_smpl_pickle(arrays, vert_sym_idxs=np.arange(3))


MOTION = {"poses": np.random.default_rng(3).normal(scale=0.3, size=(4, 72)).astype(np.float32),
          "trans": np.zeros((4, 3), np.float32), "betas": np.zeros(10, np.float32),
          "mocap_framerate": np.float64(30.0), "gender": np.array("neutral"),
          "body_model": np.array("open_smpl_neutral"), "source": np.array("clip.bvh"),
          "limb_error_deg": np.float32(0.4)}


# --- mutations --------------------------------------------------------------------------------

NUMBERS = [b"nan", b"-nan", b"inf", b"-inf", b"1e999", b"1e300", b"1e-320", b"-1", b"-0", b"0", b"0.5", b"2.5",
           b"99999999999999999999", b"0x10", b"1_0", b"+3", b"3e0", b""]
TOKENS = [b"nan", b"inf", b"-inf", b"1e999", b"-1", b"0", b"99999999999999999999", b"x", b"", b"{", b"}",
          b"ROOT", b"JOINT", b"End Site", b"OFFSET", b"CHANNELS", b"CHANNELS 99", b"MOTION", b"Frames:",
          b"Frame Time:", b"Xposition", b"\x00", b"\xff\xfe", b"null", b"[", b"]", b'"', b",", b":", b"\r\n"]


@st.composite
def mutated(draw, valid, text=False):
    """`valid` truncated, with bits flipped, bytes overwritten, a span deleted or duplicated,
    a token replaced (text files), or random bytes."""
    kinds = ["truncate", "flip", "overwrite", "splice", "random"] + (["token", "number", "lines"] if text else [])
    kind = draw(st.sampled_from(kinds))
    data = bytearray(valid)
    n = len(data)
    if kind == "truncate":
        return bytes(data[:draw(st.integers(0, n - 1))])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, n - 1))] ^= 1 << draw(st.integers(0, 7))
        return bytes(data)
    if kind == "overwrite":
        at = draw(st.integers(0, n - 1))
        new = draw(st.binary(min_size=1, max_size=16))
        data[at:at + len(new)] = new
        return bytes(data)
    if kind == "splice":
        a = draw(st.integers(0, n - 1))
        b = draw(st.integers(a, min(n, a + 200)))
        return bytes(data[:a] + data[b:]) if draw(st.booleans()) else bytes(data[:b] + data[a:])
    if kind == "token":
        spans = [m.span() for m in re.finditer(rb"[^\s]+", valid)]
        for _ in range(draw(st.integers(1, 3))):
            a, b = draw(st.sampled_from(spans))
            data = bytearray(valid[:a] + draw(st.sampled_from(TOKENS)) + valid[b:])
            valid = bytes(data)
            spans = [m.span() for m in re.finditer(rb"[^\s]+", valid)] or [(0, 0)]
        return bytes(data)
    if kind == "number":   # a number (a count, an offset, a channel value) made extreme
        spans = [m.span() for m in re.finditer(rb"-?\d+(\.\d+)?", valid)]
        a, b = draw(st.sampled_from(spans))
        return valid[:a] + draw(st.sampled_from(NUMBERS)) + valid[b:]
    if kind == "lines":
        lines = valid.split(b"\n")
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "repeat", "swap"]))
        if op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        else:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    return draw(st.binary(max_size=draw(st.sampled_from([16, 256, 4096]))))


def _odd_array():
    """Arrays of any small shape and a dtype a file might hold instead of the right one."""
    dtypes = st.sampled_from([np.float32, np.float64, np.int8, np.int64, np.uint8, np.bool_, np.complex64,
                              "U3", "S4"])
    return dtypes.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, max_side=6)))


@st.composite
def npz_contents(draw, valid):
    """`valid`'s arrays with some dropped, replaced by odd arrays, reshaped, or given NaNs."""
    arrays = {}
    for k, v in valid.items():
        op = draw(st.sampled_from(["keep", "keep", "drop", "odd", "nan", "reshape", "slice"]))
        if op == "keep":
            arrays[k] = v
        elif op == "odd":
            arrays[k] = draw(_odd_array())
        elif op == "nan" and v.dtype.kind == "f" and v.size:
            v = v.copy()
            v.reshape(-1)[draw(st.integers(0, v.size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf, 1e30]))
            arrays[k] = v
        elif op == "reshape" and v.size:
            arrays[k] = v.reshape(-1)
        elif op == "slice" and v.ndim:
            arrays[k] = v[:draw(st.integers(0, max(0, v.shape[0] - 1)))]
    return arrays


# A library's own words (its exception names, numpy 2's advice to unpickle), which differ
# between versions and must not reach a person.
LIBRARY_WORDS = re.compile(r"allow_pickle|pickle\.load|unsafely|Traceback|\b[A-Z]\w*(Error|Exception)\b")


def _check(read, path, data):
    """`read(path)` of bytes `data` either returns or raises SmplIkError naming `path` in
    words of our own."""
    path.write_bytes(data)
    try:
        read(path)
    except SmplIkError as exc:
        assert str(path) in str(exc), str(exc)
        assert not LIBRARY_WORDS.search(str(exc)), str(exc)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


# --- the readers -------------------------------------------------------------------------------

def test_valid_files_read(folder):
    """The starting points are valid, so the mutations start from files that read."""
    for name, data, read in (("ok.bvh", VALID_BVH, read_bvh), ("ok.json", VALID_MAPPING, load_overrides),
                             ("ok.npz", _npz_bytes(BODY), BodyModel.from_file),
                             ("ok.pkl", _pkl_bytes(BODY), BodyModel.from_file),
                             ("official.pkl", _official_pkl_bytes(BODY), BodyModel.from_file),
                             ("motion.npz", _npz_bytes(MOTION), read_motion_npz)):
        (folder / name).write_bytes(data)
        assert read(folder / name) is not None, name
    assert read_bvh(folder / "ok.bvh").values.shape == (3, 15)
    for name in ("ok.pkl", "official.pkl"):   # the pickles read as the .npz does
        assert np.allclose(BodyModel.from_file(folder / name).rest_joints(np.ones(10)),
                           BodyModel.from_file(folder / "ok.npz").rest_joints(np.ones(10)))
    m = read_motion_npz(folder / "motion.npz")
    assert m.poses.shape == (4, 24, 3) and m.fps == 30.0 and m.gender == "neutral" and not m.notes


@fuzz(150)
@given(data=mutated(VALID_BVH, text=True))
def test_bvh_reader_never_crashes(folder, data):
    _check(read_bvh, folder / "fuzz.bvh", data)


@fuzz(100)
@given(data=mutated(VALID_MAPPING, text=True))
def test_mapping_reader_never_crashes(folder, data):
    _check(load_overrides, folder / "fuzz.json", data)


@fuzz(100)
@given(data=mutated(_npz_bytes(BODY)))
def test_body_npz_reader_never_crashes(folder, data):
    _check(BodyModel.from_file, folder / "fuzz_body.npz", data)


@fuzz(100)
@given(arrays=npz_contents(BODY))
def test_body_npz_with_odd_arrays_never_crashes(folder, arrays):
    _check(BodyModel.from_file, folder / "odd_body.npz", _npz_bytes(arrays))


@fuzz(120)
@given(data=mutated(_pkl_bytes(BODY)))
def test_body_pkl_reader_never_crashes(folder, data):
    _check(BodyModel.from_file, folder / "fuzz_body.pkl", data)


@fuzz(100)
@given(data=mutated(_official_pkl_bytes(BODY)))
def test_official_layout_pkl_reader_never_crashes(folder, data):
    _check(BodyModel.from_file, folder / "fuzz_official.pkl", data)


def test_damaged_pickled_dtype_does_not_crash_python(folder):
    """A pickled dtype whose state is damaged (one byte: a None became a memo opcode) made
    numpy's own unpickling crash the interpreter (a segmentation fault); the reader builds
    arrays itself. Run in a child process, so a regression fails this test, not the suite."""
    data = pickle.dumps({"v_template": np.zeros((3, 3))}, protocol=2)
    at = data.index(b"NNNJ\xff\xff\xff\xff")
    path = folder / "damaged_dtype.pkl"
    path.write_bytes(data[:at + 1] + b"q" + data[at + 2:])
    code = ("import sys; from models.body.model import BodyModel; from models.core.errors import SmplIkError\n"
            "try:\n    BodyModel.from_file(sys.argv[1])\nexcept SmplIkError as exc:\n    print(exc)\n")
    run = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith(str(path)), run.stdout


@fuzz(60)
@given(arrays=npz_contents(BODY))
def test_body_pkl_with_odd_arrays_never_crashes(folder, arrays):
    _check(BodyModel.from_file, folder / "odd_body.pkl", _pkl_bytes(arrays))


@fuzz(100)
@given(data=mutated(_npz_bytes(MOTION)))
def test_motion_npz_reader_never_crashes(folder, data):
    _check(read_motion_npz, folder / "fuzz_motion.npz", data)


@fuzz(120)
@given(arrays=npz_contents(MOTION))
def test_motion_npz_with_odd_arrays_never_crashes(folder, arrays):
    _check(read_motion_npz, folder / "odd_motion.npz", _npz_bytes(arrays))


JOINTS = {"joints": np.random.default_rng(5).normal(size=(3, 24, 3)), "fps": np.float64(30.0)}


def _npy_of_joints():
    buf = io.BytesIO()
    np.save(buf, JOINTS["joints"])
    return buf.getvalue()


@fuzz(80)
@given(data=mutated(_npz_bytes(JOINTS)))
def test_joint_npz_reader_never_crashes(folder, data):
    _check(read_joint_file, folder / "fuzz_joints.npz", data)


@fuzz(80)
@given(data=mutated(_npy_of_joints()))
def test_joint_npy_reader_never_crashes(folder, data):
    _check(read_joint_file, folder / "fuzz_joints.npy", data)


# --- the messages say what is wrong --------------------------------------------------------------

@pytest.mark.parametrize("change,message", [
    (lambda a: a.update(poses=a["poses"][:, :3]), r"array 'poses' has shape \(4, 3\); expected \(frames, 72\)"),
    (lambda a: a["poses"].__setitem__((2, 13), np.nan), r"array 'poses' has nan at frame 2, joint 4 \(left_knee\)"),
    (lambda a: a.update(gender=np.array("robot")), r"array 'gender' is 'robot'; expected one of neutral, female, male"),
    (lambda a: a.update(trans=a["trans"][:2]), r"array 'trans' has shape \(2, 3\); expected \(4, 3\)"),
    (lambda a: a.update(mocap_framerate=np.float64(0)), r"array 'mocap_framerate' should be one positive number"),
    (lambda a: a.pop("poses"), r"no 'poses' array"),
    (lambda a: a.update(poses=np.zeros((0, 24, 3))), r"array 'poses' has no frames"),
    (lambda a: a.update(poses=np.array(["a", "b"])), r"array 'poses' holds <U1 values, not numbers"),
])
def test_motion_reader_names_the_array(folder, change, message):
    arrays = {k: v.copy() for k, v in MOTION.items()}
    change(arrays)
    path = folder / "named.npz"
    path.write_bytes(_npz_bytes(arrays))
    with pytest.raises(SmplIkError, match=re.escape(str(path)) + ": " + message):
        read_motion_npz(path)


def test_motion_reader_takes_amass_layouts(folder, rng):
    """SMPL-H (156) and SMPL-X (165) poses keep their 22 body joints; optional keys may be
    absent; AMASS's bytes gender and mocap_frame_rate spelling read."""
    for width, kind in ((156, "smplh"), (165, "smplx")):
        poses = rng.normal(size=(5, width))
        path = folder / f"{kind}.npz"
        np.savez(path, poses=poses, gender=np.array(b"female"), mocap_frame_rate=np.array(60.0),
                 betas=rng.normal(size=16))
        m = read_motion_npz(path)
        assert m.kind == kind and m.gender == "female" and m.fps == 60.0 and m.betas.shape == (16,)
        assert np.array_equal(m.poses[:, :22].reshape(5, -1), poses[:, :66])
        assert not m.poses[:, 22:].any() and np.array_equal(m.trans, np.zeros((5, 3)))
        assert any("trans" in n for n in m.notes)
    path = folder / "bare.npz"
    np.savez(path, poses=rng.normal(size=(2, 24, 3)))
    m = read_motion_npz(path)
    assert m.fps is None and m.gender is None and m.betas.shape == (0,) and len(m.notes) == 4


def test_damaged_files_name_the_array(folder):
    """A damaged member of a valid archive is named; so is the line of a JSON mapping."""
    data = bytearray(_npz_bytes(MOTION))
    at = data.index(b"trans.npy") + 200   # inside the trans member's data: its CRC fails
    data[at] ^= 0xFF
    path = folder / "damaged.npz"
    path.write_bytes(bytes(data))
    with pytest.raises(SmplIkError,
                       match=re.escape(str(path)) + r": not a readable motion file: array 'trans' is damaged"):
        read_motion_npz(path)
    path = folder / "latin.json"
    path.write_bytes(b'{\n "left_hand": "\xe9paule"\n}')
    with pytest.raises(SmplIkError, match=re.escape(str(path)) + r":2: not a UTF-8 text file"):
        load_overrides(path)


def _npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _npz_with_broken_header(name="poses"):
    """An archive whose member's .npy header is cut inside a parenthesis: numpy's fallback
    header parser raised tokenize.TokenError through np.load."""
    raw = bytearray(_npy_bytes(np.zeros((4, 72))))
    size = int.from_bytes(raw[8:10], "little")
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (4, 72}".ljust(size - 1) + b"\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{name}.npy", bytes(raw[:10]) + header + bytes(raw[10 + size:]))
    return buf.getvalue()


def _body_with(**change):
    return _npz_bytes(BODY | change)


# Inputs the properties above found (or that sit next to them), kept as plain cases so they
# run every time: each crashed a reader, or was read as if valid, before it was fixed.
@pytest.mark.parametrize("name,data,read,message", [
    ("frames_nan.bvh", VALID_BVH.replace(b"Frames: 3", b"Frames: nan"), read_bvh,
     r":31: Frames must be a whole number"),
    ("frames_inf.bvh", VALID_BVH.replace(b"Frames: 3", b"Frames: 1e999"), read_bvh,
     r":31: Frames must be a whole number"),
    ("offset_nan.bvh", VALID_BVH.replace(b"OFFSET 10.0 -5.0 0.0", b"OFFSET nan -5.0 0.0"), read_bvh,
     r":8: OFFSET has a value that is not a finite number"),
    ("tiny_frame_time.bvh", VALID_BVH.replace(b"0.033333", b"1e-320"), read_bvh,
     r":32: Frame Time must be a positive number of seconds"),
    ("deep.json", b"[" * 100000, load_overrides, r": not a mapping: nested too deeply"),
    ("latin1.json", b'{"left_hand": "\xe9paule"}', load_overrides, r":1: not a UTF-8 text file"),
    ("landmarks_0d.npz", _body_with(landmark_vertex_ids=np.array(3)), BodyModel.from_file,
     r": array 'landmark_vertex_ids' should be 3 vertex indices"),
    ("landmarks_nan.npz", _body_with(landmark_vertex_ids=np.array([np.nan, 1, 2])), BodyModel.from_file,
     r": array 'landmark_vertex_ids' should be 3 vertex indices, found float64"),
    ("landmarks_outside.npz", _body_with(landmark_vertex_ids=np.array([0, 1, 99999])), BodyModel.from_file,
     r": array 'landmark_vertex_ids' indexes vertices outside"),
    ("gender.npz", _body_with(gender=np.array("robot")), BodyModel.from_file, r": array 'gender' is 'robot'"),
    ("complex.npz", _body_with(weights=BODY["weights"].astype(np.complex64)), BodyModel.from_file,
     r": array 'weights' is not numeric \(complex64\)"),
    ("text.npz", _body_with(f=np.array([["0", "1", "2"]])), BodyModel.from_file, r": array 'f' is not numeric"),
    ("header.npz", _npz_with_broken_header(), read_motion_npz,
     r": not a readable motion file: array 'poses' is damaged$"),
    ("body_header.npz", _npz_with_broken_header("v_template"), BodyModel.from_file,
     r": not a readable body model file: array 'v_template' is damaged$"),
    ("npy.npz", _npy_bytes(MOTION["poses"]), read_motion_npz, r": not a readable motion file \(a single .npy array"),
])
def test_found_bad_inputs_are_refused_by_name(folder, name, data, read, message):
    path = folder / name
    path.write_bytes(data)
    with pytest.raises(SmplIkError, match=re.escape(str(path)) + message):
        read(path)


def test_body_gender_stored_as_bytes_reads_as_text(folder):
    path = folder / "bytes_gender.npz"
    path.write_bytes(_body_with(gender=np.array(b"female")))
    assert BodyModel.from_file(path).gender == "female"   # was "b'female'"


# --- every writer of user files is atomic ----------------------------------------------------------

WRITE_CALLS = re.compile(r"np\.savez(_compressed)?\(|\.write_text\(|\.write_bytes\(|json\.dump\("
                         r"|\bopen\([^)]*['\"][wax]b?['\"]")


def _writes(folder):
    """(file, line, source line) of every direct file write under `folder`."""
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if WRITE_CALLS.search(line.split("#")[0]):
                out.append((path.relative_to(ROOT).as_posix(), n, line.strip()))
    return out


def _inside_atomic_write(path, line):
    """True when the write at `line` sits in a `with atomic_write(...) as fh:` block and writes
    to that handle."""
    tree = ast.parse((ROOT / path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and node.lineno < line <= node.end_lineno:
            for item in node.items:
                call = item.context_expr
                if (isinstance(call, ast.Call)
                        and getattr(call.func, "id", getattr(call.func, "attr", "")) == "atomic_write"):
                    return True
    return False


def test_every_writer_in_models_is_atomic():
    """Each file write in models/ goes through models.core.files.atomic_write (a temp file
    renamed over the target), so a failure never leaves a half-written file."""
    writes = _writes("models")
    assert writes, "the scan finds the writers"
    bare = [w for w in writes if not _inside_atomic_write(w[0], w[1])]
    assert not bare, bare


"""BVH motion files: read any valid file into a skeleton and channel values, write one back,
and write SMPL motion as a BVH of SMPL's own skeleton.

Supports any channel order per joint, End Sites, roots with or without position channels,
CRLF line ends, tabs and joint names with spaces. Position channels, where present, give a
joint's local translation (replacing its OFFSET, as Blender's importer reads them). Rotations
are intrinsic Euler angles in channel order: R = R_first @ R_second @ R_third, degrees.
Malformed files raise SmplIkError naming the file and line.
"""
import io
import re
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.files import FileSearch, FoundFile, atomic_write, find_files
from ..core.kinematics import FKResult
from ..core.rotations import euler_to_matrix, matrix_to_euler
from ..core.skeleton import CHILDREN, JOINT_NAMES, LEAF_DIRECTION, NUM_JOINTS, PARENTS

ROTATION_CHANNELS = ("Xrotation", "Yrotation", "Zrotation")
POSITION_CHANNELS = ("Xposition", "Yposition", "Zposition")
END_SITE_SUFFIX = "_EndSite"


@dataclass(frozen=True)
class Skeleton:
    """A BVH hierarchy. End Sites are joints too (no channels, name '<parent>_EndSite')."""

    names: tuple
    parents: tuple          # parents[j] < j, -1 for the root
    offsets: np.ndarray     # (J, 3) in the file's units
    channels: tuple         # per joint: tuple of channel names, file order
    end_site: tuple         # per joint: True for End Sites

    @cached_property
    def channel_start(self):
        """Index of each joint's first channel in a frame's values."""
        return tuple(np.cumsum([0] + [len(c) for c in self.channels])[:-1].tolist())

    @property
    def num_channels(self):
        return sum(len(c) for c in self.channels)

    def index(self, name):
        return self.names.index(name)


@dataclass(frozen=True)
class Motion:
    """A BVH file's skeleton and animation: `values` (T, channels) as stored (degrees)."""

    skeleton: Skeleton
    values: np.ndarray
    frame_time: float
    path: str = ""

    @property
    def num_frames(self):
        return self.values.shape[0]

    @property
    def fps(self):
        return 1.0 / self.frame_time

    def local_rotations(self, frame_index=slice(None)):
        """(T, J, 3, 3) local joint rotations (identity for joints without rotation channels)."""
        sk = self.skeleton
        values = self.values[frame_index]
        out = np.broadcast_to(np.eye(3), (values.shape[0], len(sk.names), 3, 3)).copy()
        for j, chans in enumerate(sk.channels):
            cols = [sk.channel_start[j] + k for k, c in enumerate(chans) if c in ROTATION_CHANNELS]
            if cols:
                order = "".join(chans[c - sk.channel_start[j]][0] for c in cols)
                out[:, j] = euler_to_matrix(np.radians(values[:, cols]), order)
        return out

    def local_translations(self, frame_index=slice(None)):
        """(T, J, 3) local translations: the OFFSET, or the position channels where present."""
        sk = self.skeleton
        values = self.values[frame_index]
        out = np.broadcast_to(sk.offsets, (values.shape[0],) + sk.offsets.shape).copy()
        for j, chans in enumerate(sk.channels):
            for k, c in enumerate(chans):
                if c in POSITION_CHANNELS:
                    out[:, j, POSITION_CHANNELS.index(c)] = values[:, sk.channel_start[j] + k]
        return out

    def forward(self, frame_index=slice(None)):
        """Forward kinematics: world rotations (T, J, 3, 3) and joint positions (T, J, 3)."""
        return skeleton_fk(self.skeleton.parents, self.local_rotations(frame_index),
                           self.local_translations(frame_index))


def skeleton_fk(parents, local_rot, local_trans):
    """FK where each joint's local translation is given per frame (T, J, 3)."""
    t, n = local_rot.shape[:2]
    rot = np.empty_like(local_rot)
    pos = np.empty((t, n, 3))
    for j, p in enumerate(parents):
        if p < 0:
            rot[:, j], pos[:, j] = local_rot[:, j], local_trans[:, j]
        else:
            rot[:, j] = rot[:, p] @ local_rot[:, j]
            pos[:, j] = pos[:, p] + np.einsum("tab,tb->ta", rot[:, p], local_trans[:, j])
    return FKResult(rotations=rot, positions=pos)


# --- reading -------------------------------------------------------------------------------

def _fail(path, line, message):
    where = f"{path}:{line}" if line else f"{path}"
    raise SmplIkError(f"{where}: {message}")


def _numbers(path, line_no, tokens, count, what):
    if len(tokens) != count:
        _fail(path, line_no, f"{what} needs {count} numbers, found {len(tokens)}")
    try:
        values = [float(t) for t in tokens]
    except ValueError:
        _fail(path, line_no, f"{what} has a value that is not a number: {' '.join(tokens)}")
    if not all(np.isfinite(values)):
        _fail(path, line_no, f"{what} has a value that is not a finite number: {' '.join(tokens)}")
    return values


def _parse_hierarchy(path, lines):
    """Parse HIERARCHY lines; returns (skeleton, index of the MOTION line)."""
    names, parents, offsets, channels, end_site = [], [], [], [], []
    stack, pending = [], None
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines) or lines[i].strip().upper() != "HIERARCHY":
        _fail(path, i + 1, "not a BVH file: expected 'HIERARCHY'")
    for i in range(i + 1, len(lines)):
        line = lines[i].strip()
        if not line:
            continue
        n = i + 1
        head, _, rest = line.partition(" ")
        key = head.upper()
        opens = line.endswith("{") and key != "{"
        if opens:
            rest = rest[:-1].strip()
        if key in ("ROOT", "JOINT"):
            if (key == "ROOT") != (not stack) or pending is not None:
                _fail(path, n, f"unexpected {head} here")
            name = rest.strip()
            if not name:
                _fail(path, n, f"{head} has no name")
            if name in names:
                _fail(path, n, f"joint name {name!r} appears twice")
            pending = (name, stack[-1] if stack else -1, False)
        elif key == "END":
            if not stack or pending is not None:
                _fail(path, n, "unexpected End Site here")
            name, k = f"{names[stack[-1]]}{END_SITE_SUFFIX}", 1
            while name in names:   # a joint already has that name: keep names unique
                name, k = f"{names[stack[-1]]}{END_SITE_SUFFIX}.{k}", k + 1
            pending = (name, stack[-1], True)
        elif key == "{":
            opens = True
        elif key == "}":
            if not stack:
                _fail(path, n, "unbalanced '}'")
            stack.pop()
            continue
        elif key == "OFFSET":
            if not stack:
                _fail(path, n, "OFFSET outside a joint")
            offsets[stack[-1]] = _numbers(path, n, rest.split(), 3, "OFFSET")
            continue
        elif key == "CHANNELS":
            if not stack or end_site[stack[-1]]:
                _fail(path, n, "CHANNELS outside a joint")
            toks = rest.split()
            try:
                count = int(toks[0])
            except (IndexError, ValueError):
                _fail(path, n, "CHANNELS needs a count")
            chans = tuple(toks[1:])
            if len(chans) != count:
                _fail(path, n, f"CHANNELS says {count} channels but lists {len(chans)}")
            bad = [c for c in chans if c not in ROTATION_CHANNELS + POSITION_CHANNELS]
            if bad or len(set(chans)) != len(chans):
                _fail(path, n, f"invalid channel names: {' '.join(chans)}")
            channels[stack[-1]] = chans
            continue
        elif key == "MOTION":
            if stack or pending is not None:
                _fail(path, n, "MOTION before the hierarchy is closed")
            if not names:
                _fail(path, n, "the hierarchy has no joints")
            sk = Skeleton(tuple(names), tuple(parents), np.array(offsets, dtype=np.float64),
                          tuple(channels), tuple(end_site))
            return sk, i
        else:
            _fail(path, n, f"unexpected {head!r} in the hierarchy")
        if opens:
            if pending is None:
                _fail(path, n, "'{' without a joint")
            name, parent, is_end = pending
            names.append(name)
            parents.append(parent)
            offsets.append([0.0, 0.0, 0.0])
            channels.append(())
            end_site.append(is_end)
            stack.append(len(names) - 1)
            pending = None
    _fail(path, len(lines), "file ends inside the hierarchy (no MOTION section)")


def parse_frames(data, count):
    """Whitespace-separated numbers (bytes), `count` per line, to a (T, count) float64 array.

    Read by numpy's C text reader (docs/training_log.md, "BVH parsing"); returns None when a
    line is malformed, for a slower pass to name it.
    """
    if not data.strip():
        return np.zeros((0, count))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = np.loadtxt(io.BytesIO(data), dtype=np.float64, comments=None, ndmin=2)
    except ValueError:
        return None
    return values if values.shape[1] == count else None


def _locate_bad_row(path, data_lines, first_line, count, frame_count):
    """Slow pass over the data lines to name the first bad line precisely."""
    row = 0
    for k, line in enumerate(data_lines):
        toks = line.split()
        if not toks:
            continue
        n = first_line + k
        if row >= frame_count:
            _fail(path, n, f"more frames than the header's 'Frames: {frame_count}'")
        if len(toks) != count:
            _fail(path, n, f"expected {count} channel values, found {len(toks)}")
        for t in toks:
            try:
                float(t)
            except ValueError:
                _fail(path, n, f"{t!r} is not a number")
        row += 1
    last = first_line + len(data_lines) - 1
    _fail(path, last, f"truncated: the header says {frame_count} frames but the file has {row}")


def read_bvh(path):
    """Read a BVH file into a Motion. Raises SmplIkError naming the file and line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SmplIkError(f"{path}: cannot read ({exc.strerror or exc})") from None
    found = re.search(rb"^[ \t]*MOTION[ \t\r]*$", raw, re.MULTILINE)
    motion_at = found.start() if found else -1
    head = raw[:motion_at + 400] if found else raw
    lines = head.decode("latin-1").split("\n")
    skeleton, m = _parse_hierarchy(path, lines)
    # "Frames:" and "Frame Time:" follow MOTION; the data starts after them
    header, k = {}, m + 1
    while len(header) < 2:
        if k >= len(lines):
            _fail(path, k, "missing 'Frames:' / 'Frame Time:' after MOTION")
        text = lines[k].strip()
        k += 1
        if not text:
            continue
        key, _, value = text.partition(":")
        key = key.strip().lower()
        if key not in ("frames", "frame time"):
            _fail(path, k, f"expected 'Frames:' and 'Frame Time:', found {text!r}")
        try:
            header[key] = float(value)
        except ValueError:
            _fail(path, k, f"{key!r} is not a number: {value.strip()!r}")
    frame_count, frame_time = header["frames"], header["frame time"]
    if not np.isfinite(frame_count) or frame_count != int(frame_count) or frame_count < 0:
        _fail(path, k - 1, f"Frames must be a whole number, found {frame_count:g}")
    if not (frame_time > 0 and np.isfinite(frame_time) and np.isfinite(1.0 / frame_time)):
        _fail(path, k, f"Frame Time must be a positive number of seconds, found {frame_time:g}")
    frame_count = int(frame_count)
    # byte offset of the first data line
    offset = motion_at
    for _ in range(k - m):
        offset = raw.index(b"\n", offset) + 1 if b"\n" in raw[offset:] else len(raw)
    data = raw[offset:]
    count = skeleton.num_channels
    values = parse_frames(data, count)
    if values is None or values.shape[0] != frame_count:
        _locate_bad_row(path, data.decode("latin-1").split("\n"), k + 1, count, frame_count)
    bad = ~np.isfinite(values)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        j = int(np.searchsorted(skeleton.channel_start, c, side="right") - 1)
        chan = skeleton.channels[j][c - skeleton.channel_start[j]]
        line = k + 1 + _nonempty_line_index(data, r)
        _fail(path, line, f"{skeleton.names[j]} {chan} is {values[r, c]} in frame {r}")
    return Motion(skeleton=skeleton, values=values, frame_time=frame_time, path=str(path))


def _nonempty_line_index(data, row):
    """Line index (0-based, within `data`) of the row-th non-empty line."""
    seen = -1
    for k, line in enumerate(data.decode("latin-1").split("\n")):
        if line.strip():
            seen += 1
            if seen == row:
                return k
    return 0


# --- writing -------------------------------------------------------------------------------

def write_bvh(path, skeleton, local_rot, root_pos, frame_time, rotation_order="ZXY"):
    """Write a BVH file atomically (temp file, then rename).

    skeleton: Skeleton whose channels are rewritten as root `Xposition Yposition Zposition`
    plus three rotations in `rotation_order` on every non-End-Site joint;
    local_rot: (T, J, 3, 3); root_pos: (T, 3) in the skeleton's units.
    """
    path = Path(path)
    rot_names = tuple(f"{a}rotation" for a in rotation_order)
    out = ["HIERARCHY"]
    children = {j: [k for k, p in enumerate(skeleton.parents) if p == j] for j in range(len(skeleton.names))}

    def emit(j, depth):
        pad = "  " * depth
        if skeleton.end_site[j]:
            out.append(f"{pad}End Site")
        else:
            out.append(f"{pad}{'ROOT' if skeleton.parents[j] < 0 else 'JOINT'} {skeleton.names[j]}")
        out.append(f"{pad}{{")
        out.append(f"{pad}  OFFSET " + " ".join(f"{v:.6f}" for v in skeleton.offsets[j]))
        if not skeleton.end_site[j]:
            chans = (POSITION_CHANNELS + rot_names) if skeleton.parents[j] < 0 else rot_names
            out.append(f"{pad}  CHANNELS {len(chans)} {' '.join(chans)}")
        for c in children[j]:
            emit(c, depth + 1)
        out.append(f"{pad}}}")

    emit(0, 0)
    joints = [j for j in range(len(skeleton.names)) if not skeleton.end_site[j]]
    angles = np.degrees(matrix_to_euler(np.asarray(local_rot)[:, joints], rotation_order))
    values = np.concatenate([np.asarray(root_pos), angles.reshape(len(angles), -1)], axis=1)
    out += ["MOTION", f"Frames: {len(values)}", f"Frame Time: {frame_time:.8f}"]
    body = "\n".join(out) + "\n"
    rows = "\n".join(" ".join(f"{v:.6f}" for v in row) for row in values)
    with atomic_write(path, "w") as fh:
        fh.write(body + rows + "\n")


# --- SMPL motion as BVH ---------------------------------------------------------------------

SMPL_BVH_UNIT = 100.0  # centimetres, as most BVH tools expect
_END_SITE_LENGTH_M = 0.1   # metres: the length of the End Sites on SMPL's leaves


def smpl_bvh_skeleton(rest_joints):
    """(Skeleton, where): a BVH Skeleton of SMPL's 24 joints at `rest_joints` (24, 3) metres,
    in centimetres (SMPL_BVH_UNIT) with End Sites on the leaves, listed depth-first; where[j]
    is SMPL joint j's index in it."""
    names, parents, offsets, end_site = [], [], [], []
    index = {}
    for j in range(NUM_JOINTS):  # parents precede children in SMPL's order
        p = PARENTS[j]
        index[j] = len(names)
        names.append(JOINT_NAMES[j])
        parents.append(index[p] if p >= 0 else -1)
        offsets.append(rest_joints[j] - (rest_joints[p] if p >= 0 else 0.0))
        end_site.append(False)
    for j in range(NUM_JOINTS):
        if not CHILDREN[j]:
            names.append(JOINT_NAMES[j] + END_SITE_SUFFIX)
            parents.append(index[j])
            offsets.append(_END_SITE_LENGTH_M * np.array(LEAF_DIRECTION[JOINT_NAMES[j]], float))
            end_site.append(True)
    # BVH wants each joint's children right after it: reorder depth-first
    order, stack = [], [0]
    while stack:
        k = stack.pop()
        order.append(k)
        stack.extend(reversed([c for c, p in enumerate(parents) if p == k]))
    remap = {old: new for new, old in enumerate(order)}
    chans = ("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation")
    return Skeleton(
        names=tuple(names[k] for k in order),
        parents=tuple(remap[parents[k]] if parents[k] >= 0 else -1 for k in order),
        offsets=SMPL_BVH_UNIT * np.array([offsets[k] for k in order]),
        channels=tuple(() if end_site[k] else (chans if parents[k] < 0 else chans[3:]) for k in order),
        end_site=tuple(end_site[k] for k in order),
    ), [order.index(j) for j in range(NUM_JOINTS)]


def write_smpl_bvh(path, local_rot, trans, rest_joints, fps):
    """Write SMPL motion as a BVH of SMPL's skeleton (centimetres, Y up).

    local_rot: (T, 24, 3, 3); trans: (T, 3) metres; rest_joints: (24, 3) for the body's betas.
    The root's position channels carry the posed pelvis position (rest + trans).
    """
    skeleton, where = smpl_bvh_skeleton(rest_joints)
    rot = np.broadcast_to(np.eye(3), (len(local_rot), len(skeleton.names), 3, 3)).copy()
    rot[:, where] = local_rot
    root = SMPL_BVH_UNIT * (rest_joints[0] + trans)
    write_bvh(path, skeleton, rot, root, 1.0 / fps)


# --- finding BVH files ----------------------------------------------------------------------

FoundBvh = FoundFile      # a BVH file an input named (models.core.files.find_files)
BvhSearch = FileSearch    # find_bvh_files' answer


def find_bvh_files(inputs):
    """The BVH files that command-line `inputs` name (models.core.files.find_files with the
    suffix .bvh): each input a file (taken whatever its suffix), a folder (searched
    recursively for files ending .bvh in any case) or a glob ('mocap/**/*.bvh'). Every script
    that takes BVH inputs finds them here. Returns a FileSearch."""
    return find_files(inputs, (".bvh",))

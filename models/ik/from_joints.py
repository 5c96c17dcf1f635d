"""Joint files to SMPL motion: a sequence of 3D joint positions in any layout of
models.motion.joints becomes SMPL rotations, a root translation and the body's shape.

Steps: the file's joints are brought into SMPL's frame (its up axis and unit) and read as
SMPL joints (Layout.smpl_positions); the height the figure's limbs make is checked; the betas
are fitted to its bone lengths (models.motion.joints.fit_layout_shape); then each frame is
solved: by IK-GAT in one pass for a layout that has all 24 joints (the bone directions come
out exact, so the positions come back), else by SMPL-IK with a soft position effector on
every SMPL joint the layout gives (and a look-at where it has one), refined, each frame
starting from the one before. A frame that misses joints (NaN in the file) is solved by
SMPL-IK from those it has, whatever the layout. Optional Gaussian smoothing over time
(frames) follows.
"""
from dataclasses import dataclass

import numpy as np

from ..body.measure import measure
from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.rotations import matrix_to_axis_angle, matrix_to_quat_wxyz, quat_wxyz_to_matrix
from ..core.skeleton import CHILDREN, JOINT_INDEX, JOINT_NAMES, NUM_JOINTS, PARENTS
from ..motion.amass import MotionFile
from ..motion.joints import (APPROXIMATE_WEIGHT, LayoutChoice, check_height, detect_layout, figure_height,
                             fit_layout_shape, get_layout, read_joint_file, to_smpl_frame)
from ..motion.resample import quat_slerp
from ..motion.units import parse_unit
from ..motion.temporal import smooth_poses
from .effectors import Effector, EffectorKind
from .ikgat import LENGTH_TOLERANCE, load_ikgat
from .options import SolveOptions
from .refine import RefineOptions
from .smplik import load_smplik

DEFAULT_FPS = 30.0
# The file's motion is the truth: no balance or feet kept planted over it; knees and elbows
# stay in their ranges, hands out of the trunk.
REFINE = RefineOptions(plant_feet=False, balance=False, iterations=20)
IKGAT_CHUNK = 2048      # frames IK-GAT solves at once (its activations grow with the batch)
SOFT_TOLERANCE = 0.02   # metres: a layout's joint sits only near SMPL's, so a soft pin this far off is met
LOOK_AT_TOLERANCE = 0.1   # radians: a head top is no exact axis either
# seconds: a joint missing this long at most is pinned lightly on a curve through the frames either side
GAP_FILL_SECONDS = 0.4   # (docs/training_log.md, "Gap filling in joint files")
FEW_LENGTHS = 6   # a shape fitted to fewer lengths (a figure missing a side) is reported


def fill_gaps(joints, longest):
    """joints (T, J, 3) with NaN where a joint is missing -> (filled copy, (T, J) mask of the
    filled values). A gap of at most `longest` frames with the joint seen on both sides is
    filled by a cubic Hermite curve through the frames either side, its tangents the joint's
    velocity on the frame beyond each (a frame's step where that frame is missing too); longer
    gaps and those at either end stay NaN."""
    joints = np.array(joints, np.float64)
    seen = np.isfinite(joints).all(-1)
    filled = np.zeros_like(seen)
    frames = len(joints)
    for j in range(joints.shape[1]):
        shown = np.flatnonzero(seen[:, j])
        for a, b in zip(shown[:-1], shown[1:]):
            span = b - a
            if span < 2 or span - 1 > longest:
                continue
            pa, pb = joints[a, j], joints[b, j]
            va = pa - joints[a - 1, j] if a > 0 and seen[a - 1, j] else (pb - pa) / span
            vb = joints[b + 1, j] - pb if b + 1 < frames and seen[b + 1, j] else (pb - pa) / span
            s = (np.arange(a + 1, b) - a)[:, None] / span
            h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
            joints[a + 1:b, j] = h00 * pa + h10 * span * va + h01 * pb + h11 * span * vb
            filled[a + 1:b, j] = True
    return joints, filled


def held_by_neighbours(given):
    """(T, 24) bool: the joints whose parent and every child are given in that frame (a
    leaf: whose parent is), from `given` (T, 24). Bone lengths fix such a joint all but its
    swivel, and SMPL-IK places it better than a curve through other frames would."""
    out = np.zeros_like(given)
    for j in range(1, NUM_JOINTS):
        out[:, j] = given[:, PARENTS[j]] & given[:, list(CHILDREN[j])].all(-1)
    return out


def _frames(count):
    return f"{count} frame" + ("" if count == 1 else "s")


def _verb(count, verb):
    """The verb agreeing with `count` things: 'miss' -> 'misses' for one."""
    return verb if count != 1 else verb + ("es" if verb.endswith("s") else "s")


def bone_length_spread(joints):
    """The largest standard deviation over frames of a bone's length (m), for SMPL joint
    positions (T, 24, 3)."""
    lengths = np.linalg.norm(joints[:, 1:] - joints[:, list(PARENTS[1:])], axis=-1)
    return float(lengths.std(0).max())


@dataclass(frozen=True)
class JointOptions:
    """How a joint file becomes motion. layout: a key of models.motion.joints.LAYOUTS or
    'auto' (from the joint count); units: the file's length unit (m, cm, mm, inch, or metres
    per unit as a number; units.parse_unit); up_axis: 'Y', 'Z' or '-Y' (image-style, y
    down), None for the layout's own (Y; MediaPipe's -Y); fps: frames per second when the file
    does not say (None: DEFAULT_FPS); smooth: Gaussian sigma in frames over the solved
    rotations and translation (0: none); denoise: whether IK-GAT corrects the bone directions
    of noisy positions (SMPL-24 files): 'auto' when the file's bone lengths change from frame
    to frame by more than ikgat.LENGTH_TOLERANCE (a rig's bones keep their lengths, a
    detector's do not; a one-frame file: when its bones are off the fitted body's), True, False;
    fill_gaps: the longest gap (seconds) of a joint missing from frames (NaN) that is pinned on
    a curve through the frames either side (fill_gaps), 0 to leave every gap to SMPL-IK."""

    layout: str = "auto"
    units: str = "m"
    up_axis: str = None
    fps: float = None
    smooth: float = 0.0
    denoise: object = "auto"
    fill_gaps: float = GAP_FILL_SECONDS


@dataclass(frozen=True)
class JointMotion:
    """Motion solved from a joint file: poses (T, 24, 3) axis-angle local rotations, root
    first; trans (T, 3) metres (the pelvis at rest_joints(betas)[0] + trans), SMPL's frame;
    betas (10,) fitted to the figure's bone lengths; fps; layout (a LayoutChoice); method
    'ikgat', 'smplik' or 'ikgat+smplik' (IK-GAT for the frames with every joint, SMPL-IK for
    those with gaps); height_m the fitted body's height; error_mm the mean distance between
    the SMPL joints the file gives and the solved body's (after smoothing); path
    the source file; notes in words."""

    poses: np.ndarray
    trans: np.ndarray
    betas: np.ndarray
    fps: float
    layout: LayoutChoice
    method: str
    height_m: float
    error_mm: float
    path: str = ""
    notes: tuple = ()

    def motion_file(self, body, body_model):
        """The MotionFile to write (models.motion.amass.write_motion_npz) or key: SMPL's
        frame (up_axis 'Y'), `body`'s gender, betas for `body_model` (the body's name)."""
        return MotionFile(poses=self.poses, trans=self.trans, betas=self.betas, gender=body.gender, fps=self.fps,
                          path=self.path, body_model=body_model, up_axis="Y")

    def describe(self):
        solver = {"ikgat": "IK-GAT", "smplik": "SMPL-IK", "ikgat+smplik": "IK-GAT and SMPL-IK"}[self.method]
        return (f"{self.layout.layout.label} ({self.layout.reason}) by {solver}: "
                f"body {self.height_m:.2f} m tall, joints within {self.error_mm:.1f} mm on average"
                + "".join(f"; {n}" for n in self.notes))


def layout_effectors(layout, smpl_joints, file_joints, guessed=()):
    """The SMPL-IK effectors of one frame: smpl_joints (24, 3) from Layout.smpl_positions,
    file_joints (J, 3) the layout's own (both SMPL frame, metres); none for a joint that is
    NaN (missing), and the weight of one the layout only approximates for a joint in
    `guessed` (indices: filled in a gap). Soft: a layout's joint and SMPL's differ by a few
    centimetres, so no pin is held against the others."""
    out = []
    for name in layout.smpl:
        target = smpl_joints[JOINT_INDEX[name]]
        if not np.isfinite(target).all():   # missing from this frame (NaN in the file)
            continue
        weight = 1.0 if layout.direct(name) and JOINT_INDEX[name] not in guessed else APPROXIMATE_WEIGHT
        out.append(Effector(name, EffectorKind.POSITION, tuple(target), weight=weight, soft=True,
                            tolerance=SOFT_TOLERANCE))
    for name, (axis, target) in (layout.look_at or {}).items():
        point = file_joints[layout.joint(target)]
        if np.isfinite(point).all():
            out.append(Effector(name, EffectorKind.LOOK_AT, tuple(point), axis=axis, weight=APPROXIMATE_WEIGHT,
                                soft=True, tolerance=LOOK_AT_TOLERANCE))
    return out


@dataclass(frozen=True)
class _GapFrames:
    """The frames SMPL-IK solves (`_solve_smplik`): frames (indices, in time order); the file's
    layout, its joints mapped to SMPL's smpl_joints (T, 24, 3) (NaN where missing) and as given
    file_joints (T, J, 3), in SMPL's frame; guessed (T, 24) bools, the positions filled in a gap
    (pinned lightly), or None."""

    layout: object
    smpl_joints: np.ndarray
    file_joints: np.ndarray
    frames: np.ndarray
    guessed: np.ndarray = None


def _solve_smplik(gaps, rest, local, trans, progress):
    """Solve gaps.frames (a _GapFrames) by SMPL-IK on rest joints (24, 3) into local
    (T, 24, 3, 3) and trans (T, 3), whose other frames are solved already. Each starts from the frame before where that
    one is solved, turned 1/(n + 1) of the way to the next solved frame n frames on, if any
    (IK-GAT's whole frames), so a limb no pin holds turns through a gap instead of freezing. A
    frame with no joint to place the body (no position effector) is blended between the placed
    frames either side (_blend_lost); at the start or the end it keeps the nearest placed
    frame's pose. Returns those frames."""
    layout, smpl_joints, file_joints, frames, guessed = (gaps.layout, gaps.smpl_joints, gaps.file_joints, gaps.frames,
                                                         gaps.guessed)
    solver = load_smplik()
    solved = np.ones(len(smpl_joints), bool)
    solved[frames] = False
    held = []
    for k, t in enumerate(frames):
        effectors = layout_effectors(layout, smpl_joints[t], file_joints[t],
                                     () if guessed is None else np.flatnonzero(guessed[t]))
        previous = (local[t - 1], trans[t - 1]) if t > 0 and solved[t - 1] else None
        if not any(e.kind == EffectorKind.POSITION for e in effectors):
            held.append(t)
            if previous is not None:
                local[t], trans[t], solved[t] = previous[0], previous[1], True
        else:
            ahead = np.flatnonzero(solved[t + 1:])
            if previous is not None and len(ahead):   # start on the way to the next solved frame
                previous = (_slerp_rotations(previous[0], local[t + 1 + ahead[0]], 1.0 / (ahead[0] + 2)), previous[1])
            options = SolveOptions(refine=REFINE, current_pose=previous, warm_start=previous is not None)
            solution = solver.solve(effectors, rest, options)
            local[t], trans[t], solved[t] = solution.local_rot, solution.trans, True
        progress((k + 1) / len(frames))
    first = int(np.argmax(solved))
    local[:first], trans[:first] = local[first], trans[first]
    _blend_lost(local, trans, held)
    return held


def _slerp_rotations(a, b, weight):
    """Rotation matrices (..., 3, 3) from a to b by `weight` (broadcasting against a's leading
    axes), along the shorter arc (resample.quat_slerp)."""
    return quat_wxyz_to_matrix(quat_slerp(matrix_to_quat_wxyz(a), matrix_to_quat_wxyz(b), weight))


def _blend_lost(local, trans, held):
    """Each run of held frames (sorted indices) with a placed frame on both sides: its
    rotations slerped and root lerped from the frame before to the frame after, in place, so
    the body moves through the loss instead of standing and then jumping."""
    runs = np.split(np.asarray(held, int), np.flatnonzero(np.diff(held) != 1) + 1) if len(held) else []
    for run in runs:
        before, after = run[0] - 1, run[-1] + 1
        if before < 0 or after >= len(local):
            continue
        weight = (run - before) / (after - before)
        local[run] = _slerp_rotations(local[before], local[after], weight[:, None])
        trans[run] = trans[before] + weight[:, None] * (trans[after] - trans[before])


def joints_to_smpl(joint_file, body, options=JointOptions(), progress=lambda fraction: None):
    """Solve a JointFile (models.motion.joints.read_joint_file) on `body` (a BodyModel) as
    `options` (JointOptions) say; returns a JointMotion. SmplIkError naming the file for a
    joint count no layout has, a figure of implausible height, or too few limbs to fit a
    shape. progress(fraction) is called as frames are solved."""
    path = joint_file.path
    if options.layout == "auto":
        choice = detect_layout(joint_file.joints, path)
    else:
        layout = get_layout(options.layout)
        if joint_file.joints.shape[1] != layout.count:
            raise SmplIkError(f"{path}: {joint_file.joints.shape[1]} joints per frame, but {layout.label} has "
                              f"{layout.count}")
        choice = LayoutChoice(layout, "as asked")
    layout = choice.layout
    unit_name, metres = parse_unit(options.units)
    joints = to_smpl_frame(joint_file.joints, options.up_axis or layout.up_axis, metres)
    smpl_joints = layout.smpl_positions(joints)
    check_height(figure_height(smpl_joints, body), path, unit_name)
    notes = []
    fps = joint_file.fps
    if fps is None:
        fps = float(options.fps or DEFAULT_FPS)
        notes.append(f"the file has no frame rate: {fps:g} fps")
    try:
        shape = fit_layout_shape(body, smpl_joints, layout)
    except SmplIkError as exc:
        raise SmplIkError(f"{path}: {exc}") from None
    if len(shape.names) < FEW_LENGTHS:
        notes.append(f"the shape rests on only {len(shape.names)} lengths the file shows ({', '.join(shape.names)})")
    rest = body.rest_joints(shape.betas)
    frames = len(smpl_joints)
    mapped = [JOINT_INDEX[n] for n in JOINT_NAMES if n in layout.smpl]
    missing = ~np.isfinite(smpl_joints[:, mapped]).all(-1)         # (T, M): gaps in the file
    gappy = missing.any(1)
    local, trans = np.empty((frames, NUM_JOINTS, 3, 3)), np.empty((frames, 3))
    whole = np.flatnonzero(~gappy) if layout.complete else np.zeros(0, int)
    if len(whole):
        denoise = options.denoise
        if denoise == "auto" and len(whole) > 1:
            spread = bone_length_spread(smpl_joints[whole])
            denoise = bool(spread > LENGTH_TOLERANCE)
            if denoise:
                notes.append(f"bone lengths change by up to {spread * 1000:.1f} mm between frames: "
                             "IK-GAT corrects the bone directions as for noisy positions")
        ikgat = load_ikgat(denoise=denoise)
        for start in range(0, len(whole), IKGAT_CHUNK):
            chunk = whole[start:start + IKGAT_CHUNK]
            local[chunk] = ikgat(smpl_joints[chunk], rest)
            progress(len(whole) / frames * min(start + IKGAT_CHUNK, len(whole)) / len(whole))
        trans[whole] = smpl_joints[whole, 0] - rest[0]
    rest_frames = np.setdiff1d(np.arange(frames), whole)
    held = []
    if len(rest_frames):
        done = len(whole) / frames
        pins, guessed = fill_gaps(smpl_joints, int(round(options.fill_gaps * fps)))
        guessed &= ~held_by_neighbours(np.isfinite(smpl_joints).all(-1))
        pins = np.where(guessed[..., None] | np.isfinite(smpl_joints), pins, np.nan)
        held = _solve_smplik(_GapFrames(layout, pins, joints, rest_frames, guessed), rest, local, trans,
                             lambda f: progress(done + (1 - done) * f))
    method = "smplik" if not len(whole) else "ikgat+smplik" if len(rest_frames) else "ikgat"
    if gappy.any():
        counts = missing.sum(0)
        worst = int(np.argmax(counts))
        lacking, curve = int(gappy.sum()), int(guessed[:, mapped].sum())
        notes.append(f"{lacking} of {_frames(frames)} {_verb(lacking, 'miss')} joints (most often "
                     f"{JOINT_NAMES[mapped[worst]]}, in {_frames(int(counts[worst]))}): SMPL-IK solves each from "
                     "the joints it has" + (f", {curve} missing joint position{'' if curve == 1 else 's'} pinned "
                                            "lightly on a curve through the frames either side of a gap of up to "
                                            f"{options.fill_gaps:g} s" if curve else ""))
    if held:
        notes.append(f"{_frames(len(held))} {_verb(len(held), 'give')} no joint to place the body (the first: "
                     f"frame {held[0]}): blended between the frames either side, or the nearest one's pose at an end")
    if options.smooth > 0:
        local, trans = smooth_poses(local, trans, options.smooth)
        notes.append(f"smoothed (Gaussian, sigma {options.smooth:g} frames)")
    posed = forward_kinematics(local, rest, PARENTS, trans).positions
    given = [JOINT_INDEX[n] for n in JOINT_NAMES if layout.direct(n)]
    error = 1e3 * float(np.nanmean(np.linalg.norm(posed[:, given] - smpl_joints[:, given], axis=-1)))
    return JointMotion(poses=matrix_to_axis_angle(local), trans=trans, betas=np.asarray(shape.betas, np.float64),
                       fps=fps, layout=choice, method=method, height_m=measure(body, shape.betas).height,
                       error_mm=error, path=path, notes=tuple(notes))


def convert_joint_file(path, body, options=JointOptions(), progress=lambda fraction: None):
    """read_joint_file then joints_to_smpl: the JointMotion of the file at `path`."""
    return joints_to_smpl(read_joint_file(path), body, options, progress)

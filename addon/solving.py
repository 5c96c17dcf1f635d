"""Solving bodies from their effectors: on demand, live while an effector moves, and over a
frame range (bake); plus the pose edits that keep effectors pinned (mirror, reset).

Live solving is a depsgraph handler. It solves a body only when one of its enabled
effectors' transforms changed since that body was last solved or pinned (a signature of the
effectors is remembered per body), so writing the pose never feeds back into another solve.
The effectors that moved are the ones being dragged: they are solved as soft (as close as
the pins allow), every other one as it is set. When the pins cannot all be held, the pin
that gives way (solved as soft, so the others hold) is one moved since the body's last solve,
or one a solve left out of reach; failing those, the core's choice (the furthest from its
target).

Every solve says what it did not meet: the body's status names the effector and the
distance left (empty once all are met), and a refused input (a bad tolerance or floor
height) leaves the pose as it was with the reason in the status.

With the generative weights (the pose flow) a body can also take its natural pose, step
through alternative poses for the same effectors, keep the character of its pose while an
effector is dragged (the pose's latent is decoded under the moved effectors), and bake a
frame range as one path with one latent.
"""
import math
from dataclasses import dataclass

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..models.core.errors import SmplIkError
from ..models.core.skeleton import JOINT_NAMES, MIRROR
from ..models.ik.flow import DEFAULT_FLOW_WEIGHTS
from ..models.ik.path import PathFollower
from ..models.ik.refine import RefineOptions
from ..models.ik.smplik import load_smplik, miss_total
from ..models.motion.temporal import smooth_poses
from . import bridge, live
from .body_object import body_model_of, is_body
from .effectors import core_effectors, effectors_of, is_effector, pin, rest_joints

# The solver before pins and soft effectors, for scripts/benchmark_drag.py to time beside
# today's: every effector hard (a dragged one too), no joint limits, no planted feet, no floor.
PREVIOUS_SOLVER = False
FLOOR_LIMIT = 10000.0    # metres; Blender stores an infinite float as its largest, so bound it
SHOWN_MISSES = 3
# Blender stores quaternions as float32: a pose read back from the bones differs from the
# solution written by about 1e-7, so closer than this is the same pose (Keep Pose's check).
SAME_POSE = 1e-5
ALTERNATIVES_SEED = 0          # one repeatable set of alternatives per problem
ALTERNATIVES_RANGE = (2, 32)   # how many alternatives a set may hold
VARIATION_RANGE = (0.0, 2.0)   # the sampling temperature (0: every alternative is the natural pose)
PATH_SMOOTHNESS_MAX = 0.95     # Follow Path's mu; at 1 the path would never leave its first frame
KEEP_MARGIN = 0.01             # metres (radians) less miss that make a kept drag take the plain warm start


def refine_options(arm):
    """models.ik.refine.RefineOptions from the body's settings (Plant Feet, Floor). The floor
    (world Z) goes into the body's frame; SmplIkError for a height that is not a finite
    number of metres, or a body not standing upright."""
    if PREVIOUS_SOLVER:
        return RefineOptions(joint_limits=False, plant_feet=False, give_way=False)
    props = arm.smpl_ik
    floor = contacts = None
    if props.use_floor:
        height = props.floor_height
        if not (math.isfinite(height) and abs(height) <= FLOOR_LIMIT):
            raise SmplIkError(f"{arm.name}: the floor height must be a number of metres between "
                              f"-{FLOOR_LIMIT:g} and {FLOOR_LIMIT:g}, got {height:g}; the pose was left as it was")
        floor, tilt = bridge.floor_in_body(bridge.matrix_array(arm.matrix_world), height)
        if tilt > bridge.FLOOR_TILT:
            raise SmplIkError(f"{arm.name}: a floor needs the body upright, and it is tilted "
                              f"{math.degrees(tilt):.1f} degrees; straighten it or turn Floor off")
        contacts = foot_contacts(arm)
    return RefineOptions(plant_feet=props.plant_feet, floor=floor, contacts=contacts)


_contacts = {}


def foot_contacts(arm):
    """The body's heel, ball and toe points (models.core.kinematics.AttachedPoints), for its
    file and shape (remembered: a drag asks on every step)."""
    key = (arm.smpl_ik.body_path, arm.smpl_ik.gender, tuple(round(b, 6) for b in arm.smpl_ik.applied_betas))
    if key not in _contacts:
        _contacts.clear()
        _contacts[key] = body_model_of(arm).foot_contacts(np.array(arm.smpl_ik.applied_betas[:]))
    return _contacts[key]


def reach_message(misses):
    """What the status and the reports say of a solve's misses (refine.Miss, largest first):
    '' when none."""
    if not misses:
        return ""
    text = "; ".join(m.describe() for m in misses[:SHOWN_MISSES])
    more = len(misses) - SHOWN_MISSES
    return f"Out of reach: {text}" + (f" (and {more} more)" if more > 0 else "")


def _set_status(arm, text):
    if arm.smpl_ik.status != text:   # a write tags the body for another depsgraph update
        arm.smpl_ik.status = text


def require_flow(arm, what):
    """SmplIkError unless the generative weights (the pose flow) are loaded; `what` names the
    action that needs them."""
    if load_smplik().flow is None:
        raise SmplIkError(f"{arm.name}: {what} needs the generative pose weights "
                          f"({DEFAULT_FLOW_WEIGHTS.name} in models/ik/weights), which this installation "
                          "lacks; Solve still works without them")


def kept_pose(arm, on_screen, rest):
    """What Keep Pose While Dragging holds on to: the body's last solution (it carries the
    pose's latent) while its pose is still the one on screen, else the pose on screen
    (local_rot, trans)."""
    last = live.last.get(arm.session_uid)
    if last is not None and np.allclose(last.rest, rest, atol=SAME_POSE, rtol=0) and \
            np.allclose(last.local_rot, on_screen[0], atol=SAME_POSE, rtol=0) and \
            np.allclose(last.trans, on_screen[1], atol=SAME_POSE, rtol=0):
        return last
    return on_screen


def solve_effectors(arm, objs, dragged=(), give_way=(), current_pose=None, refine=None, mode=None):
    """Solve the body from effector objects without writing anything; returns the IkSolution.
    dragged: names of the effectors moving now (solved soft, starting from the pose on screen:
    with Keep Pose While Dragging and the generative weights, from its latent decoded under the
    moved effectors, else refined from the pose itself). give_way: names of the pins that give
    way first when the pins cannot all be held (`giving_way`). current_pose: (local_rot, trans) of
    the pose on screen, whose feet Plant Feet keeps (default: read from the bones). refine:
    Exact Effectors (default: the body's setting). mode: "deterministic" (default) or
    "natural" (models.ik.smplik.SmplIk.solve). SmplIkError for bad values."""
    refine = arm.smpl_ik.refine if refine is None else refine
    effectors = core_effectors(arm, objs, dragged, give_way, all_hard=PREVIOUS_SOLVER)
    options = refine_options(arm)
    rest = rest_joints(arm)
    net = load_smplik()
    drag = bool(dragged) and not PREVIOUS_SOLVER
    keeping = drag and arm.smpl_ik.keep_pose and net.flow is not None
    if current_pose is None and ((options.plant_feet and refine) or keeping):
        current_pose = bridge.read_pose(arm, bridge.bone_axes(arm))
    if not keeping:
        return net.solve(effectors, rest, refine=refine, options=options, current_pose=current_pose,
                         warm_start=drag, mode=mode)
    kept = kept_pose(arm, current_pose, rest)
    solution = net.solve(effectors, rest, refine=refine, options=options, current_pose=current_pose,
                         mode="natural", keep=kept)
    if refine and solution.misses and not getattr(kept, "misses", ()):
        # the kept pose, decoded under the moved effectors, can stall short of a target that
        # small steps from the pose on screen reach (a floor in the way): take those when they
        # clearly miss less. Tried only when the drag starts to miss (a drag that stays out of
        # reach would pay for two solves a step, and the two go as far as each other there)
        warm = net.solve(effectors, rest, refine=refine, options=options, current_pose=current_pose,
                         warm_start=True, mode=mode)
        if miss_total(warm) < miss_total(solution) - KEEP_MARGIN:
            return warm
    return solution


def giving_way(arm, signature):
    """Names of the body's effectors that give way first when its pins cannot all be held:
    those moved since it was last solved or pinned (the effectors now in `signature`) and
    those its last solve left out of reach."""
    key = arm.session_uid
    return set(live.moved(live.solved.get(key), signature)) | live.unmet.get(key, set())


def _remember_misses(arm, objs, solution):
    """Remember which effector objects the pose on screen leaves out of reach, soft or given
    way (they give way first in the next solve, and stay soft in the next drag)."""
    missed = {(m.joint, m.kind.name) for m in solution.misses if m.soft or m.gave_way}
    live.unmet[arm.session_uid] = {o.name for o in objs
                                   if (o.smpl_ik_effector.joint, o.smpl_ik_effector.kind) in missed}


def _write_solution(arm, objs, solution, signature):
    bridge.write_pose(arm, solution.local_rot, solution.trans, bridge.bone_axes(arm))
    live.solved[arm.session_uid] = signature
    live.last[arm.session_uid] = solution
    _remember_misses(arm, objs, solution)
    _set_status(arm, reach_message(solution.misses))
    restart_alternatives(arm)


def restart_alternatives(arm):
    """A new pose: the alternatives' counter starts again (the next step samples a new set)."""
    if arm.smpl_ik.alternative_index:   # a write tags the body for another depsgraph update
        arm.smpl_ik.alternative_index = 0


def solve_body(arm, objs=None, signature=None, dragged=(), mode=None):
    """Solve a body from its enabled effectors and write its pose; returns the IkSolution.
    `objs` and their `signature`, when the caller already has them, save gathering them again;
    dragged: names of the effectors being moved (solved soft); mode: as `solve_effectors`
    ("natural" needs the generative weights). When the pins cannot all be held, the ones
    `giving_way` names give way first. The status names what the pose misses (empty when all
    are met). Raises SmplIkError (no effectors, bad values, no generative weights for the
    natural pose) with the pose unchanged and the reason in the status."""
    objs = effectors_of(arm) if objs is None else objs
    signature = live.signature(objs) if signature is None else signature
    try:
        if not objs:
            raise SmplIkError(f"{arm.name}: no enabled effectors to solve from; add some with Add Effector")
        if mode == "natural":
            require_flow(arm, "the natural pose")
        solution = solve_effectors(arm, objs, dragged, giving_way(arm, signature), mode=mode)
    except SmplIkError as exc:
        _set_status(arm, str(exc))
        raise
    _write_solution(arm, objs, solution, signature)
    return solution


# --- alternatives -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Alternatives:
    """A set of alternative poses for one problem: index 0 is the pose on screen before the
    first alternative, 1..count the flow's samples. `channels[i]` are the bones' (quaternions
    (24, 4), root location (3,)) for index i as Blender holds them, `solutions[i]` its
    IkSolution (index 0: the body's last solution if that was the pose, else None), `status`
    the body's status before. The set holds while the effectors (`signature`), the count, the
    variation and the body's rest joints are as they were and the pose on screen is the one
    at the body's alternative index."""

    signature: tuple
    count: int
    variation: float
    rest: np.ndarray
    channels: tuple
    solutions: tuple
    status: str

    def holds(self, signature, count, variation, rest, index, channels):
        return (count == self.count and variation == self.variation and 0 <= index <= count
                and live.unchanged(self.signature, signature)
                and np.array_equal(rest, self.rest)
                and all(np.allclose(a, b, atol=SAME_CHANNEL, rtol=0) for a, b in zip(channels, self.channels[index])))


SAME_CHANNEL = 1e-6   # a pose bone's quaternion or location this close is the pose an alternative wrote


def alternatives_settings(arm):
    """(count, variation) of a body's alternatives, or SmplIkError for a count outside
    ALTERNATIVES_RANGE or a variation that is not a number in VARIATION_RANGE (no clamping: a
    script's bad value is refused with the reason)."""
    props = arm.smpl_ik
    count, variation = props.alternatives_count, props.variation
    low, high = ALTERNATIVES_RANGE
    if not low <= count <= high:
        raise SmplIkError(f"{arm.name}: the number of alternatives must be from {low} to {high}, got {count}; "
                          "the pose was left as it was")
    low, high = VARIATION_RANGE
    if not (math.isfinite(variation) and low <= variation <= high):
        raise SmplIkError(f"{arm.name}: Variation must be a number from {low:g} to {high:g}, got {variation:g}; "
                          "the pose was left as it was")
    return count, variation


def _new_alternatives(arm, objs, signature, count, variation, channels, rest):
    axes = bridge.bone_axes(arm)
    on_screen = bridge.read_pose(arm, axes)
    effectors = core_effectors(arm, objs, give_way=giving_way(arm, signature), all_hard=PREVIOUS_SOLVER)
    samples = load_smplik().sample(effectors, rest, count=count, seed=ALTERNATIVES_SEED, temperature=variation,
                                   refine=arm.smpl_ik.refine, options=refine_options(arm), current_pose=on_screen)
    last = kept_pose(arm, on_screen, rest)
    before = last if not isinstance(last, tuple) else None
    return Alternatives(signature=signature, count=count, variation=variation, rest=rest,
                        channels=(channels, *(bridge.pose_channels(s.local_rot, s.trans, axes) for s in samples)),
                        solutions=(before, *samples), status=arm.smpl_ik.status)


def step_alternatives(arm, step):
    """Write the body's next (step 1) or previous (step -1) alternative pose, wrapping round;
    returns (index, the Alternatives). The first step from a pose (or after the effectors,
    the count or the variation changed) samples a new set, with the pose on screen as index
    0; index 0 gives that pose back exactly. The status names what the alternative misses.
    SmplIkError (no effectors, bad settings, no generative weights) leaves the pose as it was,
    with the reason in the status."""
    props = arm.smpl_ik
    objs = effectors_of(arm)
    try:
        if not objs:
            raise SmplIkError(f"{arm.name}: no enabled effectors to pose alternatives for; add some with Add Effector")
        count, variation = alternatives_settings(arm)
        require_flow(arm, "Alternatives")
        signature = live.signature(objs)
        rest = rest_joints(arm)
        channels = bridge.read_channels(arm)
        key = arm.session_uid
        index = props.alternative_index
        alternatives = live.alternatives.get(key)
        if alternatives is None or not alternatives.holds(signature, count, variation, rest, index, channels):
            alternatives = _new_alternatives(arm, objs, signature, count, variation, channels, rest)
            live.alternatives[key] = alternatives
            index = 0
    except SmplIkError as exc:
        _set_status(arm, str(exc))
        raise
    index = (index + step) % (count + 1)
    bridge.write_channels(arm, *alternatives.channels[index])
    live.solved[key] = signature
    solution = alternatives.solutions[index]
    if solution is None:
        live.last.pop(key, None)
    else:
        live.last[key] = solution
        _remember_misses(arm, objs, solution)
    _set_status(arm, alternatives.status if index == 0 else reach_message(solution.misses))
    props.alternative_index = index
    return index, alternatives


@persistent
def _on_depsgraph_update(scene, depsgraph):
    if live.suspended:
        return
    if live.reprime:  # the first evaluation after undo, redo or loading: poses as stored are the truth
        live.reprime.clear()
        live.solved.clear()
        live.unmet.clear()
        for obj in bpy.data.objects:
            if is_body(obj):
                live.mark_solved(obj, effectors_of(obj))
        return
    bodies = {}
    for update in depsgraph.updates:
        if not update.is_updated_transform or not isinstance(update.id, bpy.types.Object):
            continue
        obj = update.id.original
        if is_effector(obj) and obj.smpl_ik_effector.enabled:
            arm = obj.smpl_ik_effector.body
            if is_body(arm) and arm.smpl_ik.live:
                bodies[arm.session_uid] = arm
    for key, arm in bodies.items():
        objs = effectors_of(arm)
        signature = live.signature(objs)
        if live.unchanged(live.solved.get(key), signature):
            continue
        # an effector left out of reach stays soft (as when it was dragged) until it is met
        # again, so moving another one never makes the pins give way for it
        dragged = giving_way(arm, signature)
        live.solved[key] = signature  # a refused input is not retried on every redraw
        try:
            solve_body(arm, objs, signature, dragged=dragged)
        except SmplIkError:
            pass                      # solve_body put the reason in the body's status


@persistent
def _on_file_or_undo(*_args):
    """After undo, redo or loading a file the stored poses are the truth. Objects' world
    matrices are only valid once the depsgraph has evaluated them, so the effectors are
    remembered as solved at the next depsgraph update (which then solves nothing)."""
    live.reprime.append(True)


# --- pose edits -----------------------------------------------------------------------------

_FLIP_X = np.diag([-1.0, 1.0, 1.0])


def mirror_pose(arm):
    """Swap the pose's left and right sides (about the body's own YZ plane)."""
    axes = bridge.bone_axes(arm)
    local, trans = bridge.read_pose(arm, axes)
    rest = rest_joints(arm)
    local = _FLIP_X @ local[list(MIRROR)] @ _FLIP_X
    trans = _FLIP_X @ (rest[0] + trans) - rest[0]
    bridge.write_pose(arm, local, trans, axes)
    pin(arm, effectors_of(arm, enabled_only=False))
    restart_alternatives(arm)


def reset_pose(arm):
    """The rest pose (T-pose) at the body's origin."""
    axes = bridge.bone_axes(arm)
    bridge.write_pose(arm, np.broadcast_to(np.eye(3), (len(JOINT_NAMES), 3, 3)), np.zeros(3), axes)
    pin(arm, effectors_of(arm, enabled_only=False))
    restart_alternatives(arm)


def keyframe_pose(arm, frame):
    """Key every pose bone's rotation and the root's location at `frame`."""
    for name in JOINT_NAMES:
        pb = arm.pose.bones[name]
        pb.keyframe_insert("rotation_quaternion", frame=frame, group=name)
    arm.pose.bones[JOINT_NAMES[0]].keyframe_insert("location", frame=frame, group=JOINT_NAMES[0])


# --- baking ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Baked:
    """What a bake did: its frames and, for each frame where an effector was not met, that
    frame's largest miss, as (frame, refine.Miss) in frame order (solved before smoothing)."""

    frame_start: int
    frame_end: int
    missed: tuple = ()

    def describe(self):
        """'Baked frames 1-10' and, when something missed, the frames and the worst miss."""
        done = f"Baked frames {self.frame_start}-{self.frame_end}"
        if not self.missed:
            return done
        frame, worst = max(self.missed, key=lambda fm: fm[1].error)
        frames = frame_ranges([f for f, _ in self.missed])
        return (f"{done}; effectors not met at {len(self.missed)} frame(s) ({frames}), the worst: "
                f"{worst.describe()} at frame {frame}")


def frame_ranges(frames):
    """'3-5, 9' for [3, 4, 5, 9] (sorted frame numbers)."""
    runs = []
    for f in frames:
        if runs and f == runs[-1][1] + 1:
            runs[-1][1] = f
        else:
            runs.append([f, f])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


@dataclass(frozen=True)
class BakeOptions:
    """What a bake does: the frames frame_start..frame_end; smoothing, a Gaussian sigma in
    frames over the solved rotations (0: none); refine, Exact Effectors (None: the body's
    setting); follow_path: solve the range as one path (models.ik.path.PathFollower: one
    latent for every frame, each frame blended toward the one before by path_smoothness, mu
    in [0, PATH_SMOOTHNESS_MAX]; always exact effectors, needs the generative weights)."""

    frame_start: int
    frame_end: int
    smoothing: float = 0.0
    refine: bool = None
    follow_path: bool = False
    path_smoothness: float = 0.5


def _check_bake(arm, options):
    if options.frame_end < options.frame_start:
        raise SmplIkError(f"the bake range {options.frame_start}-{options.frame_end} is empty")
    if not effectors_of(arm):
        raise SmplIkError(f"{arm.name}: no enabled effectors to bake from")
    if options.follow_path:
        mu = options.path_smoothness
        if not (math.isfinite(mu) and 0.0 <= mu <= PATH_SMOOTHNESS_MAX):
            raise SmplIkError(f"the path smoothness must be a number from 0 to {PATH_SMOOTHNESS_MAX:g}, got {mu:g}")
        require_flow(arm, "Follow Path")


def bake_steps(context, arm, options):
    """Generator: solve every frame of options (a BakeOptions) from the (animated) effectors,
    yielding the fraction done, then key the armature and return a Baked (the generator's
    StopIteration value). Plant Feet keeps the feet of the frame before (the first frame: of
    the pose on screen). Stopping the generator early keys nothing and restores the frame.
    SmplIkError for an empty range, no effectors, a bad path smoothness or (following a path)
    no generative weights, before anything changes."""
    _check_bake(arm, options)
    scene = context.scene
    frame_numbers = list(range(options.frame_start, options.frame_end + 1))
    original_frame = scene.frame_current
    use_refine = arm.smpl_ik.refine if options.refine is None else options.refine
    follower = (PathFollower(load_smplik(), rest_joints(arm), smoothness=options.path_smoothness)
                if options.follow_path else None)
    local, trans, missed = [], [], []
    live.suspended.append(True)
    try:
        for n, frame in enumerate(frame_numbers):
            scene.frame_set(frame)
            objs = effectors_of(arm)
            if not objs:
                raise SmplIkError(f"{arm.name}: no enabled effectors at frame {frame}")
            try:
                if follower is None:
                    solution = solve_effectors(arm, objs, current_pose=(local[-1], trans[-1]) if local else None,
                                               refine=use_refine)
                else:
                    follower.options = refine_options(arm)   # the floor follows the body, as per frame
                    solution = follower.step(core_effectors(arm, objs, all_hard=PREVIOUS_SOLVER))
            except SmplIkError as exc:
                raise SmplIkError(f"frame {frame}: {exc}") from None
            local.append(solution.local_rot)
            trans.append(solution.trans)
            if solution.misses:
                missed.append((frame, solution.misses[0]))
            yield (n + 1) / (len(frame_numbers) + 1)
        local, trans = smooth_poses(np.array(local), np.array(trans), options.smoothing)
        axes = bridge.bone_axes(arm)
        for frame, rot, tr in zip(frame_numbers, local, trans):
            bridge.write_pose(arm, rot, tr, axes)
            keyframe_pose(arm, frame)
    finally:
        live.suspended.pop()
        scene.frame_set(original_frame)
    live.mark_solved(arm, effectors_of(arm))
    restart_alternatives(arm)
    return Baked(options.frame_start, options.frame_end, tuple(missed))


def register():
    bpy.app.handlers.depsgraph_update_post.append(_on_depsgraph_update)
    for handlers in (bpy.app.handlers.undo_post, bpy.app.handlers.redo_post, bpy.app.handlers.load_post):
        handlers.append(_on_file_or_undo)


def unregister():
    for handlers in (bpy.app.handlers.depsgraph_update_post, bpy.app.handlers.undo_post,
                     bpy.app.handlers.redo_post, bpy.app.handlers.load_post):
        for fn in (_on_depsgraph_update, _on_file_or_undo):
            while fn in handlers:
                handlers.remove(fn)
    live.solved.clear()
    live.unmet.clear()
    live.reprime.clear()
    live.last.clear()
    live.alternatives.clear()

"""Solving a body from its effectors, on demand and for live solving: the refinement's options
from the body's settings, the effectors that give way, Keep Pose While Dragging, and writing
the solution with what it missed in the body's status.

The effectors that moved since a body's last solve are the ones being dragged: they are
solved as soft (as close as the pins allow), every other one as it is set. When the pins
cannot all be held, the pin that gives way (solved as soft, so the others hold) is one moved
since the body's last solve, or one a solve left out of reach; failing those, the core's
choice (the furthest from its target).

Every solve says what it did not meet: the body's status names the effector and the
distance left (empty once all are met), and a refused input (a bad tolerance or floor
height) leaves the pose as it was with the reason in the status.
"""
import math
from dataclasses import dataclass, replace

import numpy as np

from ...models.core.errors import SmplIkError
from ...models.ik.cost import BodyParts
from ...models.ik.flow import DEFAULT_FLOW_WEIGHTS
from ...models.ik.refine import RefineOptions
from ...models.ik.options import DEFAULT_MODE, SolveOptions
from ...models.ik.smplik import load_smplik
from ..com import bridge, live
from ..body.build import body_model_of
from .effectors import core_effectors, effectors_of

FLOOR_LIMIT = 10000.0    # metres; Blender stores an infinite float as its largest, so bound it
SHOWN_MISSES = 3
# Blender stores quaternions as float32: a pose read back from the bones differs from the
# solution written by about 1e-7, so closer than this is the same pose (Keep Pose's check).
SAME_POSE = 1e-5


def refine_options(arm):
    """models.ik.refine.RefineOptions from the body's settings (Plant Feet, Floor) and its own
    masses, capsules and soles (balance and self-collision fitted to this body's mesh and
    shape, not the open body's scaled). The floor (world Z) goes into the body's frame;
    SmplIkError for a height that is not a finite number of metres, or a body not standing
    upright."""
    props = arm.smpl_ik
    feet, parts = shaped_body(arm)
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
        contacts = feet
    return RefineOptions(plant_feet=props.plant_feet, floor=floor, contacts=contacts, body_parts=parts)


_shaped = {}


def shaped_body(arm):
    """(foot contacts, body parts) of the body's file and shape: its soles' contact points
    (models.core.kinematics.AttachedPoints) and its models.ik.cost.BodyParts, remembered (a
    drag asks on every step; fitting them takes about 50 ms)."""
    key = (arm.smpl_ik.body_path, arm.smpl_ik.gender, tuple(round(b, 6) for b in arm.smpl_ik.applied_betas))
    if key not in _shaped:
        _shaped.clear()
        body, betas = body_model_of(arm), np.array(arm.smpl_ik.applied_betas[:])
        _shaped[key] = (body.foot_contacts(betas), BodyParts.from_body(body, betas))
    return _shaped[key]


def reach_message(misses):
    """What the status and the reports say of a solve's misses (models.ik.reach.Miss, largest first):
    '' when none."""
    if not misses:
        return ""
    text = "; ".join(m.describe() for m in misses[:SHOWN_MISSES])
    more = len(misses) - SHOWN_MISSES
    return f"Out of reach: {text}" + (f" (and {more} more)" if more > 0 else "")


def set_status(arm, text):
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
    Condition it was solved under, and its latent) while its pose is still the one on screen,
    else the pose on screen (local_rot, trans)."""
    last = live.last.get(arm.session_uid)
    if last is not None and np.allclose(last.rest, rest, atol=SAME_POSE, rtol=0) and \
            np.allclose(last.local_rot, on_screen[0], atol=SAME_POSE, rtol=0) and \
            np.allclose(last.trans, on_screen[1], atol=SAME_POSE, rtol=0):
        return last
    return on_screen


@dataclass(frozen=True)
class SolveRequest:
    """How `solve_effectors` solves a body.
    dragged: names of the effectors moving now (solved soft, starting from the pose on screen:
    with Keep Pose While Dragging and the generative weights it is kept
    (models.ik.options.SolveOptions.keep: carried along the network's answer, its latent the
    fallback start), else refined from the pose on screen). give_way: names of the pins that
    give way first when the pins cannot all be held (`giving_way`). current_pose: (local_rot,
    trans) of the pose on screen, whose feet Plant Feet keeps (None: read from the bones).
    refine: Exact Effectors (None: the body's setting). mode: "deterministic" (None: the
    default) or "natural" (models.ik.smplik.SmplIk.solve). restarts: SolveOptions.restarts (a
    pin still missed tries the root turned, and says why)."""

    dragged: frozenset = frozenset()
    give_way: frozenset = frozenset()
    current_pose: tuple | None = None
    refine: bool | None = None
    mode: str | None = None
    restarts: bool = True


def solve_effectors(arm, objs, request=SolveRequest()):
    """Solve the body from effector objects as `request` (a SolveRequest) says, without writing
    anything; returns the IkSolution. SmplIkError for bad values."""
    dragged, give_way, current_pose = request.dragged, request.give_way, request.current_pose
    refine, mode, restarts = request.refine, request.mode, request.restarts
    refine = arm.smpl_ik.refine if refine is None else refine
    effectors = core_effectors(arm, objs, dragged, give_way)
    options = refine_options(arm)
    rest = bridge.rest_joints(arm)
    net = load_smplik()
    drag = bool(dragged)
    keeping = drag and arm.smpl_ik.keep_pose and net.flow is not None
    if current_pose is None and (((options.plant_feet or drag) and refine) or keeping):
        current_pose = bridge.read_pose(arm, bridge.bone_axes(arm))
    if drag and refine and not keeping:
        # the last solution while it is the pose on screen: a step after one out of reach creeps on
        current_pose = kept_pose(arm, current_pose, rest)
    plain = SolveOptions(refine=options if refine else None, mode=mode or DEFAULT_MODE, current_pose=current_pose,
                         warm_start=drag, restarts=restarts)
    if not keeping:
        return net.solve(effectors, rest, plain)
    kept = kept_pose(arm, current_pose, rest)
    return net.solve(effectors, rest, replace(plain, mode="natural", warm_start=False, keep=kept))


def giving_way(arm, signature):
    """Names of the body's effectors that give way first when its pins cannot all be held:
    those moved since it was last solved or pinned (the effectors now in `signature`) and
    those its last solve left out of reach."""
    key = arm.session_uid
    return set(live.moved(live.solved.get(key), signature)) | live.unmet.get(key, set())


def remember_misses(arm, objs, solution):
    """Remember which effector objects the pose on screen leaves out of reach, soft or given
    way (they give way first in the next solve, and stay soft in the next drag)."""
    missed = {(m.joint, m.kind.name) for m in solution.misses if m.soft or m.gave_way}
    live.unmet[arm.session_uid] = {o.name for o in objs
                                   if (o.smpl_ik_effector.joint, o.smpl_ik_effector.kind) in missed}


def _write_solution(arm, objs, solution, signature):
    bridge.write_pose(arm, solution.local_rot, solution.trans, bridge.bone_axes(arm))
    live.solved[arm.session_uid] = signature
    live.last[arm.session_uid] = solution
    remember_misses(arm, objs, solution)
    set_status(arm, reach_message(solution.misses))
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
        solution = solve_effectors(arm, objs, SolveRequest(frozenset(dragged), frozenset(giving_way(arm, signature)),
                                                           mode=mode))
    except SmplIkError as exc:
        set_status(arm, str(exc))
        raise
    _write_solution(arm, objs, solution, signature)
    return solution

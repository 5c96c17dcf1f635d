"""SMPL-IK in numpy: a full body pose from any set of effectors, in one network pass.

An effector pins one SMPL joint: its position, its world rotation, or a look-at (a local
axis of the joint that should point at a target), with a weight. As in ProtoRes, any number
of effectors in any order is one input; here each is written into its joint's slot for its
kind (the weighted mean where several share one, so a repeated effector counts once; weight
zero marks an empty slot), so the network sees the whole body at once: 24 joints x 3 kinds,
plus the body's rest joints. A residual MLP turns that into 24 world rotations (6D; the local
ones follow) and the root position. Conditioning on the rest joints lets one model serve the
open body, a user's SMPL file and a shape-inverted custom rig. Positions are taken relative
to the weighted mean of the filled positional slots, so the network is translation-invariant.

`refine` (models/refine.py) then makes the effectors exact with a few damped least-squares
steps on forward kinematics.
"""
import itertools
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics, world_to_local
from ..core.rotations import axis_angle_to_matrix, matrix_to_axis_angle, nearest_rotation, rot6d_to_matrix
from ..core.skeleton import JOINT_INDEX, MIRROR, NUM_JOINTS, PARENTS
from .effectors import Column, EffectorKind, Effector, encode_effectors, encode_positions, joint_of
from .flow import DEFAULT_FLOW_WEIGHTS, DEFAULT_TEMPERATURE, DIMS, PoseFlow, check_samples, file_sha256
from .hypotheses import DEFAULT_HYPOTHESES_WEIGHTS, Hypotheses
from .library import DEFAULT_LIBRARY, PoseLibrary
from .nn import WEIGHTS_DIR, block_norm_pairs, fold_norms, linear, load_weights, residual_trunk, trunk_shapes
from .refine import RefineOptions, arm_in_body, effector_errors, past_range, planted_feet, refine_many, refine_pose

ARCH = "smplik-v2"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "smplik.npz"
MODES = ("deterministic", "natural")
DEFAULT_MODE = "deterministic"   # the baseline, until the natural pose beats it on every benchmark figure


class _FoundOnFirstUse:
    """A dataclass field that may be given as a function of no arguments: it is called the
    first time the field is read, and its value kept. A solution's latent costs a pass of the
    flow backwards that most solves never need (only keeping a pose for its fallback does)."""

    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return None   # the field's default
        value = obj.__dict__.get(self.slot)
        if callable(value):
            value = obj.__dict__[self.slot] = value()
        return value

    def __set__(self, obj, value):
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class IkSolution:
    """A solved pose: local rotations (24, 3, 3) and root translation (3,) for a body with
    rest joints (24, 3); `positions` (24, 3) are computed on first use. After refinement,
    `errors` (E,) per effector (metres, radians) and `misses`, the effectors not met
    (refine.Miss, largest first; empty when all hold). `latent` (72,): the pose's latent in
    the flow under its effectors, when the flow solved it, found on first use (given as an
    array or a function of no arguments; `dataclasses.replace` without a new latent reads
    it). `condition`: the Condition of its effectors when the flow solved it, which
    `SolveOptions.keep` carries the pose from."""

    local_rot: np.ndarray
    trans: np.ndarray
    rest: np.ndarray
    errors: np.ndarray = None
    misses: tuple = ()
    latent: np.ndarray = _FoundOnFirstUse()
    condition: object = None

    @cached_property
    def positions(self):
        return forward_kinematics(self.local_rot, self.rest, PARENTS, self.trans).positions


@dataclass(frozen=True)
class SolveOptions:
    """How `SmplIk.solve` and `SmplIk.sample` pose a body.

    refine: how the effectors are made exact (a refine.RefineOptions: the hard ones held, the
    soft ones as close as they come), or None for the networks' pose as it is.
    mode (solve): "deterministic" (the network's one answer) or "natural" (the flow's latent
    origin: the least-cost pose the flow knows for these effectors).
    current_pose: (local_rot (24, 3, 3), trans (3,)) of the pose on screen, if any, or the
    IkSolution that put it there: with refine.plant_feet, ankles pinned by position keep its
    foot orientation.
    warm_start (solve, with current_pose and refine): refine from the pose on screen instead of
    the network's guess, as a drag does from one step to the next: what nothing asks to move
    stays where it was, and a few steps suffice. Where current_pose is a solution that missed
    an effector, the step creeps on as a kept one does (CREEP_ITERATIONS, below).
    keep (solve, needs the flow): continuity with a pose, (local_rot, trans) or an IkSolution
    of an earlier solve, as a drag with Keep Pose does. The refinement starts from the kept
    pose itself; when it is a solution that met its effectors (within CARRY_MET) on this body
    and carries its `condition`, every joint is first turned as the network's answer turned
    from that solution's effectors to these (and the root moved as the answer's moved), so
    the pose's own character (its offset from the network's answer) is carried, not just
    left where it was. The kept pose's latent (the solution's own, or the pose's under these
    effectors, found only when needed), decoded under these effectors, is the fallback start
    (`SmplIk.refine_from`) for a step that small steps cannot make. An unchanged problem
    gives the kept pose back.
    restarts: a fresh solve (neither warm_start nor keep) or a set of samples that still
    misses a pin is refined again with the root turned (ROOT_TURNS) and, where no turn meets
    the pins, looks for the reason (about half a second in all); False skips both, for a
    caller solving many like problems in a row that already found them out of reach (Bake,
    after a frame no turn mended)."""

    refine: RefineOptions = field(default_factory=RefineOptions)
    mode: str = DEFAULT_MODE
    current_pose: tuple = None
    warm_start: bool = False
    keep: object = None
    restarts: bool = True

    def __post_init__(self):
        if self.mode not in MODES:
            raise SmplIkError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.refine is not None and not isinstance(self.refine, RefineOptions):
            raise SmplIkError(f"SolveOptions.refine must be a RefineOptions or None, not {type(self.refine).__name__}")


@dataclass(frozen=True)
class Condition:
    """What the flow decodes under, for B effector sets (`SmplIk.condition`): the deterministic
    network's pose, local rotations (B, 24, 3, 3) and trans (B, 3), the flow's context
    (B, C) from the network's last hidden layer, and that layer (B, width) and the network
    input (B, 504), which the hypotheses head reads."""

    local_rot: np.ndarray
    trans: np.ndarray
    context: np.ndarray
    hidden: np.ndarray = None
    inputs: np.ndarray = None


class Slot:
    """The columns of one joint's slot in the network input: its effectors of each kind (the
    weighted mean where several share a kind) and their summed weight, capped at 1 (0: none);
    the joint's rest offset from the pelvis follows (3 more columns)."""

    POSITION = slice(0, 3)
    POSITION_WEIGHT = 3
    ROT6D = slice(4, 10)
    ROTATION_WEIGHT = 10
    LOOK_TARGET = slice(11, 14)
    LOOK_AXIS = slice(14, 17)
    LOOK_WEIGHT = 17
    WIDTH = 18
    WEIGHTS = [POSITION_WEIGHT, ROTATION_WEIGHT, LOOK_WEIGHT]   # in KINDS order
    INPUT = WIDTH + 3


def _slot_tables():
    """For each slot column: the effector-row column it takes and the kind whose weight scales
    it. A weight column takes its kind's one-hot column (1 for that kind), so it holds the
    weight itself."""
    source, kind = np.zeros(Slot.WIDTH, np.int64), np.zeros(Slot.WIDTH, np.int64)
    cols = np.arange(Column.COUNT)
    for slot, column, k in ((Slot.POSITION, Column.POINT, 0), (Slot.ROT6D, Column.ROT6D, 1),
                            (Slot.LOOK_TARGET, Column.POINT, 2), (Slot.LOOK_AXIS, Column.AXIS, 2)):
        source[slot], kind[slot] = cols[column], k
    for k, slot in enumerate(Slot.WEIGHTS):
        source[slot], kind[slot] = cols[Column.KIND][k], k
    return source, kind


SLOT_SOURCE, SLOT_KIND = _slot_tables()
_IDENTITY_6D = np.array([1.0, 0, 0, 0, 1.0, 0])


def expected_shapes(cfg):
    w, h = cfg["width"], cfg["hidden"]
    shapes = trunk_shapes(w, h, cfg["blocks"], NUM_JOINTS * Slot.INPUT)
    shapes.update({"out_norm.weight": (w,), "out_norm.bias": (w,),
                   "out.weight": (NUM_JOINTS * 6 + 3, w), "out.bias": (NUM_JOINTS * 6 + 3,)})
    return shapes


def network_input(effectors, rest):
    """(B, 24 * Slot.INPUT) network input for EncodedEffectors and rest joints (B, 24, 3),
    and the centre (B, 3) it is relative to.

    Each joint's slots hold the weighted mean of its effectors of each kind, with their weights
    summed and capped at 1, and its rest offset from the pelvis. Positions and look-at targets
    are taken relative to the weighted mean of the filled position and look-at slots."""
    joints, feats = effectors.joints, effectors.rows
    b = len(joints)
    kind_weight = feats[..., Column.KIND] * (feats[..., Column.WEIGHT] * effectors.mask)[..., None]   # (B, E, 3)
    rows = feats[..., SLOT_SOURCE] * kind_weight[..., SLOT_KIND]                                   # (B, E, 18)
    slots = np.zeros((b, NUM_JOINTS, Slot.INPUT), np.float32)   # the network runs in float32
    every = np.arange(b)
    for e in range(joints.shape[1]):   # one effector of each pose at a time: no index repeats within a step
        slots[every, joints[:, e], :Slot.WIDTH] += rows[:, e]
    wsum = slots[..., Slot.WEIGHTS]                                          # (B, 24, 3)
    slots[..., :Slot.WIDTH] /= np.maximum(wsum, 1e-6)[..., SLOT_KIND]
    w = slots[..., Slot.WEIGHTS] = np.minimum(wsum, 1.0)
    wp = w[..., 0::2]                                                        # position and look-at weights
    weighted = slots[..., Slot.POSITION] * wp[..., :1] + slots[..., Slot.LOOK_TARGET] * wp[..., 1:]
    centre = weighted.sum(1) / np.maximum(wp.sum((1, 2)), 1e-9)[:, None]
    filled = wp > 0
    slots[..., Slot.POSITION] -= centre[:, None] * filled[..., :1]
    slots[..., Slot.LOOK_TARGET] -= centre[:, None] * filled[..., 1:]
    slots[..., Slot.WIDTH:] = rest - rest[:, :1]
    return slots.reshape(b, -1), centre


# Mirroring a problem left-right (x -> -x in the body frame) swaps each joint's slots with its
# mirror joint's and flips signs: points and look-at axes M v, rotations M R M (first two
# columns -M r0, M r1), with M = diag(-1, 1, 1).
_ROT_SIGN = np.array([1.0, -1, -1, -1, 1, 1])
SLOT_SIGN = np.ones(Slot.INPUT, np.float32)
for _points in (Slot.POSITION, Slot.LOOK_TARGET, Slot.LOOK_AXIS, slice(Slot.WIDTH, Slot.INPUT)):
    SLOT_SIGN[_points.start] = -1.0
SLOT_SIGN[Slot.ROT6D] = _ROT_SIGN
OUT_SIGN = np.concatenate([np.tile(_ROT_SIGN, NUM_JOINTS), [-1.0, 1, 1]]).astype(np.float32)
MIRROR_OUT = np.concatenate([np.repeat(np.array(MIRROR) * 6, 6) + np.tile(np.arange(6), NUM_JOINTS),
                              NUM_JOINTS * 6 + np.arange(3)])


def mirror_input(x):
    """(B, 504) network input -> the input of the left-right mirrored problem."""
    return (x.reshape(len(x), NUM_JOINTS, Slot.INPUT)[:, list(MIRROR)] * SLOT_SIGN).reshape(len(x), -1)


def mirror_output(out):
    """(B, 147) raw output for a mirrored problem -> the output for the original one (world
    rotations M R M of the mirror joints, root x negated; the 6D identity offset is its own mirror)."""
    return out[:, MIRROR_OUT] * OUT_SIGN


class SmplIk:
    """The numpy SMPL-IK network. `SmplIk.load(path)` checks the file's architecture.

    symmetric (default): every problem is solved as given and mirrored left-right, and the
    two answers are averaged, so mirrored effectors give exactly the mirrored pose (and the
    held-out error drops by about 1 mm, 5%, at twice the network's cost; docs/learned_ik.md)."""

    def __init__(self, params, config, symmetric=True, flow=None, hypotheses=None, library_path=None):
        self.config = config
        self.symmetric = symmetric
        self.flow = flow
        self.hypotheses = hypotheses
        self.library_path = library_path
        self.p = fold_norms(params, block_norm_pairs(config["blocks"]) + [("out_norm", "out")])

    @classmethod
    def load(cls, path=DEFAULT_WEIGHTS, symmetric=True, flow_path=DEFAULT_FLOW_WEIGHTS,
             hypotheses_path=DEFAULT_HYPOTHESES_WEIGHTS, library_path=DEFAULT_LIBRARY):
        """flow_path: the generative weights (`flow.py`), loaded when the file exists (None:
        none) and was trained over these weights (the shipped flow is left out for others; a
        flow_path you name that does not fit is refused); without a flow only
        mode="deterministic" solves. hypotheses_path: the hypotheses head (`hypotheses.py`),
        loaded alike; without it `sample` spreads along the flow's principal directions.
        library_path: the pose library (`library.py`; None: none), read on the first sample
        that draws from it."""
        params, config = load_weights(path, ARCH, expected_shapes)
        digest = file_sha256(path)

        def belonging(extra_path, default, loader, what):
            if extra_path is None or not Path(extra_path).exists():
                return None
            extra = loader(extra_path)
            base = extra.config.get("base_sha256")
            if base is not None and base != digest:
                if Path(extra_path) != default:
                    raise SmplIkError(f"{extra_path}: this {what} was trained over other deterministic weights than {path}")
                return None   # the shipped one belongs to the shipped network, not to these weights
            return extra
        flow = belonging(flow_path, DEFAULT_FLOW_WEIGHTS, PoseFlow.load, "flow")
        hypotheses = belonging(hypotheses_path, DEFAULT_HYPOTHESES_WEIGHTS, Hypotheses.load, "hypotheses head")
        library = library_path if library_path is not None and Path(library_path).exists() else None
        return cls(params, config, symmetric=symmetric, flow=flow, hypotheses=hypotheses, library_path=library)

    @cached_property
    def library(self):
        """The pose library (`library.py`), read on first use; None without one."""
        return None if self.library_path is None else PoseLibrary.load(self.library_path)

    def network(self, x, features=False):
        """(B, 504) network input -> (B, 24*6 + 3) raw outputs, in float32; with features,
        also the last hidden layer normalised (B, width), the flow's condition (`flow.py`)."""
        h = residual_trunk(x, self.p, self.config["blocks"])
        out = linear(h, self.p, "out")
        return (out, h) if features else out

    def predict(self, effectors, rest, features=False):
        """Batched solve: EncodedEffectors (B sets) and rest joints (B, 24, 3) -> local
        rotations (B, 24, 3, 3), trans (B, 3) (and with features, the given problems' last
        hidden layer, `network`, and the network input)."""
        x, centre = network_input(effectors, rest)
        if self.symmetric:
            both, hidden = self.network(np.concatenate([x, mirror_input(x)]), features=True)
            hidden = hidden[:len(x)]
            out = both[:len(x)]
            out += mirror_output(both[len(x):])
            out *= 0.5
        else:
            out, hidden = self.network(x, features=True)
        out = out.astype(np.float64)   # orthonormal to float64 precision: the refinement needs it
        rot6 = out[:, :NUM_JOINTS * 6].reshape(-1, NUM_JOINTS, 6) + _IDENTITY_6D
        world = rot6d_to_matrix(rot6)   # the network predicts world rotations: errors do not pile up down the chains
        local = world_to_local(world)
        trans = centre + out[:, NUM_JOINTS * 6:] - rest[:, 0]
        return (local, trans, hidden, x) if features else (local, trans)

    def condition(self, encoded, rest):
        """The flow's Condition for EncodedEffectors (B sets) on rest joints (B, 24, 3): the
        deterministic network runs once per set, and every `decode` under it reuses that.
        SmplIkError without generative weights."""
        if self.flow is None:
            raise SmplIkError(f"no generative weights for these SMPL-IK weights ({DEFAULT_FLOW_WEIGHTS} is missing "
                              "or belongs to other weights): only the deterministic solve is available")
        det, trans, hidden, x = self.predict(encoded, rest, features=True)
        return Condition(local_rot=det, trans=trans, context=self.flow.context(hidden), hidden=hidden, inputs=x)

    def decode(self, condition, latents):
        """Poses from the flow (`flow.py`): a Condition (B sets) and latents (B, K, 72) -> local
        rotations (B, K, 24, 3, 3), trans (B, K, 3). Latent zero gives the least-cost pose the
        flow knows (the natural pose before the pose library's pull, `natural_start`)."""
        b, k = np.shape(latents)[:2]
        x = self.flow.forward(np.reshape(latents, (b * k, -1)), np.repeat(condition.context, k, axis=0))
        local = np.repeat(condition.local_rot, k, axis=0) @ axis_angle_to_matrix(x.reshape(b * k, NUM_JOINTS, 3))
        return local.reshape(b, k, NUM_JOINTS, 3, 3), np.repeat(condition.trans[:, None], k, axis=1)

    def encode(self, condition, local_rot):
        """The latents (N, 72) of poses local_rot (N, 24, 3, 3) under a Condition of one set
        (the flow run backwards): `decode` gives the poses back."""
        context = condition.context
        x = matrix_to_axis_angle(np.swapaxes(condition.local_rot, -1, -2) @ np.asarray(local_rot, dtype=np.float64))
        return self.flow.inverse(x.reshape(len(x), -1), np.broadcast_to(context, (len(x), context.shape[-1])))[0]

    def solve(self, effectors, rest_joints, options=SolveOptions()):
        """Pose for a list of Effectors on a body with rest joints (24, 3), as `options` (a
        SolveOptions) asks: from the network's answer or the natural pose (mode), the pose on
        screen (warm_start) or a kept pose (keep), refined or not. With the flow, the solution
        carries its `condition` and its `latent` (found on first use) for the next step.
        A fresh solve (neither warm_start nor keep) that still misses a pin is refined again
        with the root turned (ROOT_TURNS), unless its pins may not give way (refine.give_way
        False: a fit to targets that disagree); a miss no turn mends says why where the joint
        ranges are the cause (`_range_reason`)."""
        options = _checked(options)
        refine, current_pose, keep = options.refine, options.current_pose, options.keep
        natural = options.mode == "natural"
        rest = np.asarray(rest_joints, dtype=np.float64)[None]
        encoded = encode_effectors(effectors)
        generative = natural or keep is not None
        condition = self.condition(encoded, rest) if generative else None
        guess = ((lambda: (condition.local_rot[0], condition.trans[0])) if generative   # the network ran already
                 else (lambda: self._guess(encoded, rest)))
        fallback = carried = None
        if keep is not None:
            pose, kept_latent = self._kept(keep, condition)
            if refine is None:   # nothing refines the kept pose: its latent's pose under these effectors
                local, trans = self._decoded(condition, kept_latent())[0], pose[1]
                return IkSolution(local_rot=local, trans=trans, rest=rest[0], latent=kept_latent, condition=condition)
            carried = self._carried(keep, condition, rest[0])
            local, trans = pose if carried is None else carried
            if getattr(keep, "condition", None) is None and getattr(keep, "latent", None) is None:
                # a pose's own latent under these effectors decodes to the pose itself: the
                # natural pose is the other start
                fallback = lambda: self._decoded(condition, np.zeros(DIMS))   # noqa: E731
            else:
                fallback = lambda: (self._decoded(condition, kept_latent())[0], trans)   # noqa: E731
        elif options.warm_start and refine is not None and current_pose is not None:
            local, trans = _pose_arrays(current_pose, "current_pose")
            fallback = (lambda: self._decoded(condition, np.zeros(DIMS))) if natural else guess
        elif natural:
            local, trans = self.natural_start(condition, effectors, rest[0]) if refine is not None \
                else self._decoded(condition, np.zeros(DIMS))
        else:
            local, trans = guess()
        if refine is None:
            return self._solution(local, trans, rest[0], condition)
        # the drag's last step, where it missed: a kept pose, or the solution on screen a warm start refines
        last = keep if keep is not None else current_pose if options.warm_start else None
        creeping = _missed(last)
        first = replace(refine, iterations=min(refine.iterations, CREEP_ITERATIONS)) if creeping else refine
        # a pose out of reach creeps on without the fallback start: while the drag stays as
        # far out of reach, a limb straight toward its target stays straight
        solution = self.refine_from(effectors, (local, trans), rest[0], first, current_pose,
                                    None if creeping else fallback)
        if creeping and _missed(solution) and not _no_nearer(solution, last):
            # the target came nearer than the kept pose got (back within reach, or a jump): the
            # refinement goes on as long as a solve's
            solution = self.refine_from(effectors, (solution.local_rot, solution.trans), rest[0], refine,
                                        current_pose, fallback)
        if carried is not None and solution.misses:
            # turned with the network's answer, the pose can stall short of a target that small
            # steps from the kept pose itself reach (a floor in the way): take those when they
            # meet every effector or clearly miss less. Only where the drag starts to miss: a
            # kept pose that missed is not carried, it is the start
            plain = self.refine_from(effectors, pose, rest[0], refine, current_pose, fallback)
            if not plain.misses or miss_total(plain) < miss_total(solution) - WARM_MARGIN:
                solution = plain
        if generative and not _pins_met(solution) and not _stretched(solution):
            # the refinement stalled short of a pin (a limb folded against its range): the
            # network's own guess may reach it
            again = self.refine_from(effectors, guess(), rest[0], refine, current_pose)
            if miss_total(again) < miss_total(solution):
                solution = again
        if keep is None and not options.warm_start and options.restarts and _turnable(solution, refine):
            # every start fell in the same basin (the root turned the wrong way): a fresh solve
            # tries the root turned (ROOT_TURNS). Drags do not: a pose on screen should not jump
            strict = replace(refine, give_way=False)   # a turn is kept only when every pin holds
            turned = _root_turned((local, trans),
                                  lambda s: self.refine_from(effectors, s, rest[0], strict, current_pose))[0]
            if turned is not None:
                solution = turned
            else:
                reason = self._range_reason(effectors, solution, rest[0], refine, current_pose)
                solution = _with_reason(solution, reason)
        return self._solution(solution.local_rot, solution.trans, rest[0], condition, solution)

    def sample(self, effectors, rest_joints, count=8, seed=None, temperature=DEFAULT_TEMPERATURE,
               options=SolveOptions(), spread=None):
        """`count` alternative poses for the same effectors, in one batched pass of the
        networks, decoded from latents of the flow and, with options.refine, each made to meet
        the effectors (as `solve`; a sample whose refinement stalls short of a pin, or leaves an
        arm in the body, is refined again from nearer the natural pose,
        and one that still misses a pin with the root turned, ROOT_TURNS, the turn that worked
        first. Once no start or turn meets the pins, they are out of reach: the later samples
        keep their first refinement, and every miss says why where the joint ranges are the
        cause).
        Temperature 0 gives the latent origin's pose every time;
        the default suits most problems. spread (None: "mixed" when the hypotheses head and
        the pose library are there, else "hypotheses" when the head is, else "principal"):
        - "mixed": the hypotheses head's and the pose library's in turn, the head's first, half
          each (the head's fill in where the library holds too few distinct poses, and stand in,
          up to LIBRARY_SPARES, for a library pose the pins are not reached from);
        - "library": the poses of the pose library (`library.py`) that meet the pins best,
          each turned and placed by them and MIN_APART from the others, as the flow's latents
          scaled by temperature / DEFAULT_TEMPERATURE; principal ones fill in beyond those
          the library holds;
        - "hypotheses": the hypotheses head's poses (`hypotheses.py`), likeliest first, their
          latents scaled by temperature / DEFAULT_TEMPERATURE (so the default gives them as
          trained, 0 the natural pose); beyond the head's count, principal ones follow; seed
          None or 0 gives them as they are, another int turns the principal ones;
        - "principal": the latent directions that move the joints without effectors
          most (`principal_latents`), a step of temperature x PRINCIPAL_STEP each way along
          each, the strongest first; seed None or 0 gives those directions, another int a
          repeatable turn of them within the same subspace (another set as likely);
        - "random": latents drawn from N(0, temperature^2) (seed: an int for a repeatable set).
        options: a SolveOptions, of which refine and current_pose apply (mode does not; keep
        and warm_start are refused). Returns a list of IkSolution, each with the latent of its
        refined pose (`SolveOptions(keep=solution)` carries it on)."""
        t = check_samples(count, temperature)
        options = _checked(options)
        if options.keep is not None or options.warm_start:
            raise SmplIkError("sample draws its poses from the flow: SolveOptions keep and warm_start are solve's")
        if spread is None:
            spread = ("principal" if self.hypotheses is None else
                      "mixed" if self.library_path is not None else "hypotheses")
        if spread not in SPREADS:
            raise SmplIkError(f"spread must be one of {', '.join(SPREADS)}, not {spread!r}")
        if spread in ("hypotheses", "mixed") and self.hypotheses is None:
            raise SmplIkError(f"no hypotheses head for these SMPL-IK weights ({DEFAULT_HYPOTHESES_WEIGHTS} is missing "
                              "or belongs to other weights): use spread='principal' or 'random'")
        if spread in ("library", "mixed") and self.library_path is None:
            raise SmplIkError(f"no pose library ({DEFAULT_LIBRARY} is missing; scripts/build_pose_library.py "
                              "makes it): use spread='hypotheses', 'principal' or 'random'")
        refine = options.refine
        rest = np.asarray(rest_joints, dtype=np.float64)[None]
        encoded = encode_effectors(effectors)
        condition = self.condition(encoded, rest)
        places = np.full((count, 3), np.nan)   # a library pose's own root translation (NaN: the network's)
        if spread == "random":
            latents = np.random.default_rng(seed).standard_normal((1, count, DIMS)) * t
        elif spread == "hypotheses":
            latents = self.hypothesis_latents(condition, count, t, effectors, rest[0], seed)[None]
        elif spread == "library":
            latents, found = self.library_latents(condition, count, t, effectors, rest[0])
            more = self.principal_latents(condition, effectors, rest[0], count - len(latents), t * PRINCIPAL_STEP, seed)
            places[:len(found)] = found
            latents = np.concatenate([latents, more])[None]
        elif spread == "mixed":
            latents, places = self.mixed_latents(condition, count, t, effectors, rest[0], seed)
            latents = latents[None]
        else:
            latents = self.principal_latents(condition, effectors, rest[0], count, t * PRINCIPAL_STEP, seed)[None]
        local, trans = (x[0] for x in self.decode(condition, latents))
        if t > 0:   # at temperature 0 every sample is the latent origin's pose, where the network puts it
            trans = np.where(np.isnan(places), trans, places)
        if refine is None:
            return [IkSolution(local_rot=local[k], trans=trans[k], rest=rest[0], latent=latents[0, k],
                               condition=condition) for k in range(count)]
        effectors = list(effectors)
        extra = self._planted(effectors, rest[0], refine, options.current_pose)
        out = []
        # the root turn that met every pin for one sample (ROOT_TURNS), tried first for the next;
        # False once none did (or restarts are off)
        turn = None if options.restarts else False
        reason = ""   # why the pins cannot all be met, once no turn meets them (_range_reason)
        exhausted = False   # no start or turn met them for an earlier sample: they are out of reach
        spares = None   # the head's poses a library pose that misses is replaced by (found on first need)
        for k, refined in enumerate(refine_many(local, trans, rest[0], effectors + extra, refine)):
            # from some starts the refinement stalls (a limb folded against its range): try again
            # nearer the natural pose, which the same pins reach, and last from the network's guess.
            # Where another start misses the same pins as far, the problem is out of reach, not
            # the start stuck: the sample stays (else every sample would become the same retry)
            starts = [latents[0, k] * shrink for shrink in SAMPLE_RETRIES] + [None]
            for retry in starts:
                if _pins_met(refined) or _stretched(refined) or exhausted:
                    break
                start = self._guess(encoded, rest) if retry is None else self._decoded(condition, retry)
                again = refine_pose(*start, rest[0], effectors + extra, refine)
                if _same_misses(again.misses, refined.misses):
                    break
                if miss_total(again) < miss_total(refined):
                    refined = again
            if t > 0 and not np.isnan(places[k, 0]) and not _pins_met(refined) and self.hypotheses is not None:
                # a library pose the pins do not reach from (captured motion unlike this one):
                # the head's unused poses instead, before the root turns or a verdict of out of reach
                if spares is None:
                    used = count - int(np.count_nonzero(~np.isnan(places[:, 0])))
                    spares = iter(self.hypothesis_latents(condition, 2 * count, t, effectors, rest[0], seed)[used:])
                for latent in itertools.islice(spares, LIBRARY_SPARES):
                    again = refine_pose(*self._decoded(condition, latent), rest[0], effectors + extra, refine)
                    if miss_total(again) < miss_total(refined):
                        refined, latents[0, k] = again, latent
                    if _pins_met(refined):
                        break
            if turn is not False and _turnable(refined, refine):
                # every start fell in the same basin: try the root turned, once per call (a set
                # out of reach would cost every sample the turns); the turn that worked is the
                # first the next missing sample tries
                strict = replace(refine, give_way=False)
                again, found = _root_turned((local[k], trans[k]),
                                            lambda s: refine_pose(*s, rest[0], effectors + extra, strict), turn)
                if again is not None:
                    refined, turn = again, found
                elif turn is None:
                    turn, exhausted = False, True
                    reason = self._range_reason(effectors + extra, refined, rest[0], refine)
            if reason and not _pins_met(refined):
                refined = _with_reason(refined, reason)
            out.append(self._arm_out(refined, condition, latents[0, k], rest[0], effectors + extra, refine))
        final = self.encode(condition, np.stack([r.local_rot for r in out]))
        return [IkSolution(local_rot=r.local_rot, trans=r.trans, rest=rest[0], errors=r.errors[:len(effectors)],
                           misses=r.misses, latent=final[k], condition=condition)
                for k, r in enumerate(out)]

    def _arm_out(self, refined, condition, latent, rest, effectors, options):
        """A refined sample, or where the collision term left an arm in the body the first
        refinement from nearer the natural pose (the latent times each of COLLISION_RETRIES)
        with the arm out and every pin met, where the arm mostly is out. A sample that misses a
        pin, or whose retries do no better (its pins hold the arm in), stays as it is."""
        if not _pins_met(refined) or not arm_in_body(refined.local_rot, refined.trans, rest, effectors, options):
            return refined
        for shrink in COLLISION_RETRIES:
            again = refine_pose(*self._decoded(condition, latent * shrink), rest, effectors, options)
            if _pins_met(again) and not arm_in_body(again.local_rot, again.trans, rest, effectors, options):
                return again
        return refined

    def _range_reason(self, effectors, solution, rest, options, current_pose=None):
        """Why a pose that every start left short of a pin misses it, where the joint ranges
        are why: refined from it with the ranges off, every pin is met, and these joints go
        past their ranges ('' when that is not so, or the ranges are off already)."""
        if not options.joint_limits:
            return ""
        free = self.refine_from(effectors, (solution.local_rot, solution.trans), rest,
                                replace(options, joint_limits=False, give_way=False), current_pose)
        past = past_range(free.local_rot) if _pins_met(free) else []
        return "the pins meet only with " + ", ".join(past) if past else ""

    def hypothesis_latents(self, condition, count, temperature, effectors, rest_joints, seed=None):
        """Latents (count, 72) under a Condition of one set: the flow's latents of the
        hypotheses head's first min(count, head's count) poses, times temperature /
        DEFAULT_TEMPERATURE, then principal latents (`principal_latents`) for the rest."""
        head = self.hypotheses.residuals(condition.inputs, condition.hidden)[0][:count]   # (H, 72) residuals
        context = np.broadcast_to(condition.context, (len(head), condition.context.shape[-1]))
        latents = self.flow.inverse(head, context)[0] * (temperature / DEFAULT_TEMPERATURE)
        if count > len(latents):
            more = self.principal_latents(condition, effectors, rest_joints, count - len(latents),
                                          temperature * PRINCIPAL_STEP, seed)
            latents = np.concatenate([latents, more])
        return latents

    def library_latents(self, condition, count, temperature, effectors, rest_joints):
        """Latents (K <= count, 72) under a Condition of one set, and root translations (K, 3):
        the pose library's poses that meet the effectors best (`PoseLibrary.starts`; the
        network's pose gives the heading where the position pins do not), as the flow's
        latents times temperature / DEFAULT_TEMPERATURE, and where the pins place each."""
        local, trans = self._library_starts(condition, effectors, rest_joints, count)
        if not len(local):
            return np.zeros((0, DIMS)), trans
        return self.encode(condition, local) * (temperature / DEFAULT_TEMPERATURE), trans

    def mixed_latents(self, condition, count, temperature, effectors, rest_joints, seed=None):
        """Latents (count, 72) and root translations (count, 3; NaN: the network's): the
        hypotheses head's (`hypothesis_latents`) and the pose library's (`library_latents`) in
        turn, the head's first; count // 2 from the library where it holds that many distinct
        poses for these pins, the head's for the rest. Measured before it was built
        (docs/training_log.md), the nearest of the eight came nearer the truth than the head's
        eight alone on held-out CMU clips and on m21's."""
        library, found = self.library_latents(condition, count // 2, temperature, effectors, rest_joints)
        head = self.hypothesis_latents(condition, count - len(library), temperature, effectors, rest_joints, seed)
        turns = np.stack([head[:len(library)], library], 1).reshape(-1, DIMS)   # h0, l0, h1, l1, ...
        places = np.full((count, 3), np.nan)
        places[1:2 * len(library):2] = found
        return np.concatenate([turns, head[len(library):]]), places

    def principal_latents(self, condition, effectors, rest_joints, count, step, seed=None):
        """Latents (count, 72) under a Condition of one set: +step and -step along each of the
        ceil(count / 2) latent directions that move the joints without an effector furthest
        per unit of latent (the leading right singular vectors of the Jacobian of their
        positions at the natural pose), the strongest first. Eight random latents in 72
        dimensions mostly vary what hardly shows; these vary what does, each by the same
        likelihood. seed: None or 0 for the directions themselves, another int for a
        repeatable random turn of them within the subspace they span."""
        rest = np.asarray(rest_joints, dtype=np.float64)
        pairs = -(-count // 2)
        if step == 0:
            return np.zeros((count, DIMS))
        pinned = {joint_of(e, n) for n, e in enumerate(effectors)}
        free = [j for j in range(NUM_JOINTS) if j not in pinned] or list(range(NUM_JOINTS))
        probes = np.concatenate([np.zeros((1, DIMS)), np.eye(DIMS) * PRINCIPAL_PROBE])[None]
        local, trans = (x[0] for x in self.decode(condition, probes))
        pos = forward_kinematics(local, np.broadcast_to(rest, (len(local),) + rest.shape), PARENTS, trans).positions
        jac = (pos[1:, free] - pos[:1, free]).reshape(DIMS, -1) / PRINCIPAL_PROBE     # (72, 3F)
        directions = np.linalg.svd(jac, full_matrices=False)[0][:, :pairs].T           # (pairs, 72)
        if seed:
            turn = np.linalg.qr(np.random.default_rng(seed).standard_normal((pairs, pairs)))[0]
            directions = turn.T @ directions
        signed = np.stack([directions, -directions], 1).reshape(2 * pairs, DIMS)
        return signed[:count] * step

    def natural_start(self, condition, effectors, rest_joints):
        """Where a fresh natural solve's refinement starts, (local_rot (24, 3, 3), trans (3,)):
        the flow's latent origin under a Condition of one set, and with the pose library, the
        pose halfway (NATURAL_SHARE) from it to the mean of the NATURAL_NEIGHBOURS library
        poses that meet the effectors best (`PoseLibrary.starts`, turned and placed by the
        pins; the network's pose gives the heading where they do not). Measured before it was
        built (docs/training_log.md), the refined pose came nearer the truth than the origin's
        on held-out CMU clips and on m21's; the mean alone came nearer on CMU only."""
        local, trans = self._decoded(condition, np.zeros(DIMS))
        if self.library is None:
            return local, trans
        near, places = self._library_starts(condition, effectors, rest_joints, NATURAL_NEIGHBOURS, apart=0.0)
        if not len(near):
            return local, trans
        mean = nearest_rotation(near.mean(0))
        return (nearest_rotation(NATURAL_SHARE * local + (1 - NATURAL_SHARE) * mean),
                NATURAL_SHARE * trans + (1 - NATURAL_SHARE) * places.mean(0))

    def _library_starts(self, condition, effectors, rest_joints, count, **options):
        """`PoseLibrary.starts` for a Condition of one set (options: its keywords): the
        network's pose gives the heading (and the place, without position pins)."""
        pelvis = condition.trans[0] + rest_joints[0]
        return self.library.starts(effectors, rest_joints, count, (condition.local_rot[0, 0], pelvis), **options)

    def refine_from(self, effectors, start, rest_joints, options=RefineOptions(), current_pose=None, fallback=None):
        """Refine a pose for a list of Effectors: start (local_rot (24, 3, 3), trans (3,)) on rest
        joints (24, 3), with `options` (a RefineOptions). current_pose: (local_rot, trans) of the pose
        on screen, whose feet options.plant_feet keeps (extra hard effectors). fallback: a function of
        no arguments giving another start (local_rot, trans), also tried when this one misses the
        soft targets by over FALLBACK_SOFT_ERROR. Returns an IkSolution (no latent) whose errors
        (E,) are the given effectors' and whose misses include the planted feet's."""
        rest = np.asarray(rest_joints, dtype=np.float64)
        local, trans = _pose_arrays(start, "start")
        given = list(effectors)
        effectors = given + self._planted(given, rest, options, current_pose)
        refined = refine_pose(local, trans, rest, effectors, options)
        soft = np.array([bool(e.soft) for e in effectors])
        if fallback is not None and soft.any() and refined.errors[soft].sum() > FALLBACK_SOFT_ERROR:
            # small steps cannot bend a limb that is straight on screen: the network's guess may
            # get there. Refine it only when it nearly holds the pins and is nearer the soft
            # targets; take it when it then meets them, or misses clearly less (a drag out of
            # reach should not flicker between the two)
            guess = fallback()
            errors = effector_errors(effectors, *guess, rest)
            if (not (~soft).any() or errors[~soft].max() < FALLBACK_PIN_ERROR) and \
                    errors[soft].sum() < refined.errors[soft].sum():
                guessed = refine_pose(*guess, rest, effectors, replace(options, iterations=FALLBACK_ITERATIONS))
                if not guessed.misses or miss_total(guessed) < miss_total(refined) - WARM_MARGIN:
                    refined = guessed
        return IkSolution(local_rot=refined.local_rot, trans=refined.trans, rest=rest,
                          errors=refined.errors[:len(given)], misses=refined.misses)

    def _guess(self, encoded, rest):
        """The network's pose (local_rot, trans) for one EncodedEffectors set on rest (1, 24, 3)."""
        return tuple(x[0] for x in self.predict(encoded, rest))

    def _decoded(self, condition, latent):
        """The pose (local_rot, trans) a latent (72,) decodes to under a Condition of one set."""
        return tuple(x[0, 0] for x in self.decode(condition, latent[None, None]))

    @staticmethod
    def _planted(effectors, rest, options, current_pose):
        """The planted-feet effectors (refine.planted_feet) of the pose on screen, if any."""
        if not (options.plant_feet and current_pose is not None):
            return []
        on_screen = _pose_arrays(current_pose, "current_pose")
        return planted_feet(effectors, forward_kinematics(on_screen[0], rest, PARENTS, on_screen[1]).rotations)

    def _kept(self, keep, condition):
        """A kept pose (SolveOptions.keep) as arrays (local_rot, trans), and a function giving
        its latent (72,) (the solution's own, else the pose's under `condition`), found once
        and only when asked for."""
        pose = _pose_arrays((keep.local_rot, keep.trans) if isinstance(keep, IkSolution) else keep, "keep")
        found = []

        def latent():
            if not found:
                own = keep.latent if isinstance(keep, IkSolution) else None
                value = self.encode(condition, pose[0][None])[0] if own is None else np.asarray(own, dtype=np.float64)
                if value.shape != (DIMS,) or not np.all(np.isfinite(value)):
                    raise SmplIkError(f"keep's latent must be {DIMS} finite numbers; got shape {value.shape}")
                found.append(value)
            return found[0]
        return pose, latent

    @staticmethod
    def _carried(keep, condition, rest):
        """The kept solution turned at every joint as the network's answer turned from its
        Condition to `condition` (its local rotations R -> G' G^T R, G and G' the answers'),
        its root moved as the answer's moved; None unless keep is an IkSolution on these rest
        joints that carries its Condition and met every effector within CARRY_MET (a pose
        stretched toward a target out of reach goes on from where it is instead: turned with
        the answer it would stretch again from further away)."""
        if not (isinstance(keep, IkSolution) and keep.condition is not None and keep.errors is not None
                and np.array_equal(keep.rest, rest) and np.max(keep.errors, initial=0.0) < CARRY_MET):
            return None
        before, now = keep.condition, condition
        turn = now.local_rot[0] @ np.swapaxes(before.local_rot[0], -1, -2)
        return turn @ np.asarray(keep.local_rot, dtype=np.float64), \
            np.asarray(keep.trans, dtype=np.float64) + now.trans[0] - before.trans[0]

    def _solution(self, local, trans, rest, condition, refined=None):
        """An IkSolution of the pose (with `refined`'s errors and misses); under a Condition,
        with it and its latent (found on first use)."""
        errors, misses = (None, ()) if refined is None else (refined.errors, refined.misses)
        if condition is None:
            return IkSolution(local_rot=local, trans=trans, rest=rest, errors=errors, misses=misses)
        return IkSolution(local_rot=local, trans=trans, rest=rest, errors=errors, misses=misses,
                          latent=lambda: self.encode(condition, local[None])[0], condition=condition)

    def solve_positions(self, joints, targets, rest_joints):
        """Many poses at once from the same joints pinned by position (no refinement), for
        batch scripts: joints, E names or indices; targets (B, E, 3); rest joints (24, 3) or
        (B, 24, 3) -> local rotations (B, 24, 3, 3), trans (B, 3)."""
        encoded = encode_positions(joints, targets)
        rest = np.broadcast_to(np.asarray(rest_joints, dtype=np.float64), (len(encoded.joints), NUM_JOINTS, 3))
        return self.predict(encoded, rest)


SPREADS = ("mixed", "hypotheses", "library", "principal", "random")   # how `sample` picks its latents
ALTERNATIVES_SEED = 0   # the add-on's Alternatives (and benchmark.py's): one repeatable set per problem
PRINCIPAL_STEP = 2.5   # a principal alternative's latent step per unit of temperature (0.6: 1.5 latent units)
PRINCIPAL_PROBE = 1e-2   # the latent step of the finite differences behind principal_latents
NATURAL_NEIGHBOURS = 8   # library poses whose mean a fresh natural solve starts halfway to (`natural_start`)
NATURAL_SHARE = 0.5      # the flow origin's share of that start, the library mean's the rest
LIBRARY_SPARES = 2   # the head's unused poses a library alternative that misses a pin may be replaced by, at most
SAMPLE_RETRIES = (0.5, 0.25, 0.0)   # latent scales a sample that misses a pin is refined again from
COLLISION_RETRIES = (0.5, 0.25)     # latent scales a sample with an arm in the body is refined again from
CARRY_MET = 1e-3   # metres (radians): a kept solution this close to every effector is carried (SolveOptions.keep)
# A kept solve from a solution that missed an effector by more than CARRY_MET (a drag going on
# out of reach) refines at most this many iterations while it then misses no less (within
# CREEP_MARGIN): there the soft target creeps nearer by a fraction of a millimetre an
# iteration, and the drag's next step goes on from where this one stops (the path drag of
# scripts/benchmark_drag.py stays within 0.1 mm of what long solves reach at every step).
# A step that comes nearer than that (back within reach) goes on to RefineOptions.iterations.
CREEP_ITERATIONS = 5
CREEP_MARGIN = 1e-3
ROOT_TURNS = tuple(sign * np.radians(60.0) * axis for sign in (1.0, -1.0) for axis in np.eye(3))   # axis-angle
SAME_MISS = 1e-3   # metres (radians): two solves missing an effector this alike miss it the same
WARM_MARGIN = 0.01   # metres (or radians) less miss that make a drag take another start than its first
FALLBACK_ITERATIONS = 8   # for that guess: a reachable problem's guess is near its answer
FALLBACK_PIN_ERROR = 0.05   # metres (radians): a guess breaking a pin by more is not near an answer
FALLBACK_SOFT_ERROR = 0.01  # a warm start this far from its soft targets (1 cm) asks the network


def _pose_arrays(pose, name):
    """(local_rot (24, 3, 3), trans (3,)) (or an IkSolution's) as float64 arrays, or a clear
    error naming `name`."""
    if isinstance(pose, IkSolution):
        pose = pose.local_rot, pose.trans
    try:
        local, trans = (np.asarray(x, dtype=np.float64) for x in pose)
    except (TypeError, ValueError):
        raise SmplIkError(f"{name} must be (local rotations (24, 3, 3), translation (3,)); got {type(pose).__name__}") from None
    if local.shape != (NUM_JOINTS, 3, 3) or trans.shape != (3,):
        raise SmplIkError(f"{name} must be local rotations (24, 3, 3) and a translation (3,); "
                          f"got {local.shape} and {trans.shape}")
    if not (np.all(np.isfinite(local)) and np.all(np.isfinite(trans))):
        raise SmplIkError(f"{name} holds NaN or infinite numbers")
    return local, trans


def _checked(options):
    """options if it is a SolveOptions, else a clear error (refine options go in its `refine`)."""
    if not isinstance(options, SolveOptions):
        raise SmplIkError(f"options must be a SolveOptions (RefineOptions go in its `refine`), "
                          f"not {type(options).__name__}")
    return options


def _same_misses(a, b):
    """Whether two solves' misses (refine.Miss) name the same effectors, each as far from its
    target to within SAME_MISS."""
    key = lambda m: (m.joint, m.kind)   # noqa: E731
    a, b = sorted(a, key=key), sorted(b, key=key)
    return [key(m) for m in a] == [key(m) for m in b] and all(abs(m.error - n.error) < SAME_MISS for m, n in zip(a, b))


def _root_turned(start, refine, first=None):
    """A pose that meets every pin, refined (`refine`, a function of a start (local_rot, trans))
    from `start` with the root turned by each of ROOT_TURNS (ROOT_TURNS[first] first), and that
    turn's index; (None, None) when none does. The network's starts can all lie in one basin
    where a pin gives way (on m21's female body a pelvis pin 1.8 mm short, the hips and spine
    30 degrees off the pose that holds it); a root turned 60 degrees lets the refinement leave
    it."""
    local, trans = start
    order = list(range(len(ROOT_TURNS)))
    if first is not None:
        order.insert(0, order.pop(first))
    for n in order:
        turned = np.array(local, dtype=np.float64)
        turned[0] = axis_angle_to_matrix(ROOT_TURNS[n]) @ turned[0]
        again = refine((turned, trans))
        if _pins_met(again):
            return again, n
    return None, None


def _turnable(refined, options):
    """Whether a refined pose (Refined or IkSolution) is one the root turns may mend: it misses
    a pin that is not out of reach of another (`_stretched`), and its pins may give way
    (options.give_way; pins that may not are a fit to disagreeing targets, each giving a
    little, and are not expected to hold)."""
    return options.give_way and not _pins_met(refined) and not _stretched(refined)


def _with_reason(refined, reason):
    """A refined pose (Refined or IkSolution) with `reason` given to each hard pin it misses
    that has none yet (not to a contact point under the floor)."""
    if not reason:
        return refined
    misses = tuple(m if m.soft or m.reason or m.floor else replace(m, reason=reason) for m in refined.misses)
    return replace(refined, misses=misses)


def _stretched(refined):
    """Whether a pin's miss already has its reason: from the refinement, a target out of the
    body's reach of another (`refine.out_of_reach`), which no start meets."""
    return any(m.reason and not m.soft for m in refined.misses)


def _pins_met(refined):
    """Whether a refined pose (or IkSolution) misses no hard effector."""
    return not any(not m.soft for m in refined.misses)


def _missed(solution):
    """Whether a kept solution missed an effector by more than CARRY_MET (False without errors)."""
    return isinstance(solution, IkSolution) and solution.errors is not None and \
        np.max(solution.errors, initial=0.0) > CARRY_MET


def _no_nearer(solution, kept):
    """Whether a solution, every hard pin held, is no nearer its worst-missed effector than the
    kept solution was to its own (within CREEP_MARGIN): the drag stays as far out of reach."""
    return not any(not m.soft and not m.gave_way for m in solution.misses) and \
        np.max(solution.errors, initial=0.0) >= np.max(kept.errors, initial=0.0) - CREEP_MARGIN


def miss_total(refined):
    """A refined pose's misses as one number: hard ones first (a metre of hard miss outweighs
    any soft one), then soft."""
    return sum(m.error * (1.0 if m.soft else 1e3) for m in refined.misses)


SIX_POINTS = ("pelvis", "neck", "left_wrist", "right_wrist", "left_ankle", "right_ankle")
SIX_POINT_JOINTS = tuple(JOINT_INDEX[n] for n in SIX_POINTS)


def six_point_effectors(positions):
    """SMPL-IK's benchmark configuration: pelvis, neck, wrists, ankles (positions)."""
    return [Effector(n, EffectorKind.POSITION, tuple(positions[JOINT_INDEX[n]])) for n in SIX_POINTS]


@lru_cache(maxsize=2)
def load_smplik(path=str(DEFAULT_WEIGHTS)):
    return SmplIk.load(path)

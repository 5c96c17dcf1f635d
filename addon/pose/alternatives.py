"""Alternative poses for the same effectors (the generative model's samples): Next and
Previous step through a set, index 0 being the pose on screen before the first step; the set
is sampled again when the effectors, the count, the variation or the body's rest change."""
import math
from dataclasses import dataclass

import numpy as np

from ...models.core.errors import SmplIkError
from ...models.ik.options import ALTERNATIVES_SEED, SampleOptions
from ...models.ik.smplik import load_smplik
from ..com import bridge, live
from .effectors import core_effectors, effectors_of
from .solving import giving_way, kept_pose, reach_message, refine_options, remember_misses, require_flow, set_status

ALTERNATIVES_RANGE = (2, 32)   # how many alternatives a set may hold
VARIATION_RANGE = (0.0, 2.0)   # the sampling temperature (0: every alternative is the latent origin's pose)


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
    effectors = core_effectors(arm, objs, give_way=giving_way(arm, signature))
    options = SampleOptions(count=count, seed=ALTERNATIVES_SEED, temperature=variation,
                            refine=refine_options(arm) if arm.smpl_ik.refine else None, current_pose=on_screen)
    samples = load_smplik().sample(effectors, rest, options)
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
        rest = bridge.rest_joints(arm)
        channels = bridge.read_channels(arm)
        key = arm.session_uid
        index = props.alternative_index
        alternatives = live.alternatives.get(key)
        if alternatives is None or not alternatives.holds(signature, count, variation, rest, index, channels):
            alternatives = _new_alternatives(arm, objs, signature, count, variation, channels, rest)
            live.alternatives[key] = alternatives
            index = 0
    except SmplIkError as exc:
        set_status(arm, str(exc))
        raise
    index = (index + step) % (count + 1)
    bridge.write_channels(arm, *alternatives.channels[index])
    live.solved[key] = signature
    solution = alternatives.solutions[index]
    if solution is None:
        live.last.pop(key, None)
    else:
        live.last[key] = solution
        remember_misses(arm, objs, solution)
    set_status(arm, alternatives.status if index == 0 else reach_message(solution.misses))
    props.alternative_index = index
    return index, alternatives

"""Baking: solve every frame of a range from the (animated) effectors and key the body, frame
by frame or as one path (one latent of the generative model for every frame)."""
import math
from dataclasses import dataclass

import numpy as np

from ...models.core.errors import SmplIkError
from ...models.ik.path import PathFollower
from ...models.ik.smplik import load_smplik
from ...models.motion.temporal import smooth_poses
from ..com import bridge, live
from ..motion.keys import keyframe_pose
from .effectors import core_effectors, effectors_of
from .solving import SolveRequest, refine_options, require_flow, restart_alternatives, solve_effectors

PATH_SMOOTHNESS_MAX = 0.95     # Follow Path's mu; at 1 the path would never leave its first frame


@dataclass(frozen=True)
class Baked:
    """What a bake did: its frames and, for each frame where an effector was not met, that
    frame's largest miss, as (frame, models.ik.reach.Miss) in frame order (solved before smoothing)."""

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
    the pose on screen). The first frame of a run that misses a pin tries every start
    (SolveOptions.restarts); the frames after it that go on missing do not. Stopping the
    generator early keys nothing and restores the frame.
    SmplIkError for an empty range, no effectors, a bad path smoothness or (following a path)
    no generative weights, before anything changes."""
    _check_bake(arm, options)
    scene = context.scene
    frame_numbers = list(range(options.frame_start, options.frame_end + 1))
    original_frame = scene.frame_current
    use_refine = arm.smpl_ik.refine if options.refine is None else options.refine
    follower = (PathFollower(load_smplik(), bridge.rest_joints(arm), smoothness=options.path_smoothness)
                if options.follow_path else None)
    local, trans, missed = [], [], []
    restarts = True   # off while the frames keep missing what the first of them tried every start for
    live.suspended.append(True)
    try:
        for n, frame in enumerate(frame_numbers):
            scene.frame_set(frame)
            objs = effectors_of(arm)
            if not objs:
                raise SmplIkError(f"{arm.name}: no enabled effectors at frame {frame}")
            try:
                if follower is None:
                    request = SolveRequest(current_pose=(local[-1], trans[-1]) if local else None,
                                           refine=use_refine, restarts=restarts)
                    solution = solve_effectors(arm, objs, request)
                    restarts = all(m.soft for m in solution.misses)
                else:
                    follower.options = refine_options(arm)   # the floor follows the body, as per frame
                    solution = follower.step(core_effectors(arm, objs))
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

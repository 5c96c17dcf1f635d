"""Following a path with one latent: a frame range solved as one motion (LOInK's smooth
trajectory tracking, on SMPL-IK's flow).

Every frame decodes the same latent under that frame's effectors, so what the effectors leave
free keeps one character along the whole range instead of being re-guessed per frame. The
smoothness weight mu (LOInK's) asks every joint without an effector to stay near
(1 - mu) x its place in this frame's decoded pose + mu x its place on the frame before, as
soft targets of the refinement below the effectors: the effectors stay exact; 0 takes each
decoded pose as it is, values near 1 carry the previous frame forward as far as the
effectors let.
"""
from dataclasses import replace

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.skeleton import NUM_JOINTS, PARENTS
from .effectors import Effector, EffectorKind, encode_effectors, joint_of
from .flow import DIMS
from .refine import RefineOptions

STEADY_WEIGHT = 0.5   # the steadying targets' weight beside a soft effector's (1 by default)


class PathFollower:
    """Solve frames one at a time along a path: `step(effectors)` -> IkSolution.

    net: a SmplIk with its flow; rest_joints (24, 3); smoothness mu in [0, 1); latent (72,):
    the latent held for the whole path (default: the origin, the natural pose); options:
    refine.RefineOptions for every frame (feet are planted from the frame before)."""

    def __init__(self, net, rest_joints, smoothness=0.0, latent=None, options=None):
        mu = float(smoothness)
        if not (np.isfinite(mu) and 0.0 <= mu < 1.0):
            raise SmplIkError("the path smoothness must be a number from 0 up to (not including) 1, "
                              f"not {smoothness!r}")
        latent = np.zeros(DIMS) if latent is None else np.asarray(latent, dtype=np.float64)
        if latent.shape != (DIMS,) or not np.all(np.isfinite(latent)):
            raise SmplIkError(f"the path's latent must be {DIMS} finite numbers; got shape {latent.shape}")
        if net.flow is None:
            raise SmplIkError("following a path needs the generative weights (models/ik/weights/smplik_flow.npz)")
        self.net, self.rest, self.mu, self.latent = net, np.asarray(rest_joints, dtype=np.float64), mu, latent
        self.options = RefineOptions() if options is None else options
        self.previous = None

    def step(self, effectors):
        effectors = list(effectors)
        rest = self.rest[None]
        condition = self.net.condition(encode_effectors(effectors), rest)
        local, trans = (x[0, 0] for x in self.net.decode(condition, self.latent[None, None]))
        current = None if self.previous is None else (self.previous.local_rot, self.previous.trans)
        steady = []
        if self.previous is not None and self.mu > 0:
            # every joint without an effector is drawn, softly, toward its blend of this frame's
            # decoded place and the last frame's: the pins stay exact, the rest moves less
            decoded = forward_kinematics(local, self.rest, PARENTS, trans).positions
            pinned = {joint_of(e, n) for n, e in enumerate(effectors)}
            goal = (1 - self.mu) * decoded + self.mu * self.previous.positions
            steady = [Effector(j, EffectorKind.POSITION, tuple(goal[j]), weight=STEADY_WEIGHT, soft=True,
                               tolerance=np.inf)
                      for j in range(NUM_JOINTS) if j not in pinned]
        refined = self.net.refine_from(effectors + steady, (local, trans), self.rest, self.options, current)
        # the steady targets have no tolerance to miss: the misses are the effectors' (and the feet's)
        self.previous = replace(refined, errors=refined.errors[:len(effectors)], latent=self.latent)
        return self.previous

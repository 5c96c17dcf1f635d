"""Following a path with one latent: a frame range solved as one motion (LOInK's smooth
trajectory tracking, on SMPL-IK's flow).

Every frame decodes the same latent under that frame's effectors, so what the effectors leave
free keeps one character along the whole range instead of being re-guessed per frame. The
smoothness weight mu blends each frame's decoded pose toward the frame before (per joint, along
the rotation between them) before the refinement makes the effectors exact: 0 takes each
decoded pose as it is, values near 1 carry the previous frame forward and let only the
refinement move it.
"""
import numpy as np

from ..core.errors import SmplIkError
from ..core.rotations import axis_angle_to_matrix, matrix_to_axis_angle
from .effectors import encode_effectors
from .flow import DIMS
from .smplik import IkSolution


class PathFollower:
    """Solve frames one at a time along a path: `step(effectors)` -> IkSolution.

    net: a SmplIk with its flow; rest_joints (24, 3); smoothness mu in [0, 1); latent (72,):
    the latent held for the whole path (default: the origin, the natural pose); options:
    refine.RefineOptions for every frame (feet are planted from the frame before)."""

    def __init__(self, net, rest_joints, smoothness=0.0, latent=None, options=None):
        from .refine import RefineOptions

        mu = float(smoothness)
        if not (np.isfinite(mu) and 0.0 <= mu < 1.0):
            raise SmplIkError(f"the path smoothness must be a number from 0 up to (not including) 1, not {smoothness!r}")
        latent = np.zeros(DIMS) if latent is None else np.asarray(latent, dtype=np.float64)
        if latent.shape != (DIMS,) or not np.all(np.isfinite(latent)):
            raise SmplIkError(f"the path's latent must be {DIMS} finite numbers; got shape {latent.shape}")
        if net.flow is None:
            raise SmplIkError("following a path needs the generative weights (models/ik/weights/smplik_flow.npz)")
        self.net, self.rest, self.mu, self.latent = net, np.asarray(rest_joints, dtype=np.float64), mu, latent
        self.options = RefineOptions() if options is None else options
        self.previous = None

    def step(self, effectors):
        rest = self.rest[None]
        condition = self.net._condition(encode_effectors(effectors), rest)
        local, trans = (x[0, 0] for x in self.net._decode(condition, self.latent[None, None]))
        if self.previous is not None and self.mu > 0:
            before = self.previous
            local = local @ axis_angle_to_matrix(self.mu * matrix_to_axis_angle(np.swapaxes(local, -1, -2) @ before.local_rot))
            trans = (1 - self.mu) * trans + self.mu * before.trans
        current = None if self.previous is None else (self.previous.local_rot, self.previous.trans)
        refined, extra = self.net._refine(effectors, local, trans, self.rest, self.options, current, None)
        self.previous = IkSolution(local_rot=refined.local_rot, trans=refined.trans, rest=self.rest,
                                   errors=refined.errors[:len(refined.errors) - extra], misses=refined.misses,
                                   latent=self.latent)
        return self.previous

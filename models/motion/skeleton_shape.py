"""A skeleton as the structure search reads it (`structure.find_structure`): its tree, its
joints' positions in a few poses, its end sites, and the joints that belong to it."""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SkeletonShape:
    """A skeleton as the structure search reads it.

    parents (J,): parent index, -1 for a root; poses (F, J, 3): joint positions in F poses
    (any units and axes); end_site (J,): end sites (bone ends, never mapped); keep (J,):
    joints that belong to the skeleton at all (False: a rig's controls and mechanism bones)."""

    parents: tuple
    poses: np.ndarray
    end_site: tuple = ()
    keep: tuple = ()

    @staticmethod
    def of_motion(motion, frames=24):
        """A BVH Motion's skeleton in `frames` of its own frames, evenly spaced."""
        sk = motion.skeleton
        pick = np.unique(np.linspace(0, motion.num_frames - 1, min(frames, motion.num_frames)).round().astype(int))
        return SkeletonShape(parents=tuple(sk.parents), poses=motion.forward(pick).positions,
                             end_site=tuple(sk.end_site))

    @staticmethod
    def of_rig(parents, heads, deform=None):
        """A rig at rest: heads (J, 3); deform (J,) its deforming bones, which are the skeleton
        when there are enough of them to be one (a generated rig's controls are left out)."""
        keep = ()
        if deform is not None and sum(bool(d) for d in deform) >= 10:
            keep = tuple(bool(d) for d in deform)
        return SkeletonShape(parents=tuple(parents), poses=np.asarray(heads, float)[None], keep=keep)

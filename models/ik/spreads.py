"""Where SMPL-IK's poses start in the flow's latent space: the natural solve's start and the
latents of `sample`'s spreads (the hypotheses head's, the pose library's, both in turn, the
principal directions); mixed into SmplIk."""
import numpy as np

from ..core.kinematics import forward_kinematics
from ..core.rotations import nearest_rotation
from ..core.skeleton import NUM_JOINTS, PARENTS
from .effectors import joint_of
from .flow import DEFAULT_TEMPERATURE, DIMS

PRINCIPAL_STEP = 2.5   # a principal alternative's latent step per unit of temperature (0.6: 1.5 latent units)
PRINCIPAL_PROBE = 1e-2   # the latent step of the finite differences behind principal_latents
NATURAL_NEIGHBOURS = 8   # library poses whose mean a fresh natural solve starts halfway to (`natural_start`)
NATURAL_SHARE = 0.5      # the flow origin's share of that start, the library mean's the rest


class LatentSpreads:
    """SmplIk's latents for the natural start and for sample's spreads (needs its flow,
    hypotheses head and pose library, `decode`, `encode` and `decoded_pose`)."""

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
        poses for these pins, the head's for the rest (docs/training_log.md, "Mixed spread")."""
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
        pins; the network's pose gives the heading where they do not) (docs/training_log.md,
        "Natural start")."""
        local, trans = self.decoded_pose(condition, np.zeros(DIMS))
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

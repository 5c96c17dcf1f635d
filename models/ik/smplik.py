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

This module loads the weights and runs the network (`slots.py` encodes its input); the solve
strategy is `solving.py`, alternatives `sampling.py` and their latents `spreads.py`;
`refine.py` then makes the effectors exact with damped least-squares steps on forward
kinematics.
"""
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import world_to_local
from ..core.rotations import axis_angle_to_matrix, matrix_to_axis_angle, rot6d_to_matrix
from ..core.skeleton import NUM_JOINTS
from .effectors import encode_positions
from .flow import DEFAULT_FLOW_WEIGHTS, PoseFlow, file_sha256
from .hypotheses import DEFAULT_HYPOTHESES_WEIGHTS, Hypotheses
from .library import DEFAULT_LIBRARY, PoseLibrary
from .nn import WEIGHTS_DIR, block_norm_pairs, fold_norms, linear, load_weights, residual_trunk, trunk_shapes
from .sampling import Sampling
from .slots import IDENTITY_6D, Slot, mirror_input, mirror_output, network_input
from .solution import Condition
from .solving import Solving
from .spreads import LatentSpreads

ARCH = "smplik-v2"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "smplik.npz"


def expected_shapes(cfg):
    w, h = cfg["width"], cfg["hidden"]
    shapes = trunk_shapes(w, h, cfg["blocks"], NUM_JOINTS * Slot.INPUT)
    shapes.update({"out_norm.weight": (w,), "out_norm.bias": (w,),
                   "out.weight": (NUM_JOINTS * 6 + 3, w), "out.bias": (NUM_JOINTS * 6 + 3,)})
    return shapes


class SmplIk(Solving, Sampling, LatentSpreads):
    """The numpy SMPL-IK network. `SmplIk.load(path)` checks the file's architecture.

    symmetric (default): every problem is solved as given and mirrored left-right, and the
    two answers are averaged, so mirrored effectors give exactly the mirrored pose at twice
    the network's cost (docs/training_log.md, "Symmetric solve")."""

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
                    raise SmplIkError(f"{extra_path}: this {what} was trained over other deterministic weights "
                                      f"than {path}")
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
        rot6 = out[:, :NUM_JOINTS * 6].reshape(-1, NUM_JOINTS, 6) + IDENTITY_6D
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

    def network_pose(self, encoded, rest):
        """The network's pose (local_rot, trans) for one EncodedEffectors set on rest (1, 24, 3)."""
        return tuple(x[0] for x in self.predict(encoded, rest))

    def decoded_pose(self, condition, latent):
        """The pose (local_rot, trans) a latent (72,) decodes to under a Condition of one set."""
        return tuple(x[0, 0] for x in self.decode(condition, latent[None, None]))

    def solve_positions(self, joints, targets, rest_joints):
        """Many poses at once from the same joints pinned by position (no refinement), for
        batch scripts: joints, E names or indices; targets (B, E, 3); rest joints (24, 3) or
        (B, 24, 3) -> local rotations (B, 24, 3, 3), trans (B, 3)."""
        encoded = encode_positions(joints, targets)
        rest = np.broadcast_to(np.asarray(rest_joints, dtype=np.float64), (len(encoded.joints), NUM_JOINTS, 3))
        return self.predict(encoded, rest)


@lru_cache(maxsize=2)
def load_smplik(path=str(DEFAULT_WEIGHTS)):
    return SmplIk.load(path)

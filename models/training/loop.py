"""Training utilities shared by the learned-IK trainers (torch): data, augmentation, bodies,
batches and the trainers' common command-line options.

Training data is the file `scripts/build_dataset.py` (models.motion.batch.build_dataset)
writes from retargeted motion capture; `ensure_data` builds the default one on first use.
Every batch draws poses (each source folder an equal share: locomotion and sport, and the
varied motion), puts them on a random body (one of the three open bodies, its betas ~ N(0, 1)
scaled by 0.5-1.75, each bone's length varied by a few percent as other skeletons differ),
mirrors half of them left-right and turns them to a random heading.
"""
import argparse
import hashlib
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..body.model import GENDERS, NUM_BETAS, OPEN_PREFIX, load_body_model, open_body_path
from ..core.errors import SmplIkError
from ..core.files import write_json
from ..core.kinematics import depth_levels
from ..core.npz import read_npz
from .rotations import axis_angle_to_matrix, kabsch, shortest_arc, unit
from ..core.skeleton import CHILDREN, JOINT_INDEX, JOINT_NAMES, MIRROR, NUM_JOINTS, PARENTS, SINGLE
from ..motion.batch import build_dataset, save_npz_atomically
from .clips import VALIDATION_CLIPS, VALIDATION_LOCOMOTION, VALIDATION_VARIED  # noqa: F401 (the trainers' names)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT / "out" / "training_smpl.npz"   # the trainers' --data default
_MOCAP = ROOT.parent / "shared" / "data" / "mocap"
# What it is built from: folder, frames dropped at each clip's start (CMU's own files begin with
# a reference pose; the varied set's converted files do not).
MOCAP_SOURCES = ((_MOCAP / "cmu_train", 1), (_MOCAP / "cmu_varied", 0))


@dataclass
class PoseData:
    poses: torch.Tensor      # (N, 24, 3) axis-angle
    clip: np.ndarray         # (N,)
    clips: list
    sha256: str
    weight: torch.Tensor = None   # (N,) chance of each frame being drawn; None: all alike
    rest: torch.Tensor = None     # (C, 24, 3) the rest joints each clip was retargeted onto; None: unknown


def ensure_data(path):
    """`path`, after building it from MOCAP_SOURCES (60 fps, two processes; merge_datasets)
    when it is DEFAULT_DATA and missing; SystemExit when a source is not here."""
    if Path(path).exists() or Path(path) != DEFAULT_DATA:
        return path
    parts = []
    for folder, skip in MOCAP_SOURCES:
        if not folder.is_dir():
            raise SystemExit(f"no training data: {path} is missing and {folder} is not here")
        data = build_dataset(folder, fps=60, skip_first=skip, workers=2)
        for line in data.messages():
            print(line, flush=True)
        if not data.arrays:
            raise SystemExit(f"no training data: no clip of {folder} could be retargeted")
        parts.append((folder.name, data.arrays))
    save_npz_atomically(path, **merge_datasets(parts))
    print(f"{path}: " + ", ".join(f"{len(a['poses'])} frames of {len(a['clips'])} clips from {name}"
                                  for name, a in parts), flush=True)
    return path


def merge_datasets(parts):
    """One training set from several build_dataset sets [(name, arrays)]: clips become
    'name/clip', clip indices are offset, and `source` (C,) names each clip's set."""
    out, offset = {}, 0
    for name, arrays in parts:
        shifted = dict(arrays, clip=arrays["clip"] + offset, clips=np.array([f"{name}/{c}" for c in arrays["clips"]]),
                       source=np.array([name] * len(arrays["clips"])))
        offset += len(arrays["clips"])
        for key, value in shifted.items():
            if key != "body_model":
                out.setdefault(key, []).append(value)
    merged = {k: np.concatenate(v) for k, v in out.items()}
    merged["body_model"] = parts[0][1]["body_model"]
    return merged


def load_pose_data(path, validation=VALIDATION_CLIPS):
    """(train, validation) PoseData from a build_dataset file, split by whole clips. A merged
    file (merge_datasets) draws each source an equal share of the training frames."""
    path = Path(path)
    if not path.is_file():
        raise SmplIkError(f"{path}: training data not found (make it with scripts/build_dataset.py)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    d = read_npz(path, ("poses", "clip", "clips", "source", "body_model", "betas"), "training data file")
    missing = [k for k in ("poses", "clip", "clips") if k not in d]
    if missing:
        raise SmplIkError(f"{path}: not a training data file (no {', '.join(missing)}; make it with "
                          "scripts/build_dataset.py)")
    poses = d["poses"].reshape(-1, NUM_JOINTS, 3).astype(np.float32)
    clip = d["clip"]
    clips = [str(c) for c in d["clips"]]
    source = d.get("source")
    rest = _clip_rest(d)
    names = [Path(c).name for c in clips]
    held = np.array([n in validation for n in names])
    is_val = held[clip]
    if not is_val.any():  # data without the named clips (e.g. a test set): hold out every 8th clip
        held = np.arange(len(clips)) % 8 == 7
        is_val = held[clip]

    def make(m):
        weight = None
        if source is not None:   # each source the same share, split among its frames
            kinds, which, counts = np.unique(source[clip[m]], return_inverse=True, return_counts=True)
            weight = torch.from_numpy(1.0 / (counts[which] * len(kinds)))
        return PoseData(torch.from_numpy(poses[m]), clip[m], clips, digest, weight, rest)
    return make(~is_val), make(is_val)


def _clip_rest(d):
    """(C, 24, 3) float32 rest joints of the body each clip of a build_dataset file was fitted
    on (its `betas` on its `body_model`), or None when the file does not say (a user's body)."""
    name = str(d["body_model"]) if "body_model" in d else ""
    gender = name[len(OPEN_PREFIX):] if name.startswith(OPEN_PREFIX) else None
    if "betas" not in d or gender not in GENDERS:
        return None
    body = load_body_model(open_body_path(gender))
    return torch.from_numpy(body.rest_joints(d["betas"].astype(np.float64)).astype(np.float32))


class TorchBody:
    """Rest joints of the open bodies (all three genders by default) as linear functions of
    betas, in torch."""

    def __init__(self, paths=None):
        paths = [open_body_path(g) for g in GENDERS] if paths is None else [paths] if isinstance(paths, (str, Path)) else paths
        j0, jd = [], []
        for path in paths:
            body = load_body_model(path)
            zero = body.rest_joints(np.zeros(NUM_BETAS))
            j0.append(zero)
            jd.append(np.stack([body.rest_joints(np.eye(NUM_BETAS)[k]) - zero for k in range(NUM_BETAS)], -1))
        self.j0 = torch.tensor(np.stack(j0), dtype=torch.float32)     # (K, 24, 3)
        self.jd = torch.tensor(np.stack(jd), dtype=torch.float32)     # (K, 24, 3, 10)

    def __len__(self):
        return len(self.j0)

    def rest_joints(self, betas, which=None):
        """(N, 24, 3) rest joints for betas (N, 10) on body `which` (N,) (default the first)."""
        which = torch.zeros(len(betas), dtype=torch.long) if which is None else which
        return self.j0[which] + torch.einsum("njcb,nb->njc", self.jd[which], betas)


def vary_bones(rest, scale):
    """Rest joints (N, 24, 3) with each bone (joint minus parent) times scale (N, 24)."""
    out = rest.clone()
    for j in range(1, NUM_JOINTS):   # SMPL lists every parent before its children
        p = PARENTS[j]
        out[:, j] = out[:, p] + scale[:, j, None] * (rest[:, j] - rest[:, p])
    return out


def body_alignment(rest_from, rest_to):
    """(N, 24, 3, 3) per joint, the rest-frame rotation taking its bones on rest_to onto the
    same bones on rest_from (both (N, 24, 3)): Kabsch over the children where a joint has
    several (the pelvis, the upper spine), the shortest arc for one, none for a leaf (the
    retargeting aims a leaf along the source's own head, foot or hand)."""
    eye = torch.eye(3, dtype=rest_to.dtype).expand(len(rest_to), 3, 3)
    out = []
    for j in range(NUM_JOINTS):
        kids = list(CHILDREN[j])
        if not kids:
            out.append(eye)
            continue
        to, frm = rest_to[:, kids] - rest_to[:, j:j + 1], rest_from[:, kids] - rest_from[:, j:j + 1]
        out.append(kabsch(to, frm) if len(kids) > 1 else shortest_arc(to[:, 0], frm[:, 0]))
    return torch.stack(out, 1)


def transfer_pose(local_rot, rest_from, rest_to):
    """Local rotations (N, 24, 3, 3) of a pose on rest_from, carried onto rest_to as
    retargeting would have put the same capture there: every joint keeps its bones' world
    directions and its world frame turns only as much as that needs (L'_j = T_p^T L_j T_j,
    T from `body_alignment`). Without it, a body whose rest spine bends otherwise (the open
    male body's) would wear the neutral body's rotations and bend with them."""
    t = body_alignment(rest_from, rest_to)
    t_parent = torch.cat([torch.eye(3, dtype=t.dtype).expand(len(t), 1, 3, 3), t[:, list(PARENTS[1:])]], 1)
    return t_parent.transpose(-1, -2) @ local_rot @ t


def fk(local_rot, rest, trans=None):
    """Torch forward kinematics: (B, 24, 3, 3), (B, 24, 3) -> world rotations, positions.
    All joints of one depth at once (8 levels instead of 23 joints)."""
    rots, pos = [local_rot[:, :1]], [rest[:, :1]]
    order = [0]
    for joints, parents in depth_levels(tuple(PARENTS)):
        where = [order.index(p) for p in parents]
        prot = torch.cat(rots, 1)[:, where]
        rots.append(prot @ local_rot[:, joints])
        offset = (rest[:, joints] - rest[:, parents])[..., None]
        pos.append(torch.cat(pos, 1)[:, where] + (prot @ offset)[..., 0])
        order += list(joints)
    inverse = [order.index(j) for j in range(NUM_JOINTS)]
    rots, pos = torch.cat(rots, 1)[:, inverse], torch.cat(pos, 1)[:, inverse]
    if trans is not None:
        pos = pos + trans[:, None]
    return rots, pos


# Limbs and trunk, for part swaps: each group's local rotations can come from another frame.
PARTS = ((1, 4, 7, 10), (2, 5, 8, 11), (3, 6, 9, 12, 15), (13, 16, 18, 20, 22), (14, 17, 19, 21, 23))


def bend_bones(rot, rest, chance, gen, joints=SINGLE, max_degrees=40.0):
    """Turn the bone of each of `joints` (one-child joints), with the given chance, by up to
    max_degrees while keeping its twist: the joint's local rotation R = swing(b -> R b)
    twist(b) about its rest bone b becomes swing(b -> S R b) twist(b), with S a random turn
    about an axis across the bone. Other rigs bend their necks and spines beyond the capture
    (m21's neck about 40 degrees further than CMU's) without twisting them; this shows the
    networks such bends."""
    kids = [CHILDREN[j][0] for j in joints]
    joints, size = list(joints), len(rot)
    b = unit(rest[:, kids] - rest[:, joints])        # rest frames are the world's: b is in the parent's frame too
    r = rot[:, joints]
    d = (r @ b[..., None])[..., 0]
    twist = shortest_arc(b, d).transpose(-1, -2) @ r
    axis = unit(torch.cross(d, torch.randn(d.shape, generator=gen), dim=-1))
    angle = torch.rand(size, len(joints), 1, generator=gen) * np.radians(max_degrees)
    bent = (axis_angle_to_matrix(axis * angle) @ d[..., None])[..., 0]
    take = ((torch.rand(size, len(joints), generator=gen) < chance)
            & ((b * d).sum(-1) > -0.9) & ((b * bent).sum(-1) > -0.9))   # shortest arcs far from a half turn
    rot = rot.clone()
    rot[:, joints] = torch.where(take[..., None, None], shortest_arc(b, bent) @ twist, r)
    return rot


@dataclass(frozen=True)
class Augmentation:
    """How training poses are varied beyond the capture (all off by default).

    swap: the chance that each limb or the trunk (PARTS) takes its local rotations from
    another random frame, so the networks meet new combinations of the recorded limbs.
    jitter: the chance that each joint below the pelvis is set to its rest rotation (as on a
    rig that does not carry it, such as hands that follow the forearm), and the same chance
    that it turns by a further random rotation of up to 45 degrees (poses the capture lacks).
    bend: the chance that the bone of each of bend_joints (indices of one-child joints) turns
    by up to bend_degrees with its twist kept (`bend_bones`). bone_spread: the standard deviation
of each bone's length factor (left and right alike; on in every batch, as bodies differ).
transfer: carry each pose from the body its clip was retargeted onto to the body drawn for it
(`transfer_pose`), so a body whose rest spine bends otherwise wears the pose as retargeting
onto it would have given it (needs the data's `rest`).
lean: the chance that the trunk leans forward or back at the hips by an angle drawn from
lean_degrees (+ forward), the legs keeping their world orientation (`lean_at_hips`): bending
over, reaching to the floor and leaning back, which the capture has few of."""

    swap: float = 0.0
    jitter: float = 0.0
    bend: float = 0.0
    bend_joints: tuple = SINGLE
    bend_degrees: float = 40.0
    bone_spread: float = 0.04
    transfer: bool = False
    lean: float = 0.0
    lean_degrees: tuple = (-20.0, 80.0)

    @classmethod
    def from_args(cls, args):
        """From a trainer's --swap, --jitter, --bend, --bend-joints, --bend-degrees and --lean."""
        return cls(swap=args.swap, jitter=args.jitter, bend=args.bend, bend_joints=tuple(args.bend_joints),
                   bend_degrees=args.bend_degrees, transfer=args.transfer, lean=args.lean)

    def record(self):
        """The settings for a training record (JSON; joints by name)."""
        return {"part_swap": self.swap, "jitter": self.jitter, "bend": self.bend, "bone_spread": self.bone_spread,
                "bend_joints": [JOINT_NAMES[j] for j in self.bend_joints], "bend_degrees": self.bend_degrees,
                "transfer": self.transfer, "lean": self.lean, "lean_degrees": list(self.lean_degrees)}


def sample_batch(data, body, size, gen, augment=Augmentation()):
    """Random poses on random bodies, mirrored half the time, at random headings, varied as
    `augment` says: local rotations (B, 24, 3, 3), rest joints (B, 24, 3)."""
    swap, jitter, bend = augment.swap, augment.jitter, augment.bend
    if data.weight is None:
        idx = torch.randint(len(data.poses), (size,), generator=gen)
    else:
        idx = torch.multinomial(data.weight, size, replacement=True, generator=gen)
    aa = data.poses[idx].clone()
    if swap > 0:
        for part in PARTS:
            other = data.poses[torch.randint(len(data.poses), (size,), generator=gen)][:, list(part)]
            take = torch.rand(size, generator=gen) < swap
            aa[:, list(part)] = torch.where(take[:, None, None], other, aa[:, list(part)])
    flip = torch.rand(size, generator=gen) < 0.5
    mirrored = aa[:, list(MIRROR)] * torch.tensor([1.0, -1.0, -1.0])
    aa = torch.where(flip[:, None, None], mirrored, aa)
    rot = axis_angle_to_matrix(aa)
    heading = torch.rand(size, generator=gen) * 2 * np.pi
    yaw = axis_angle_to_matrix(torch.stack([torch.zeros(size), heading, torch.zeros(size)], -1))
    rot = torch.cat([(yaw @ rot[:, 0])[:, None], rot[:, 1:]], 1)
    betas = torch.randn(size, NUM_BETAS, generator=gen)
    if jitter > 0:  # drawn last, so the poses, headings and shapes match a run without it
        u = torch.rand(size, NUM_JOINTS, generator=gen)
        u[:, 0] = 1.0
        axis = torch.nn.functional.normalize(torch.randn(size, NUM_JOINTS, 3, generator=gen), dim=-1)
        turn = axis_angle_to_matrix(axis * torch.rand(size, NUM_JOINTS, 1, generator=gen) * np.radians(45.0))
    # the body, its shape's spread and its bones' lengths: drawn after the rest, so that the
    # poses match a run on one body
    which = torch.randint(len(body), (size,), generator=gen)
    spread = 0.5 + 1.25 * torch.rand(size, 1, generator=gen)
    bones = (1.0 + augment.bone_spread * torch.randn(size, NUM_JOINTS, generator=gen)).clamp(0.85, 1.15)
    bones = 0.5 * (bones + bones[:, list(MIRROR)])   # left and right alike
    rest = vary_bones(body.rest_joints(betas * spread, which), bones)
    if augment.transfer and data.rest is not None:   # before jitter: a rig's missing joint is missing on this body
        source = data.rest[torch.as_tensor(data.clip)[idx]]
        source = torch.where(flip[:, None, None], source[:, list(MIRROR)] * torch.tensor([-1.0, 1.0, 1.0]), source)
        rot = transfer_pose(rot, source, rest)
    if jitter > 0:
        rot = torch.where((u < jitter)[..., None, None], torch.eye(3),
                          torch.where((u < 2 * jitter)[..., None, None], turn @ rot, rot))
    if bend > 0:
        rot = bend_bones(rot, rest, bend, gen, augment.bend_joints, augment.bend_degrees)
    if augment.lean > 0:
        lo, hi = augment.lean_degrees
        angle = torch.deg2rad(lo + (hi - lo) * torch.rand(size, generator=gen))
        angle = torch.where(torch.rand(size, generator=gen) < augment.lean, angle, torch.zeros(()))
        rot = lean_at_hips(rot, angle)
    return rot, rest


HIPS = (JOINT_INDEX["left_hip"], JOINT_INDEX["right_hip"])


def lean_at_hips(rot, angle):
    """Local rotations (B, 24, 3, 3) with the trunk leaned by `angle` (B,) radians about the
    pelvis's left-right axis (+ forward) and the thighs turned back by as much, so the legs keep
    their world orientation and only the trunk, arms and head lean."""
    turn = axis_angle_to_matrix(torch.stack([angle, torch.zeros_like(angle), torch.zeros_like(angle)], -1))
    out = rot.clone()
    out[:, 0] = rot[:, 0] @ turn
    out[:, list(HIPS)] = turn.transpose(-1, -2)[:, None] @ rot[:, list(HIPS)]
    return out


def placed_batch(data, body, size, gen, augment=Augmentation()):
    """sample_batch's poses placed in the world: local rotations (B, 24, 3, 3), rest joints
    (B, 24, 3), root translations (B, 3) (metres: x and z in -1..1, y in -0.2..0.2), and the
    posed world rotations (B, 24, 3, 3) and joint positions (B, 24, 3)."""
    rot, rest = sample_batch(data, body, size, gen, augment)
    trans = torch.stack([2 * torch.rand(size, generator=gen) - 1, 0.4 * torch.rand(size, generator=gen) - 0.2,
                         2 * torch.rand(size, generator=gen) - 1], -1)
    world, pos = fk(rot, rest, trans)
    return rot, rest, trans, world, pos


def geodesic(a, b):
    """Mean geodesic angle (radians) between rotation batches."""
    cos = ((a.transpose(-1, -2) @ b).diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2
    return torch.acos(cos.clamp(-1 + 1e-6, 1 - 1e-6))


def training_record(config, preset, data, seconds, steps, metrics, extra=None):
    """The JSON written beside a weights file."""
    return {"config": config, "preset": preset, "data_sha256": data.sha256,
            "train_clips": sorted({data.clips[c] for c in np.unique(data.clip)}),
            "validation_clips": list(VALIDATION_CLIPS), "training_seconds": round(seconds, 1),
            "steps": steps, "validation": metrics, "torch": torch.__version__,
            "machine": f"{platform.machine()}, {torch.get_num_threads()} thread(s)",
            "date": time.strftime("%Y-%m-%d"), **(extra or {})}


def training_arguments(parser, presets, default_out, default_data=DEFAULT_DATA, jitter=0.0, bend=0.0, lean=0.0):
    """The command-line options every trainer shares (Augmentation.from_args reads --swap,
    --jitter, the --bend ones and --lean); jitter, bend, lean: the trainer's defaults for them."""
    parser.add_argument("--preset", choices=presets, default="full")
    parser.add_argument("--data", type=Path, default=default_data,
                        help="training poses from scripts/build_dataset.py")
    parser.add_argument("--out", type=Path, default=default_out, help="weights file to write")
    parser.add_argument("--minutes", type=float, help="training time budget (overrides the preset)")
    parser.add_argument("--lr", type=float, help="peak learning rate (overrides the preset)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", type=Path, help="continue from these weights (same architecture)")
    parser.add_argument("--swap", type=float, default=0.2,
                        help="chance that a limb or the trunk takes its rotations from another frame (default 0.2)")
    parser.add_argument("--jitter", type=float, default=jitter,
                        help="chance that a joint is set to its rest rotation, and again that it turns by up to "
                             f"45 degrees more (default {jitter:g}{': off' if not jitter else ''})")
    parser.add_argument("--bend", type=float, default=bend,
                        help="chance that a joint's bone turns further, its twist kept "
                             f"(default {bend:g}{': off' if not bend else ''})")
    parser.add_argument("--bend-joints", type=bend_joint_list, default=SINGLE, metavar="NAMES",
                        help="comma-separated joints that --bend turns (one child each; default all such joints)")
    parser.add_argument("--bend-degrees", type=float, default=40.0, help="largest --bend turn (default 40)")
    parser.add_argument("--lean", type=float, default=lean,
                        help="chance that the trunk leans at the hips, -20 to 80 degrees forward, the legs kept "
                             f"(default {lean:g}{': off' if not lean else ''})")
    parser.add_argument("--transfer", action=argparse.BooleanOptionalAction, default=True,
                        help="carry each pose onto the body drawn for it as retargeting onto that body would "
                             "(default on; --no-transfer wears the retargeted body's rotations unchanged)")
    return parser


def bend_joint_list(text):
    """'neck,spine1' -> joint indices, each a joint with exactly one child (argparse type)."""
    out = []
    for name in filter(None, (n.strip() for n in text.split(","))):
        if name not in JOINT_INDEX:
            raise argparse.ArgumentTypeError(f"{name!r} is not an SMPL joint name")
        if JOINT_INDEX[name] not in SINGLE:
            raise argparse.ArgumentTypeError(f"{name} does not have exactly one child joint, so it has no bone to bend")
        out.append(JOINT_INDEX[name])
    if not out:
        raise argparse.ArgumentTypeError("name at least one joint")
    return tuple(out)


def initialise(model, path, rebase=False):
    """Load numpy weights written by `finish` into a torch twin (checks names and shapes).
    rebase: a head's weights trained over another deterministic network may continue over
    this one (its `base_sha256` is not compared; the model keeps its own)."""
    arrays = read_npz(path, None, "weights file")
    config = json.loads(str(arrays.pop("__config__")))
    if rebase and "base_sha256" in model.config:
        config["base_sha256"] = model.config["base_sha256"]
    if config != model.config:
        raise SmplIkError(f"{path}: weights are for {config}, not {model.config}")
    model.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})
    return json.loads(Path(path).with_suffix(".json").read_text()) if Path(path).with_suffix(".json").exists() else {}


def run_config(args, presets):
    """The preset's settings with --minutes and --lr applied; sets torch's thread count."""
    torch.set_num_threads(args.threads)
    overrides = {k: getattr(args, k) for k in ("minutes", "lr") if getattr(args, k)}
    return dict(presets[args.preset], **overrides)


def train(model, batch_loss, cfg, seed, rows=None):
    """AdamW with a cosine learning rate over a time budget (cfg: minutes, lr, max_steps).

    batch_loss(generator) -> scalar loss of one fresh batch. Returns (steps, seconds, losses).
    rows: {parameter name: indices along its first axis} to train only those rows (`only_rows`);
    every other parameter and row keeps its value exactly.
    """
    torch.manual_seed(seed)
    params, restore = model.parameters(), lambda: None
    if rows is not None:
        params, restore = only_rows(model, rows)
    opt = torch.optim.AdamW(params, lr=cfg["lr"], weight_decay=1e-4)
    gen = torch.Generator().manual_seed(seed)
    budget = cfg["minutes"] * 60
    start, step, losses = time.time(), 0, []
    while step < cfg["max_steps"] and time.time() - start < budget:
        frac = min((time.time() - start) / budget, 1.0)
        for g in opt.param_groups:
            g["lr"] = cfg["lr"] * 0.5 * (1 + np.cos(np.pi * frac))
        loss = batch_loss(gen)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        restore()
        losses.append(loss.item())
        step += 1
        if step % 200 == 0 or step == 1:
            print(f"step {step} loss {np.mean(losses[-200:]):.4f} ({time.time() - start:.0f} s)", flush=True)
    return step, time.time() - start, losses


def only_rows(model, rows):
    """Freeze `model` but for the given rows ({parameter name: indices along its first axis}):
    returns (the parameters to optimise, a function that puts every other row back as it was,
    to call after each step, since AdamW's weight decay moves rows whose gradient is zero)."""
    named = dict(model.named_parameters())
    unknown = sorted(set(rows) - set(named))
    if unknown:
        raise ValueError(f"no parameter {', '.join(unknown)} to train")
    kept = {}
    for name, p in named.items():
        p.requires_grad_(name in rows)
        if name in rows:
            frozen = torch.ones(len(p), dtype=torch.bool)
            frozen[torch.as_tensor(rows[name], dtype=torch.long)] = False
            kept[name] = (p, frozen, p.detach()[frozen].clone())

    def restore():
        with torch.no_grad():
            for p, frozen, values in kept.values():
                p[frozen] = values
    return [p for p, _, _ in kept.values()], restore


def joint_rows(names, width, count=1, stride=None):
    """Indices of the output rows of the joints `names` in an output of `count` blocks of
    `stride` (default 24 x width) rows, each joint `width` rows (6 for a 6D rotation, 3 for
    an axis-angle)."""
    stride = NUM_JOINTS * width if stride is None else stride
    return [k * stride + JOINT_INDEX[n] * width + c for k in range(count) for n in names for c in range(width)]


def joint_name_list(text):
    """'left_foot,right_foot' -> the joint names (argparse type)."""
    out = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in out if n not in JOINT_INDEX]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"{bad[0]!r} is not an SMPL joint name" if bad else "name at least one joint")
    return tuple(out)


def earlier_record(before):
    """The record of the weights a run continued from, as its own record keeps it: without
    what the new record states again (config, data, clips, torch)."""
    return {k: v for k, v in before.items()
            if k not in ("config", "data_sha256", "train_clips", "validation_clips", "torch")}


def only_joints_argument(parser, what):
    """--only-joints NAMES (with --init): train only the output rows of those joints' `what`."""
    parser.add_argument("--only-joints", type=joint_name_list, metavar="NAMES",
                        help=f"with --init: train only the output rows of these joints' {what} (comma-separated), "
                             "every other weight kept exactly, so heads over the network still read the same "
                             "features; to mend joints whose training rotations were wrong")


def only_joint_rows(parser, args, width, count=1, stride=None):
    """train()'s rows for --only-joints (None without it; refused without --init)."""
    if not args.only_joints:
        return None
    if not args.init:
        parser.error("--only-joints needs --init (the weights whose other rows it keeps)")
    return dict.fromkeys(("out.weight", "out.bias"), joint_rows(args.only_joints, width, count, stride))


def finish(model, args, cfg, data, steps, seconds, losses, metrics, extra=None, before=None):
    """Save numpy weights and the JSON record (with the schedule, and the record of the
    weights this run continued from, if any); print a one-line summary."""
    from ..ik.nn import save_weights

    metrics = dict(metrics, first_loss=round(float(np.mean(losses[:10])), 4),
                   last_loss=round(float(np.mean(losses[-10:])), 4))
    extra = dict(extra or {}, schedule={k: cfg[k] for k in ("minutes", "lr", "batch")})
    if before is not None:  # a continued run: keep the whole history
        extra["continued_from"] = earlier_record(before)
    save_weights(args.out, model.numpy_params(), model.config)
    write_json(Path(args.out).with_suffix(".json"),
               training_record(model.config, args.preset, data, seconds, steps, metrics, extra))
    print(f"{args.out}: {steps} steps in {seconds:.0f} s; validation {metrics}")

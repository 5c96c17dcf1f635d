"""The learned-IK trainers' shared loop (torch): the command-line options every trainer
takes, the optimisation over a time budget (`train`), and the weights and JSON record a run
writes (`finish`). Progress goes to this module's logger.
"""
import argparse
import json
import logging
import platform
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from ..core.errors import SmplIkError
from ..core.files import write_json
from ..core.npz import read_npz
from ..core.skeleton import JOINT_INDEX, NUM_JOINTS, SINGLE
from ..ik.nn import save_weights
from .clips import VALIDATION_CLIPS
from .data import DEFAULT_DATA, PoseData

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingRun:
    """A finished run, as its record states it: the training `data` (PoseData), the `steps`
    taken, `seconds` spent, the loss of each step, the validation `metrics` and `extra`
    entries for the record (a dict, or None)."""

    data: PoseData
    steps: int
    seconds: float
    losses: list
    metrics: dict
    extra: dict = None


@dataclass(frozen=True)
class TrainerDefaults:
    """A trainer's own defaults for the shared options (`training_arguments`): the training
    data file, and the chances of the --jitter, --bend and --lean augmentations."""

    data: Path = DEFAULT_DATA
    jitter: float = 0.0
    bend: float = 0.0
    lean: float = 0.0


def training_record(config, preset, run):
    """The JSON written beside a weights file, for a TrainingRun."""
    data = run.data
    return {"config": config, "preset": preset, "data_sha256": data.sha256,
            "train_clips": sorted({data.clips[c] for c in np.unique(data.clip)}),
            "validation_clips": list(VALIDATION_CLIPS), "training_seconds": round(run.seconds, 1),
            "steps": run.steps, "validation": run.metrics, "torch": torch.__version__,
            "machine": f"{platform.machine()}, {torch.get_num_threads()} thread(s)",
            "date": time.strftime("%Y-%m-%d"), **(run.extra or {})}


def training_arguments(parser, presets, default_out, defaults=TrainerDefaults()):
    """The command-line options every trainer shares (Augmentation.from_args reads --swap,
    --jitter, the --bend ones and --lean); defaults: the trainer's TrainerDefaults."""
    default_data, jitter, bend, lean = defaults.data, defaults.jitter, defaults.bend, defaults.lean
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
            log.info("step %d loss %.4f (%.0f s)", step, np.mean(losses[-200:]), time.time() - start)
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


def finish(model, args, cfg, run, before=None):
    """Save numpy weights and the JSON record of a TrainingRun (with the schedule, and the
    record `before` of the weights this run continued from, if any); log a one-line summary."""
    metrics = dict(run.metrics, first_loss=round(float(np.mean(run.losses[:10])), 4),
                   last_loss=round(float(np.mean(run.losses[-10:])), 4))
    extra = dict(run.extra or {}, schedule={k: cfg[k] for k in ("minutes", "lr", "batch")})
    if before is not None:  # a continued run: keep the whole history
        extra["continued_from"] = earlier_record(before)
    save_weights(args.out, model.numpy_params(), model.config)
    write_json(Path(args.out).with_suffix(".json"),
               training_record(model.config, args.preset, replace(run, metrics=metrics, extra=extra)))
    log.info("%s: %d steps in %.0f s; validation %s", args.out, run.steps, run.seconds, metrics)

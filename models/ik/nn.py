"""Numpy building blocks of the learned-IK networks and their weight files.

Weights are `.npz` files read with allow_pickle=False: one array per parameter plus
`__config__`, the architecture's JSON. A JSON file beside each holds the training record.
The torch twins (`*_torch.py`) define the same parameter names, so a trained state dict
saves straight into this format.
"""
import json
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.files import atomic_write
from ..core.npz import read_npz

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"


def normalise(x, eps=1e-5):
    """LayerNorm without its scale and shift (`fold_norms` moves those into the next layer)."""
    centred = x - x.sum(-1, keepdims=True) * (1.0 / x.shape[-1])
    var = np.einsum("...i,...i->...", centred, centred)[..., None] * (1.0 / x.shape[-1])
    centred *= 1.0 / np.sqrt(var + eps)
    return centred


def fold_norms(params, pairs):
    """A copy of prepared parameters in which each LayerNorm's scale g and shift b are folded
    into the Linear that reads it: W (g x + b) + c = (W g) x + (W b + c), two fewer passes
    over the activations per norm. pairs: [(norm prefix, linear prefix), ...]."""
    params = dict(params)
    for norm, lin in pairs:
        g, b, wt = params[norm + ".weight"], params[norm + ".bias"], params[lin + ".weight_t"]
        params[lin + ".bias"] = params[lin + ".bias"] + b @ wt
        params[lin + ".weight_t"] = np.ascontiguousarray(wt * g[:, None])
    return params


def block_norm_pairs(blocks):
    """`fold_norms` pairs of a residual trunk's blocks (`residual_trunk`)."""
    return [(f"blocks.{i}.norm", f"blocks.{i}.fc1") for i in range(blocks)]


def linear(x, p, prefix):
    """x (..., in) @ W^T + b, as one 2-D BLAS call (numpy's stacked matmul is far slower), or
    for a few rows one matrix-vector product each: OpenBLAS packs the whole weight for a matrix
    product (0.25 ms for SMPL-IK's 504x512, whatever the rows), a matrix-vector product reads
    it once (0.03 ms)."""
    w = p[prefix + ".weight_t"]
    rows = x.reshape(-1, x.shape[-1])
    if len(rows) <= 4:
        out = np.empty((len(rows), w.shape[1]), np.result_type(rows, w))
        for i, row in enumerate(rows):
            np.matmul(row, w, out=out[i])
    else:
        out = rows @ w
    out = out.reshape(x.shape[:-1] + (w.shape[1],))
    out += p[prefix + ".bias"]   # in place: a large fresh array costs page faults
    return out


def residual_trunk(x, p, blocks):
    """SMPL-IK's trunk (`smplik.SmplIk.network`): x (B, in) -> the last hidden layer
    normalised (B, width), float32, on parameters whose block norms are folded (`fold_norms`)."""
    h = linear(x.astype(np.float32, copy=False), p, "inp")
    for i in range(blocks):
        hidden = linear(normalise(h), p, f"blocks.{i}.fc1")
        h += linear(np.maximum(hidden, 0.0, out=hidden), p, f"blocks.{i}.fc2")
    return normalise(h)


def trunk_shapes(width, hidden, blocks, inputs):
    """Parameter shapes of a residual trunk (`residual_trunk`)."""
    shapes = {"inp.weight": (width, inputs), "inp.bias": (width,)}
    for i in range(blocks):
        shapes.update({f"blocks.{i}.norm.weight": (width,), f"blocks.{i}.norm.bias": (width,),
                       f"blocks.{i}.fc1.weight": (hidden, width), f"blocks.{i}.fc1.bias": (hidden,),
                       f"blocks.{i}.fc2.weight": (width, hidden), f"blocks.{i}.fc2.bias": (width,)})
    return shapes


def save_weights(path, params, config, dtype=np.float32):
    """Write parameters {name: array} (as `dtype`) and the config dict to an .npz, atomically."""
    with atomic_write(path) as fh:
        np.savez(fh, __config__=np.array(json.dumps(config, sort_keys=True)),
                 **{k: np.asarray(v, dtype=dtype) for k, v in params.items()})


def load_weights(path, arch, expected_shapes):
    """Read a weights file, checking it is for `arch` (a name, or a tuple of the names this
    runtime reads) and has exactly the expected arrays.

    expected_shapes: callable(config) -> {name: shape}. Returns (params float64, config).
    """
    path = Path(path)
    archs = (arch,) if isinstance(arch, str) else tuple(arch)
    if not path.exists():
        raise SmplIkError(f"{path}: weights file not found")
    arrays = read_npz(path, None, "weights file")
    if "__config__" not in arrays:
        raise SmplIkError(f"{path}: not an SMPL-IK weights file (no __config__)")
    try:
        config = json.loads(str(arrays.pop("__config__")))
    except (ValueError, RecursionError):
        config = None
    if not isinstance(config, dict):
        raise SmplIkError(f"{path}: not an SMPL-IK weights file (its __config__ is not a JSON object)")
    if config.get("arch") not in archs:
        raise SmplIkError(f"{path}: weights are for architecture {config.get('arch')!r}, not "
                          + " or ".join(map(repr, archs)))
    arch = config["arch"]
    expected = expected_shapes(config)
    missing = sorted(set(expected) - set(arrays))
    extra = sorted(set(arrays) - set(expected))
    wrong = sorted(k for k in expected if k in arrays and tuple(arrays[k].shape) != tuple(expected[k]))
    if missing or extra or wrong:
        detail = "; ".join(filter(None, [
            f"missing {', '.join(missing[:5])}" if missing else "",
            f"unexpected {', '.join(extra[:5])}" if extra else "",
            (f"wrong shape {', '.join(f'{k} {arrays[k].shape} != {tuple(expected[k])}' for k in wrong[:3])}"
             if wrong else ""),
        ]))
        raise SmplIkError(f"{path}: weights do not fit the {arch} architecture ({detail})")
    return prepare(arrays), config


def prepare(arrays, dtype=np.float32):
    """Parameters (float32: inference is memory-bound) plus contiguous transposes of every
    Linear weight, for `linear`."""
    params = {k: np.ascontiguousarray(v, dtype=dtype) for k, v in arrays.items()}
    for k in [k for k in params if k.endswith(".weight") and params[k].ndim == 2]:
        params[k + "_t"] = np.ascontiguousarray(params[k].T)
    return params

"""Which shape coefficients (betas) a motion file's body carries over to the body it is put on.

Betas mean something only in the shape space they were fitted in: a file's betas carry onto a
user's SMPL-family body (cut or padded to its count), and onto an open body only when the file
says they are that open body's (this project's own files name it in `body_model`).
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CarriedBetas:
    """betas: (num_betas,) the shape to give the body, or None to leave its shape as it is;
    notes: what was dropped or clipped, in words."""

    betas: np.ndarray | None
    notes: tuple = ()


def carried_betas(betas, file_body_model, open_name, num_betas, limit):
    """The CarriedBetas of a file's `betas` (B,) (B may be 0: the file has none), whose shape
    space is `file_body_model` ('' or None: SMPL's), for a body that is the open body named
    `open_name` (None: a user's SMPL-family file) with `num_betas` shape coefficients, each kept
    within +-`limit`."""
    betas = np.asarray(betas, dtype=np.float64).ravel()
    if betas.size == 0:
        return CarriedBetas(None)
    if open_name is not None and file_body_model != open_name:
        notes = ()
        if np.any(betas):
            notes = (f"the file's betas are in the shape space of {file_body_model or 'SMPL'}, which the "
                     "open body does not share: they were not used",)
        return CarriedBetas(None, notes)
    notes = []
    out = np.zeros(num_betas)
    n = min(num_betas, betas.size)
    out[:n] = betas[:n]
    if betas.size > num_betas and np.any(betas[num_betas:]):
        notes.append(f"betas {num_betas}-{betas.size - 1} dropped (the body has {num_betas})")
    if np.any(np.abs(out) > limit):
        notes.append(f"betas clipped to -{limit:g}..{limit:g}")
        out = np.clip(out, -limit, limit)
    return CarriedBetas(out, tuple(notes))

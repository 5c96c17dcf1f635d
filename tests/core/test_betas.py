"""Which betas of a motion file carry over to the body it is imported onto."""
import numpy as np

from models.motion.betas import carried_betas


def test_betas_carry_onto_a_user_file_cut_padded_and_clipped():
    short = carried_betas(np.array([1.0, -2.0]), "", None, 10, 10.0)
    assert np.array_equal(short.betas, [1.0, -2.0] + [0.0] * 8) and short.notes == ()
    long = carried_betas(np.arange(16, dtype=float) - 4, "", None, 10, 3.0)
    assert long.betas.shape == (10,) and long.betas.max() == 3.0 and long.betas.min() == -3.0
    assert any("betas 10-15 dropped" in n for n in long.notes) and any("clipped to -3..3" in n for n in long.notes)


def test_betas_carry_onto_an_open_body_only_from_its_own_shape_space():
    own = carried_betas(np.full(10, 0.5), "open_smpl_female", "open_smpl_female", 10, 10.0)
    assert np.array_equal(own.betas, np.full(10, 0.5))
    other = carried_betas(np.full(10, 0.5), "", "open_smpl_female", 10, 10.0)
    assert other.betas is None and "shape space of SMPL" in other.notes[0]
    silent = carried_betas(np.zeros(10), "SMPL_FEMALE.npz", "open_smpl_female", 10, 10.0)
    assert silent.betas is None and silent.notes == ()   # zeros say nothing worth a note
    assert carried_betas(np.zeros(0), "", None, 10, 10.0).betas is None   # no betas: keep the shape

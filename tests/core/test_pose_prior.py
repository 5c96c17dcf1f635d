"""The pose prior (models/ik/pose_prior.py): its file, its two readings, and what it prefers."""
import numpy as np
import pytest

from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX, NUM_JOINTS
from models.ik.pose_prior import DEFAULT_POSE_PRIOR, DIM, load_pose_prior


def test_weights_load_without_pickle():
    with np.load(DEFAULT_POSE_PRIOR, allow_pickle=False) as npz:
        assert {"means", "precision_chol", "log_weights"} <= set(npz.files)
    prior = load_pose_prior()
    assert np.isclose(np.exp(prior.log_weights).sum(), 1.0, atol=1e-4)


def test_max_mixture_bounds_the_exact_likelihood():
    """0.5 |r|^2 is the best component's -log(w_k N_k) less its constant: the exact mixture
    NLL lies between it and it less log K."""
    prior = load_pose_prior()
    gen = np.random.default_rng(0)
    aa = np.zeros((20, NUM_JOINTS, 3))
    aa[:, 1:] = (prior.means[gen.integers(len(prior.means), size=20)].reshape(20, -1, 3)
                 + 0.1 * gen.normal(size=(20, NUM_JOINTS - 1, 3)))
    rot = axis_angle_to_matrix(aa)
    r = prior.residuals(rot)
    assert r.shape == (20, DIM + 1)
    approx = 0.5 * (r ** 2).sum(-1) + prior.component_cost.min() - prior._log_norm
    exact = prior.nll(rot)
    assert np.all(approx >= exact - 1e-6)
    assert np.all(approx <= exact + np.log(len(prior.means)) + 1e-6)


def test_prefers_a_knee_bent_forward_to_one_bent_backward():
    prior = load_pose_prior()
    aa = np.zeros((2, NUM_JOINTS, 3))
    knee = JOINT_INDEX["left_knee"]
    aa[0, knee, 0] = 1.0     # SMPL knees bend about +x
    aa[1, knee, 0] = -1.0    # hyperextended by as much
    nll = prior.nll(axis_angle_to_matrix(aa))
    assert nll[0] < nll[1] - 10.0


def test_rejects_wrong_shapes():
    from models.core.errors import SmplIkError
    from models.ik.pose_prior import PosePrior

    with pytest.raises(SmplIkError, match="pose prior"):
        PosePrior(np.zeros((2, 5)), np.zeros((2, 5, 5)), np.zeros(2))


def test_each_components_log_likelihood_is_its_weighted_gaussian_density():
    """component_log_likelihood against the textbook density, built here from the stored
    precision factors: log w_k - 0.5 log det(2 pi Sigma_k) - 0.5 d^T Sigma_k^-1 d; their
    log-sum-exp is minus the NLL."""
    prior = load_pose_prior()
    theta = prior.means[3] + 0.05 * np.random.default_rng(1).normal(size=(5, DIM))
    expected = np.empty((5, len(prior.means)))
    for k, (mean, chol) in enumerate(zip(prior.means, prior.precision_chol)):
        precision = chol @ chol.T
        d = theta - mean
        _, logdet = np.linalg.slogdet(2 * np.pi * np.linalg.inv(precision))
        expected[:, k] = prior.log_weights[k] - 0.5 * logdet - 0.5 * np.einsum("ni,ij,nj->n", d, precision, d)
    got = prior.component_log_likelihood(theta)
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-6)
    np.testing.assert_allclose(np.logaddexp.reduce(got, axis=1), -prior.nll_of_features(theta), rtol=1e-10)


def test_refitting_some_numbers_keeps_the_others_and_fits_the_new_ones(rng):
    """scripts/train_pose_prior.py --refit-joints: the mixture's marginal over the numbers it
    keeps is exactly the one it had; the refitted numbers follow data whose values moved (a
    shift and a dependence on the others), and every covariance stays positive definite."""
    pytest.importorskip("torch")   # the script reads its poses through the trainers' loop
    from models.training import pose_prior as tpp

    x = rng.normal(size=(3000, DIM)) * 0.2
    x[:1500, :10] += 0.8                                   # two clusters
    w = np.ones(len(x))
    means, cov, mix, _ = tpp.em(x, w, 2, 30, rng)
    prior = tpp.as_prior(means, cov, mix)
    dims = [3 * (JOINT_INDEX["left_foot"] - 1) + i for i in range(3)]
    keep = np.setdiff1d(np.arange(DIM), dims)
    moved = x.copy()
    moved[:, dims] = 1.0 + 0.5 * x[:, dims] + 0.3 * x[:, keep[:3]]
    new_means, new_cov = tpp.refit_dims(prior, moved, w, dims)
    assert np.allclose(new_means[:, keep], means[:, keep]) and np.allclose(new_cov[:, keep][:, :, keep],
                                                                         cov[:, keep][:, :, keep])
    assert np.all(np.linalg.eigvalsh(new_cov) > 0)
    refit = tpp.as_prior(new_means, new_cov, mix)
    for c in range(2):   # each component's refitted numbers sit where the moved data of its cluster does
        cluster = moved[:1500] if means[c, 0] > 0.4 else moved[1500:]
        assert np.allclose(new_means[c, dims], cluster[:, dims].mean(0), atol=0.05)
    assert tpp.mean_nll(refit, moved) < tpp.mean_nll(prior, moved) - 1.0
    # Given only some numbers (the joints next to them, as the script does by default), the refitted
    # numbers depend on those alone: within each component their precision with every other
    # number is zero, and the marginal over the kept numbers is still the one it had.
    given = keep[:3]
    only_means, only_cov = tpp.refit_dims(prior, moved, w, dims, given=given)
    assert np.allclose(only_cov[:, keep][:, :, keep], cov[:, keep][:, :, keep])
    precision = np.linalg.inv(only_cov)
    rest = np.setdiff1d(keep, given)
    assert np.abs(precision[:, dims][:, :, rest]).max() < 1e-6 * np.abs(precision[:, dims][:, :, dims]).max()
    assert np.abs(precision[:, dims][:, :, given]).max() > 1e-2 * np.abs(precision[:, dims][:, :, dims]).max()
    assert tpp.mean_nll(tpp.as_prior(only_means, only_cov, mix), moved) < tpp.mean_nll(prior, moved) - 1.0


def test_a_joints_mean_turn_weighs_the_components_by_their_weights():
    from models.ik.pose_prior import PosePrior

    means = np.zeros((2, DIM))
    neck = JOINT_INDEX["neck"]
    means[0, 3 * (neck - 1):3 * neck] = [0.4, 0.0, 0.0]
    means[1, 3 * (neck - 1):3 * neck] = [0.0, 0.0, -0.2]
    prior = PosePrior(means, np.stack([np.eye(DIM)] * 2), np.log([0.75, 0.25]))
    assert np.allclose(prior.mean_rotation(neck), axis_angle_to_matrix(np.array([0.3, 0.0, -0.05])))
    assert np.allclose(prior.mean_rotation(JOINT_INDEX["head"]), np.eye(3))

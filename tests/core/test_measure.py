"""Height and weight of a body's rest mesh, and betas fitted to a height and a weight."""
import re

import numpy as np
import pytest
import trimesh

from models.body import measure
from models.body.measure import (
    BETA_LIMIT, DENSITY, MeasurementPrior, fit_measurements, measurement_prior, mesh_height,
    mesh_volume, volume_gradient,
)
from models.body.model import GENDERS, BodyModel, load_body_model, open_body_path
from models.core.errors import SmplIkError


@pytest.fixture(params=GENDERS)
def body(request):
    return load_body_model(open_body_path(request.param))


def true_measurements(body, betas):
    """Height and weight measured by trimesh, not by the module under test."""
    v = body.shaped_vertices(betas)
    mesh = trimesh.Trimesh(v, body.faces, process=False)
    assert mesh.is_watertight
    return v[:, 1].max() - v[:, 1].min(), mesh.volume * DENSITY


def test_height_and_volume_of_a_box():
    box = trimesh.creation.box(extents=(0.4, 1.7, 0.3))
    box.apply_translation((2.0, 5.0, -1.0))   # the height is the span, not the top
    verts, faces = np.asarray(box.vertices), np.asarray(box.faces)
    assert mesh_height(verts) == pytest.approx(1.7, abs=1e-12)
    assert mesh_volume(verts, faces) == pytest.approx(0.4 * 1.7 * 0.3, rel=1e-12)
    assert mesh_volume(verts, faces[:, ::-1]) == pytest.approx(-0.4 * 1.7 * 0.3, rel=1e-12)  # inside out
    # batched: (..., V, 3)
    stacked = np.stack([verts, verts * 2.0])
    assert np.allclose(mesh_volume(stacked, faces), [0.204, 0.204 * 8])
    assert np.allclose(mesh_height(stacked), [1.7, 3.4])


def test_volume_of_a_sphere_and_its_gradient(rng):
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=0.5)
    verts, faces = np.asarray(sphere.vertices), np.asarray(sphere.faces)
    assert mesh_volume(verts, faces) == pytest.approx(sphere.volume, rel=1e-12)
    assert mesh_volume(verts, faces) == pytest.approx(4 / 3 * np.pi * 0.5 ** 3, rel=5e-3)  # inscribed
    bumpy = verts * (1 + 0.1 * rng.random((len(verts), 1)))
    grad = volume_gradient(bumpy, faces)
    step = rng.normal(size=bumpy.shape) * 1e-6
    numeric = mesh_volume(bumpy + step, faces) - mesh_volume(bumpy - step, faces)
    assert (grad * step).sum() * 2 == pytest.approx(numeric, rel=1e-6)


def test_density_is_one_figure_shared_with_the_cost():
    from models.ik import cost

    assert cost.DENSITY is measure.DENSITY and 950 < DENSITY < 1100


def test_measure_agrees_with_trimesh(body, rng):
    betas = rng.normal(size=10)
    m = measure.measure(body, betas)
    height, weight = true_measurements(body, betas)
    assert m.height == pytest.approx(height, abs=1e-9) and m.weight == pytest.approx(weight, rel=1e-9)
    assert m.weight == pytest.approx(m.volume * DENSITY)
    assert 1.4 < m.height < 2.2 and 30 < m.weight < 200


@pytest.mark.parametrize("height,weight", [(1.80, 80.0), (1.55, 48.0), (1.70, 65.0), (1.95, 110.0)])
def test_fit_meets_height_and_weight(body, height, weight):
    betas = fit_measurements(body, height, weight)
    assert betas.shape == (10,) and np.all(np.abs(betas) <= BETA_LIMIT)
    got_h, got_w = true_measurements(body, betas)
    assert abs(got_h - height) < 1e-4      # well under a millimetre
    assert abs(got_w - weight) < 0.01      # well under 0.1 kg
    assert np.linalg.norm(betas) < 8       # a plausible body, not a corner of the shape space


def test_open_bodies_carry_a_prior_and_it_is_used(body):
    prior = measurement_prior(body)
    assert prior is not None
    lo, hi = prior.height_range
    assert 1.2 < lo < hi < 2.2
    # the prior's start is the population's: near the mean body at the population's mean
    # height and volume, taller targets raise beta 0 (stature), and its body alone is already
    # close to the targets (within the population's range)
    assert np.linalg.norm(prior.betas(*prior.centre)) < 1.0
    assert prior.betas(prior.centre[0] + 0.1, prior.centre[1])[0] > 0.5
    for h, w in ((1.6, 55.0), (1.75, 70.0), (1.85, 85.0)):
        guess = measure.measure(body, prior.betas(h, w / DENSITY))
        assert abs(guess.height - h) < 0.03 and abs(guess.weight - w) < 5.0, (h, w, guess)
    with_prior = fit_measurements(body, 1.80, 80.0)
    plain = fit_measurements(body, 1.80, 80.0, prior=None)
    # the fit moves the betas as little as it can from where it starts: from the prior's start
    # (already within 3 cm and 5 kg, above) it stays near it; the plain fit sets the eight
    # directions height and weight leave free to the mean body's instead, so it ends at least
    # twice as far from the population's expectation
    start = prior.betas(1.80, 80.0 / DENSITY)
    assert np.linalg.norm(with_prior - start) < 0.5 * np.linalg.norm(plain - start), (with_prior, plain, start)
    for betas in (with_prior, plain):
        h, w = true_measurements(body, betas)
        assert abs(h - 1.8) < 1e-4 and abs(w - 80.0) < 0.01


def test_regenerate_a_body_from_its_height_and_weight(body, rng):
    """Random bodies' own heights and weights are met, and on average the fitted bodies
    resemble them more than the mean body does (stature and girth are right)."""
    err_fit, err_mean = [], []
    for _ in range(12):
        truth = rng.normal(scale=1.0, size=10)
        height, weight = true_measurements(body, truth)
        betas = fit_measurements(body, height, weight)
        h, w = true_measurements(body, betas)
        assert abs(h - height) < 1e-4 and abs(w - weight) < 0.01
        v_true = body.shaped_vertices(truth)
        err_fit.append(np.linalg.norm(body.shaped_vertices(betas) - v_true, axis=1).mean())
        err_mean.append(np.linalg.norm(body.v_template - v_true, axis=1).mean())
    assert np.mean(err_fit) < 0.8 * np.mean(err_mean), (np.mean(err_fit), np.mean(err_mean))


def test_a_file_without_a_prior_falls_back_to_minimum_norm(tmp_path):
    with np.load(open_body_path("male"), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files if not k.startswith("measure_prior")}
    path = tmp_path / "SMPL_MALE_like.npz"
    np.savez(path, **arrays)
    body = load_body_model(path)
    assert measurement_prior(body) is None
    betas = fit_measurements(body, 1.72, 70.0)
    h, w = true_measurements(body, betas)
    assert abs(h - 1.72) < 1e-4 and abs(w - 70.0) < 0.01
    # minimum norm: at the solution the betas have no component the targets leave free,
    # i.e. they lie in the span of the height's and the weight's gradients (found here by
    # finite differences of trimesh's measurements)
    eps = 1e-4
    jac = np.array([np.subtract(true_measurements(body, betas + eps * e), true_measurements(body, betas - eps * e))
                    / (2 * eps) for e in np.eye(10)]).T            # (2, 10)
    q, _ = np.linalg.qr(jac.T)
    free = betas - q @ (q.T @ betas)
    assert np.linalg.norm(free) < 1e-3 * np.linalg.norm(betas)


@pytest.mark.parametrize("height,weight,named", [
    (0.0, 70.0, "height"), (5.0, 70.0, "height"), (-1.7, 70.0, "height"), (float("nan"), 70.0, "height"),
    (1.7, 0.0, "weight"), (1.7, -70.0, "weight"), (1.7, float("inf"), "weight"), (1.7, 5000.0, "weight"),
    ("tall", 70.0, "height"),
])
def test_bad_values_are_refused_naming_them(height, weight, named):
    body = load_body_model(open_body_path("neutral"))
    with pytest.raises(SmplIkError) as err:
        fit_measurements(body, height, weight)
    message = str(err.value)
    assert message.startswith(named), message
    value = height if named == "height" else weight
    if isinstance(value, float) and np.isfinite(value):   # the range that works, and the miss
        assert "out of range" in message and "reaches" in message and "+-10" in message, message
        assert ("over" in message or "under" in message) if value > 0 else "more than 0" in message, message


@pytest.mark.parametrize("named,value", [
    ("height", float(np.finfo(np.float32).max)),    # what Blender stores for height=inf
    ("height", float("inf")), ("weight", float(np.finfo(np.float32).max)),
    ("height", -float(np.finfo(np.float32).max)),
])
def test_an_infinite_value_is_called_infinite(named, value):
    body = load_body_model(open_body_path("neutral"))
    height, weight = (value, 70.0) if named == "height" else (1.7, value)
    with pytest.raises(SmplIkError) as err:
        fit_measurements(body, height, weight)
    message = str(err.value)
    assert message.startswith(f"{named} is ") and "infinite" in message, message
    assert ("minus infinite" in message) == (value < 0), message
    assert not re.search(r"\d{7}", message), message   # no 39-digit "distance" to infinity


@pytest.mark.parametrize("height,weight", [(1e6, 70.0), (1.7, 1e9)])
def test_a_huge_value_is_refused_in_short_numbers(height, weight):
    body = load_body_model(open_body_path("neutral"))
    with pytest.raises(SmplIkError) as err:
        fit_measurements(body, height, weight)
    message = str(err.value)
    assert "out of range" in message and "over that" in message, message
    assert not re.search(r"\d{7}", message), message   # 1e+06 m, not 1000000.000 m


def test_a_combination_out_of_reach_says_how_far(body):
    # each alone is reachable, together they are not: a very short, very heavy body
    with pytest.raises(SmplIkError) as err:
        fit_measurements(body, 0.8, 400.0)
    message = str(err.value)
    assert "height 0.800 m with weight 400.0 kg" in message and "nearest" in message, message
    assert "short" in message or "over" in message or "under" in message, message


def test_prior_round_trips_through_plain_arrays(body, tmp_path):
    prior = measurement_prior(body)
    arrays = prior.to_arrays()
    assert all(a.dtype == np.float64 for a in arrays.values())
    again = MeasurementPrior.from_arrays(arrays)
    assert np.array_equal(again.betas(1.8, 0.08), prior.betas(1.8, 0.08))
    arrays["measure_prior_coef"] = arrays["measure_prior_coef"][:3]
    with pytest.raises(SmplIkError, match="measure_prior_coef"):
        MeasurementPrior.from_arrays(arrays, "x.npz")


def test_body_without_a_file_has_no_prior():
    b = load_body_model(open_body_path("female"))
    copy = BodyModel(path="not a file", kind="smpl", v_template=b.v_template, shapedirs=b.shapedirs, posedirs=None,
                     J_regressor=b.J_regressor, weights=b.weights, faces=b.faces)
    assert measurement_prior(copy) is None
    h, w = true_measurements(copy, fit_measurements(copy, 1.6, 55.0))
    assert abs(h - 1.6) < 1e-4 and abs(w - 55.0) < 0.01

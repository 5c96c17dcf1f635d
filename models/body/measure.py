"""Height and weight of a body's rest mesh, and the shape (betas) that has a given height and
weight: what an artist types in ("1.80 m, 80 kg") instead of ten betas.

Height is measured on the rest mesh (T-pose): the top of the head to the sole, the span of the
vertical coordinate (SMPL frame: Y up). Weight is DENSITY times the volume the closed mesh
encloses (its signed tetrahedra about the centroid; the eyes and the mouth's inside, a few tens
of cm^3, count too).
"""
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.npz import read_npz
from .model import NUM_BETAS

# kg / m^3: the whole body's mean density, lungs' air included, as SHAPY (CVPR 2022) uses it.
DENSITY = 985.0   # (docs/training_log.md, "Body density")
BETA_LIMIT = 10.0          # |beta| the fit may use: the add-on's shape keys span +-10
HEIGHT_TOLERANCE = 1e-5    # metres: the fit stops well under 1 mm ...
WEIGHT_TOLERANCE = 1e-3    # kg: ... and well under 0.1 kg from its targets
# Blender stores an infinite float property as the largest 32-bit float: at or past it a value
# is infinite, not a size to report in metres.
FLOAT32_MAX = float(np.finfo(np.float32).max)
PRIOR_ARRAYS = ("measure_prior_coef", "measure_prior_centre", "measure_prior_scale",
                "measure_prior_height_range", "measure_prior_volume_range")


def mesh_height(vertices):
    """Height (...,) metres of vertices (..., V, 3) in the SMPL frame (Y up): max - min of Y."""
    y = np.asarray(vertices, dtype=np.float64)[..., 1]
    return y.max(axis=-1) - y.min(axis=-1)


def mesh_volume(vertices, faces):
    """Volume (...,) m^3 enclosed by a closed triangle mesh: vertices (..., V, 3) metres,
    faces (F, 3) indices, wound counter-clockwise seen from outside (then it is positive).
    The sum of the signed tetrahedra each face spans with the centroid."""
    v = np.asarray(vertices, dtype=np.float64)
    v = v - v.mean(axis=-2, keepdims=True)
    a, b, c = (v[..., faces[:, k], :] for k in range(3))
    return np.einsum("...fc,...fc->...", a, np.cross(b, c)) / 6.0


def volume_gradient(vertices, faces):
    """d volume / d vertex (V, 3) for vertices (V, 3): a third of the area-weighted normals of
    the faces around each vertex."""
    v = np.asarray(vertices, dtype=np.float64)
    a, b, c = (v[faces[:, k]] for k in range(3))
    grad = np.zeros_like(v)
    for k, g in enumerate((np.cross(b, c), np.cross(c, a), np.cross(a, b))):
        np.add.at(grad, faces[:, k], g)
    return grad / 6.0


@dataclass(frozen=True)
class Measurements:
    """A body's height (metres), volume (m^3) and weight (kg, DENSITY x volume)."""

    height: float
    volume: float
    weight: float


def measure(body, betas):
    """Measurements of `body` (a BodyModel) shaped by betas (10,), on its rest mesh."""
    v = body.shaped_vertices(betas)
    volume = float(mesh_volume(v, body.faces))
    return Measurements(height=float(mesh_height(v)), volume=volume, weight=volume * DENSITY)


# --- the prior: betas expected for a height and a weight ------------------------------------

@dataclass(frozen=True)
class MeasurementPrior:
    """The population's mean betas given height and volume: a quadratic regression fitted over
    the bodies the shape space was built from.

    coef (6, 10) maps the features [1, h, v, h^2, h v, v^2] of the standardised height and
    volume ((x - centre) / scale) to betas. Targets outside the population's ranges are
    clamped into them first (a quadratic extrapolates badly); the exact fit does the rest.
    """

    coef: np.ndarray
    centre: np.ndarray        # (2,) metres, m^3
    scale: np.ndarray         # (2,)
    height_range: np.ndarray  # (2,) metres: the population's shortest and tallest
    volume_range: np.ndarray  # (2,) m^3

    def betas(self, height, volume):
        """The expected betas (10,) of a body of that height (metres) and volume (m^3)."""
        x = np.array([np.clip(height, *self.height_range), np.clip(volume, *self.volume_range)])
        return _features(((x - self.centre) / self.scale)[None])[0] @ self.coef

    @classmethod
    def fit(cls, heights, volumes, betas, ridge=1e-6):
        """Fit over a population: heights (N,) metres, volumes (N,) m^3, betas (N, 10)."""
        x = np.stack([heights, volumes], axis=1).astype(np.float64)
        centre, scale = x.mean(0), x.std(0)
        f = _features((x - centre) / scale)
        coef = np.linalg.solve(f.T @ f + ridge * len(f) * np.eye(f.shape[1]), f.T @ betas)
        return cls(coef=coef, centre=centre, scale=scale,
                   height_range=np.array([x[:, 0].min(), x[:, 0].max()]),
                   volume_range=np.array([x[:, 1].min(), x[:, 1].max()]))

    def to_arrays(self):
        """Plain float64 arrays named as PRIOR_ARRAYS, for a body's .npz."""
        return dict(zip(PRIOR_ARRAYS, (np.asarray(a, dtype=np.float64) for a in (
            self.coef, self.centre, self.scale, self.height_range, self.volume_range))))

    @classmethod
    def from_arrays(cls, arrays, path="body file"):
        shapes = dict(zip(PRIOR_ARRAYS, ((6, NUM_BETAS), (2,), (2,), (2,), (2,))))
        for name, shape in shapes.items():
            a = arrays[name]
            if a.shape != shape or a.dtype.kind != "f" or not np.all(np.isfinite(a)):
                raise SmplIkError(f"{path}: array '{name}' should be {shape} finite numbers, "
                                  f"found {a.dtype} of shape {a.shape}")
        if np.any(arrays["measure_prior_scale"] <= 0):
            raise SmplIkError(f"{path}: array 'measure_prior_scale' must be positive")
        return cls(*(arrays[name] for name in PRIOR_ARRAYS))


def _features(x):
    h, v = x[:, 0], x[:, 1]
    return np.stack([np.ones_like(h), h, v, h * h, h * v, v * v], axis=1)


@functools.lru_cache(maxsize=8)
def _prior_from_file(path, mtime_ns):
    arrays = read_npz(path, PRIOR_ARRAYS, "body model file")
    if len(arrays) < len(PRIOR_ARRAYS):
        return None
    return MeasurementPrior.from_arrays(arrays, path)


def measurement_prior(body):
    """The MeasurementPrior stored in `body`'s .npz file (the open bodies have one), or None
    (SMPL's own files, bodies not read from a file)."""
    path = Path(body.path)
    if path.suffix.lower() != ".npz":
        return None
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _prior_from_file(path.resolve(), mtime)


# --- fitting ------------------------------------------------------------------------------

def _show(value, unit):
    if unit == "m":
        return f"{value:.3f} m" if abs(value) < 100 else f"{value:g} m"
    return f"{value:.1f} kg" if abs(value) < 1e4 else f"{value:g} kg"


def _miss(value, unit):
    value = abs(value)
    if unit == "m":
        return f"{value * 100:.1f} cm" if value < 1 else f"{value:.2f} m" if value < 100 else f"{value:g} m"
    return f"{value:.1f} kg" if value < 1e4 else f"{value:g} kg"


class _Fitter:
    """Height and volume of a body's rest mesh and their gradients in betas."""

    def __init__(self, body):
        self.body = body
        self.sd_y = body.shapedirs[:, 1, :]     # (V, 10)

    def evaluate(self, betas):
        v = self.body.shaped_vertices(betas)
        y = v[:, 1]
        top, bottom = int(np.argmax(y)), int(np.argmin(y))
        height = y[top] - y[bottom]
        volume = float(mesh_volume(v, self.body.faces))
        d_height = self.sd_y[top] - self.sd_y[bottom]
        d_volume = np.einsum("vc,vcb->b", volume_gradient(v, self.body.faces), self.body.shapedirs)
        return np.array([height, volume]), np.stack([d_height, d_volume])

    def extreme(self, row, sign, limit):
        """About the largest (sign +1) or smallest (-1) height (row 0) or volume (row 1) within
        |betas| <= limit: the corner the gradient points to, followed until it stays put."""
        betas = np.zeros(NUM_BETAS)
        for _ in range(8):
            _, jac = self.evaluate(betas)
            corner = sign * limit * np.where(jac[row] >= 0, 1.0, -1.0)
            if np.array_equal(corner, betas):
                break
            betas = corner
        return self.evaluate(betas)[0][row]

    @functools.cached_property
    def ranges(self):
        """(2, 2): [[shortest, tallest] metres, [least, most] m^3] within |betas| <= BETA_LIMIT."""
        return np.array([[self.extreme(r, -1, BETA_LIMIT), self.extreme(r, 1, BETA_LIMIT)] for r in (0, 1)])

    def solve(self, target, start, limit, iterations=60):
        """Betas (10,) within +-limit meeting target [height, volume], nearest to `start` (10,):
        Gauss-Newton with the minimum-norm step from start (the betas the constraints leave
        free stay at start), the betas that hit a limit held there. Returns (betas, reached)."""
        betas = np.clip(start, -limit, limit)
        weights = np.array([1.0 / HEIGHT_TOLERANCE, DENSITY / WEIGHT_TOLERANCE])  # residual in tolerances
        best = None
        for _ in range(iterations):
            value, jac = self.evaluate(betas)
            miss = (target - value) * weights
            if best is None or np.abs(miss).max() < best[0]:
                best = (np.abs(miss).max(), betas, value)
            if np.abs(miss).max() < 0.5:
                break
            held, hold = np.zeros(NUM_BETAS, bool), np.zeros(NUM_BETAS)
            for _ in range(NUM_BETAS + 1):   # active set: betas the step pushes past a limit are held there
                free = ~held
                base = np.where(held, hold, start)        # where the step stays when it can
                new = base.copy()
                if not free.any():
                    break
                rhs = (target - value) + jac @ (betas - base)
                new[free] += np.linalg.lstsq(jac[:, free] * weights[:, None], rhs * weights, rcond=None)[0]
                out = free & (np.abs(new) > limit + 1e-12)
                if not out.any():
                    break
                held |= out
                hold = np.where(out, np.clip(new, -limit, limit), hold)
            betas = np.clip(new, -limit, limit)
        return best[1], best[2]


@functools.lru_cache(maxsize=8)
def _fitter(body):
    return _Fitter(body)


def _check(name, value, unit):
    """value as a float; SmplIkError for one that is not a number, or is infinite (float('inf'),
    or FLOAT32_MAX and beyond: how Blender stores infinity)."""
    units = "metres" if unit == "m" else "kilograms"
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise SmplIkError(f"{name} must be a number of {units}, got {value!r}") from None
    if np.isnan(value):
        raise SmplIkError(f"{name} must be a finite number of {units}, got NaN (not a number)")
    if abs(value) >= FLOAT32_MAX:
        raise SmplIkError(f"{name} is {'minus ' if value < 0 else ''}infinite: it must be a finite "
                          f"number of {units}")
    return value


def fit_measurements(body, height, weight, prior="file"):
    """Betas (10,) that give `body` (a BodyModel, with its own gender and shape space) a rest
    mesh `height` metres tall weighing `weight` kg (DENSITY x its volume), within 1e-5 m and
    1e-3 kg, every beta within +-BETA_LIMIT.

    The start is the population's mean shape for that height and weight (`prior`, a
    MeasurementPrior; by default the one stored in the body's file; None or a file without
    one: the mean body, so the result is the minimum-norm betas that meet the targets), then
    Gauss-Newton on the exact mesh height and volume with minimum-norm steps from that start.

    A value that is not a finite number, or out of the body's reach, raises SmplIkError saying
    which value, the range the body reaches and by how much it missed.
    """
    height, weight = _check("height", height, "m"), _check("weight", weight, "kg")
    fitter = _fitter(body)
    (h_lo, h_hi), (v_lo, v_hi) = fitter.ranges
    w_lo, w_hi = v_lo * DENSITY, v_hi * DENSITY
    limits = f"with betas within +-{BETA_LIMIT:g}"
    for name, value, lo, hi, unit in (("height", height, h_lo, h_hi, "m"), ("weight", weight, w_lo, w_hi, "kg")):
        reach = f"{_show(lo, unit)} to {_show(hi, unit)}" if lo > 0 else f"up to {_show(hi, unit)}"
        if value <= 0:
            raise SmplIkError(f"{name} {_show(value, unit)} is out of range: a {name} is more than 0 "
                              f"{'m' if unit == 'm' else 'kg'}; this body reaches {reach} {limits}")
        if not lo <= value <= hi:
            side = f"{_miss(lo - value, unit)} under" if value < lo else f"{_miss(value - hi, unit)} over"
            raise SmplIkError(f"{name} {_show(value, unit)} is out of range: this body reaches "
                              f"{reach} {limits} ({side} that)")
    if isinstance(prior, str) and prior == "file":
        prior = measurement_prior(body)
    target = np.array([height, weight / DENSITY])
    start = prior.betas(*target) if prior is not None else np.zeros(NUM_BETAS)
    betas, reached = fitter.solve(target, start, BETA_LIMIT)
    miss_h, miss_w = reached[0] - height, (reached[1] - target[1]) * DENSITY
    if abs(miss_h) > HEIGHT_TOLERANCE or abs(miss_w) > WEIGHT_TOLERANCE:
        parts = []
        if abs(miss_h) > HEIGHT_TOLERANCE:
            parts.append(f"height {_miss(miss_h, 'm')} {'over' if miss_h > 0 else 'short'}")
        if abs(miss_w) > WEIGHT_TOLERANCE:
            parts.append(f"weight {_miss(miss_w, 'kg')} {'over' if miss_w > 0 else 'under'}")
        raise SmplIkError(
            f"height {_show(height, 'm')} with weight {_show(weight, 'kg')} is out of this body's reach "
            f"{limits} (alone, heights {_show(h_lo, 'm')} to {_show(h_hi, 'm')} and weights "
            f"{_show(max(w_lo, 0.0), 'kg')} to {_show(w_hi, 'kg')} work): the nearest it gets is "
            f"{_show(reached[0], 'm')} and {_show(reached[1] * DENSITY, 'kg')} ({', '.join(parts)})")
    return betas

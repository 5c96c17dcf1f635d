"""Temporal filters: Gaussian smoothing of solved pose sequences (for baking effector
animation), a local straight line through a series, and the One Euro filter for a live signal."""
import numpy as np

from ..core.rotations import matrix_to_quat_wxyz, quat_wxyz_to_matrix
from .resample import continuous_quats


def gaussian_kernel(sigma):
    """Normalised 1D Gaussian weights over +-3 sigma (sigma in frames, > 0)."""
    radius = max(1, int(np.ceil(3 * sigma)))
    x = np.arange(-radius, radius + 1)
    k = np.exp(-0.5 * (x / sigma) ** 2)
    return k / k.sum()


def filter_in_time(values, kernel):
    """(T, ...) values convolved along time with `kernel` (odd length), edge padded: the ends are
    held, not pulled to zero."""
    r = len(kernel) // 2
    padded = np.concatenate([np.repeat(values[:1], r, 0), values, np.repeat(values[-1:], r, 0)])
    return sum(w * padded[i:i + len(values)] for i, w in enumerate(kernel))


def local_linear(values, sigma):
    """(T,) values (T,) smoothed by a straight line fitted about each frame under Gaussian
    weights (sigma frames, > 0): a steady drift passes unchanged, to the clip's ends too, where
    a Gaussian average lags behind it. Fewer than 3 values come back as they are."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 3:
        return values.copy()
    w = gaussian_kernel(sigma)
    r = len(w) // 2
    x = np.arange(-r, r + 1, dtype=np.float64)

    def around(series, weights):   # sum over each frame's window (frames past the ends left out)
        return np.convolve(series, weights[::-1], mode="full")[r:r + len(values)]

    ones = np.ones(len(values))
    s0, s1, s2 = around(ones, w), around(ones, w * x), around(ones, w * x * x)
    t0, t1 = around(values, w), around(values, w * x)
    return (s2 * t0 - s1 * t1) / (s0 * s2 - s1 * s1)


def smooth_poses(local_rot, trans, sigma):
    """Gaussian-smoothed copies of local rotations (T, J, 3, 3) and translations (T, 3).

    Rotations are averaged as sign-aligned quaternions, then normalised (accurate for the
    small frame-to-frame changes of a motion). sigma <= 0 returns the inputs unchanged.
    """
    local_rot, trans = np.asarray(local_rot, float), np.asarray(trans, float)
    if sigma <= 0 or len(local_rot) < 2:
        return local_rot, trans
    q = continuous_quats(matrix_to_quat_wxyz(local_rot))    # (T, J, 4), one hemisphere along time
    kernel = gaussian_kernel(sigma)
    q = filter_in_time(q, kernel)
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return quat_wxyz_to_matrix(q), filter_in_time(trans, kernel)


class OneEuro:
    """The One Euro filter (Casiez et al. 2012) on arrays of one shape: a low-pass filter whose
    cutoff rises with the signal's speed, so a still signal is smoothed hard and a moving one
    follows with little lag. The cutoff (Hz) is min_cutoff at rest and rises by beta per unit
    of speed (units per second); d_cutoff (Hz) filters the speed itself. Call it with each
    value and its time in seconds; a time not after the last one starts it afresh."""

    def __init__(self, min_cutoff, beta, d_cutoff):
        self.min_cutoff, self.beta, self.d_cutoff = min_cutoff, beta, d_cutoff
        self.value = self.speed = self.time = None

    @staticmethod
    def _alpha(cutoff, dt):
        tau = 1.0 / (2 * np.pi * cutoff)
        return 1.0 / (1.0 + tau / dt)

    def __call__(self, value, time):
        value = np.asarray(value, dtype=np.float64)
        if self.value is None or time <= self.time:
            self.value, self.speed, self.time = value.copy(), np.zeros_like(value), time
            return value
        dt = time - self.time
        speed = (value - self.value) / dt
        self.speed = self.speed + self._alpha(self.d_cutoff, dt) * (speed - self.speed)
        cutoff = self.min_cutoff + self.beta * np.abs(self.speed)
        self.value = self.value + self._alpha(cutoff, dt) * (value - self.value)
        self.time = time
        return self.value

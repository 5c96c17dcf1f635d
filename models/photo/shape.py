"""A person's proportions from many fitted frames of them (a video's), in numpy.

One picture hardly tells a person's proportions from their pose: MediaPipe's keypoints lie a
few per cent of the person's size off, about as much as one bone's share of the body varies
between people. Over many frames in many poses the noise averages out. `clip_shape` fits the
ten betas to the keypoints of up to SHAPE_FRAMES frames at once, each frame's pose as it was
fitted and each frame's root placed where its keypoints put it. One camera cannot tell a
person's size (a larger body further away looks the same), so it then returns the betas whose
bones keep those proportions at the person's height where it is known, else at the height of
the body it started from.
"""
import numpy as np

from ..body.measure import mesh_height
from ..core.kinematics import forward_kinematics
from ..core.skeleton import PARENTS
from .camera import solve_root_translation
from .fit import MIN_CONFIDENCE, ROBUST_SCALE
from .keypoints import KEYPOINTS, body_points

SHAPE_FRAMES = 40      # frames the shape is fitted to, spread over the clip
MIN_SHAPE_FRAMES = 10  # fewer fitted frames than this: the shape is kept
# One beta away from the average body weighs as much as a keypoint this share of the person's
# box diagonal off in one frame (the shape space's own prior: betas are unit Gaussian)
SHAPE_PRIOR = 0.02
SHAPE_ITERATIONS = 6
SHAPE_STEP = 1e-3      # the finite-difference step of the betas' Jacobian
_BONES = np.array(PARENTS[1:])


def proportions(body, betas):
    """(23,) each bone's length (joint to parent, rest pose) over all the bones' lengths."""
    rest = body.rest_joints(np.asarray(betas, dtype=np.float64))
    lengths = np.linalg.norm(rest[1:] - rest[_BONES], axis=1)
    return lengths / lengths.sum()


def _gauss_newton(residuals, start, step, iterations, stop):
    """Betas that minimise |residuals(betas)|^2 by Gauss-Newton from `start`, the Jacobian by
    forward differences of `step`."""
    x = np.array(start, dtype=np.float64)
    eye = np.eye(len(x))
    for _ in range(iterations):
        r0 = residuals(x)
        jac = np.stack([(residuals(x + step * e) - r0) / step for e in eye], axis=1)
        move = -np.linalg.solve(jac.T @ jac + 1e-9 * eye, jac.T @ r0)
        x = x + move
        if np.linalg.norm(move) < stop:
            break
    return x


def clip_shape(fits, detections, camera, body, betas, height=None):
    """(betas (10,), note) for one person seen in many frames through `camera`: `fits` their
    ImageFits (or anything with local_rot and trans) and `detections` the Detections they were
    fitted to, one each; body the BodyModel, betas the shape the fits were made with; height
    the person's in metres where known (None: the height of the body of `betas` is kept).
    Fewer than MIN_SHAPE_FRAMES frames: `betas` as given and a note why."""
    betas = np.asarray(betas, dtype=np.float64)
    if len(fits) != len(detections):
        raise ValueError(f"{len(fits)} fits for {len(detections)} detections")
    if len(fits) < MIN_SHAPE_FRAMES:
        return betas.copy(), (f"the body's shape was kept: the person was fitted on {len(fits)} frames, "
                              f"and fitting a shape needs {MIN_SHAPE_FRAMES}")
    chosen = np.unique(np.linspace(0, len(fits) - 1, min(SHAPE_FRAMES, len(fits))).round().astype(int))
    frames = []
    for i in chosen:
        detection = detections[i]
        x0, y0, x1, y1 = detection.bbox
        frames.append((np.asarray(fits[i].local_rot, dtype=np.float64), np.asarray(fits[i].trans, dtype=np.float64),
                       np.asarray(detection.image_xy, dtype=np.float64),
                       np.asarray(detection.visibility, dtype=np.float64),
                       max(float(np.hypot(x1 - x0, y1 - y0)), 1.0)))

    def keypoint_rows(shape):
        """The robust keypoint errors of every chosen frame (in box diagonals, weighted as
        the fit weighs them) with the body of `shape`, then the prior's rows."""
        rest = body.rest_joints(shape)
        points, kept = body_points(rest, body, shape)
        landmarks = [KEYPOINTS[k][0] for k in kept]
        share = np.array([KEYPOINTS[k][2] for k in kept])
        rows = []
        for local, trans, image_xy, visibility, diagonal in frames:
            placed = points.positions(forward_kinematics(local, rest, PARENTS, trans))
            observed, seen = image_xy[landmarks], visibility[landmarks]
            weight = share * np.where((seen >= MIN_CONFIDENCE) & np.isfinite(observed).all(axis=1), seen, 0.0)
            observed = np.nan_to_num(observed)
            placed = placed + solve_root_translation(placed, observed, weight, camera)
            err = np.nan_to_num((camera.project(placed) - observed) / diagonal, nan=10.0)
            robust = 1.0 / (1.0 + (np.linalg.norm(err, axis=1) / ROBUST_SCALE) ** 2)
            rows.append((err * np.sqrt(weight * robust)[:, None]).ravel())
        return np.concatenate(rows + [SHAPE_PRIOR * shape])

    seen_shape = _gauss_newton(keypoint_rows, betas, SHAPE_STEP, SHAPE_ITERATIONS, SHAPE_STEP)
    target = proportions(body, seen_shape)
    height = mesh_height(body.shaped_vertices(betas)) if height is None else float(height)

    def proportion_rows(shape):
        """How far the bones' proportions are from the seen shape's (relative), the height
        from the starting body's (weighted to hold it), and a faint pull toward the average."""
        return np.concatenate([proportions(body, shape) / target - 1.0,
                               [10.0 * (mesh_height(body.shaped_vertices(shape)) / height - 1.0)], 1e-3 * shape])

    return _gauss_newton(proportion_rows, seen_shape, 1e-4, 10, 1e-5), ""

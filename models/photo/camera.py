"""The pinhole camera a photo was taken with, as far as the file tells: focal length from its
EXIF (35 mm equivalent, or the lens's focal length with the sensor's size), otherwise a
default field of view; the principal point at the image's centre; square pixels.

Frame: the camera's own frame in SMPL's axes, which is also a Blender camera's local frame:
the camera at the origin looking along -Z, +Y up in the picture, +X to the right. A point
(x, y, z) in front of the camera has z < 0 and lands at pixel
(cx + f x / -z, cy - f y / -z) (x right, y down, as images count).
"""
from dataclasses import dataclass

import numpy as np

from ..core.errors import SmplIkError
from .exif import ExifError, image_name, read_exif

# A photo without a usable focal length: 55 degrees across its diagonal, a 41.6 mm lens on
# 35 mm film; phones shoot 65-75 degrees, portrait and compact lenses 30-50.
DEFAULT_DIAGONAL_FOV_DEG = 55.0
FILM_DIAGONAL_MM = float(np.hypot(36.0, 24.0))   # what a 35 mm equivalent focal length is measured against
MAX_PIXELS = 200_000_000   # larger images are refused (a 20,000 x 20,000 photo would need 1.2 GB as RGB)
# EXIF focal lengths believed, as 35 mm equivalents: a fisheye's 8 mm to a 1200 mm telephoto.
FOCAL_35MM_RANGE_MM = (8.0, 1200.0)
ASPECT_TOLERANCE = 0.01   # an image whose shape differs more from its EXIF's was cropped


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: image `width` x `height` pixels, focal length `focal_px` (pixels),
    principal point (cx, cy) in pixels (x right, y down); `source` says where the focal length
    came from ("exif" or "default"), `notes` anything a person should know (a corrupt EXIF)."""

    width: int
    height: int
    focal_px: float
    cx: float
    cy: float
    source: str = "default"
    notes: tuple = ()

    def project(self, points):
        """(..., 2) pixels of points (..., 3) in the camera's frame (module docstring); a point
        at or behind the camera gets NaN."""
        p = np.asarray(points, dtype=np.float64)
        depth = -p[..., 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.cx + self.focal_px * p[..., 0] / depth
            v = self.cy - self.focal_px * p[..., 1] / depth
        out = np.stack([u, v], axis=-1)
        out[depth <= 0] = np.nan
        return out

    def rays(self, pixels):
        """(..., 2) the rays x / -z, y / -z through pixels (..., 2): where `project` puts a
        point (x, y, z), the inverse up to the point's depth."""
        xy = np.asarray(pixels, dtype=np.float64)
        return np.stack([(xy[..., 0] - self.cx) / self.focal_px, (self.cy - xy[..., 1]) / self.focal_px], -1)

    @property
    def diagonal_px(self):
        return float(np.hypot(self.width, self.height))

    @property
    def diagonal_fov_deg(self):
        return float(np.degrees(2 * np.arctan(0.5 * self.diagonal_px / self.focal_px)))

    def lens_mm(self, sensor_mm=36.0):
        """The focal length in millimetres of a camera whose sensor is `sensor_mm` across the
        image's longer side (a Blender camera with sensor fit Auto and that sensor width)."""
        return float(self.focal_px * sensor_mm / max(self.width, self.height))


def solve_root_translation(points, observed, weights, camera):
    """(3,) the translation t (metres, camera frame) that best puts `points` (N, 3), camera
    frame, on the pixels `observed` (N, 2) through `camera` (weights (N,)): linear least
    squares on the projection equations multiplied through by the depth."""
    f, cx, cy = camera.focal_px, camera.cx, camera.cy
    du, dv = observed[:, 0] - cx, observed[:, 1] - cy
    x, y, z = points.T
    # u: cx + f (x + tx) / -(z + tz)  ->  f tx + du tz = -du z - f x
    # v: cy - f (y + ty) / -(z + tz)  ->  f ty - dv tz = dv z - f y
    a = np.zeros((2 * len(points), 3))
    b = np.zeros(2 * len(points))
    a[0::2, 0], a[0::2, 2], b[0::2] = f, du, -du * z - f * x
    a[1::2, 1], a[1::2, 2], b[1::2] = f, -dv, dv * z - f * y
    w = np.repeat(np.sqrt(weights), 2)
    return np.linalg.lstsq(a * w[:, None], b * w, rcond=None)[0]


def check_image_size(width, height, what="the photo"):
    """SmplIkError for an image too small to hold a person or too large to read."""
    if min(width, height) < 16:
        raise SmplIkError(f"{what} is {width}x{height} pixels: too small to find a person in "
                          "(at least 16 pixels a side)")
    if width * height > MAX_PIXELS:
        raise SmplIkError(f"{what} is {width}x{height} pixels ({width * height / 1e6:.0f} megapixels): "
                          f"too large (at most {MAX_PIXELS / 1e6:.0f}); scale it down first")


def default_camera(width, height, notes=()):
    """The Camera of a photo whose focal length is unknown: DEFAULT_DIAGONAL_FOV_DEG across."""
    return camera_from_fov(width, height, DEFAULT_DIAGONAL_FOV_DEG, "default", notes)


def camera_from_fov(width, height, diagonal_fov_deg, source="given", notes=()):
    """The Camera of an image `width` x `height` whose field of view across the diagonal is
    `diagonal_fov_deg` degrees (in (0, 180)). SmplIkError for another angle."""
    if not 0.0 < float(diagonal_fov_deg) < 180.0:
        raise SmplIkError(f"a field of view of {diagonal_fov_deg:g} degrees is not a lens's (0-180 degrees)")
    focal = 0.5 * np.hypot(width, height) / np.tan(np.radians(float(diagonal_fov_deg)) / 2)
    return Camera(int(width), int(height), float(focal), width / 2.0, height / 2.0, source, tuple(notes))


def camera_from_focal(width, height, focal_px, source="given", notes=()):
    """The Camera of an image `width` x `height` whose focal length is `focal_px` pixels (> 0).
    SmplIkError for another."""
    if not (np.isfinite(focal_px) and focal_px > 0):
        raise SmplIkError(f"a focal length of {focal_px:g} pixels is not a lens's (it must be above 0)")
    return Camera(int(width), int(height), float(focal_px), width / 2.0, height / 2.0, source, tuple(notes))


def camera_from_35mm(width, height, focal_35mm, notes=()):
    """The Camera of a photo whose lens is `focal_35mm` millimetres, 35 mm equivalent (measured
    across the diagonal, as EXIF's FocalLengthIn35mmFilm is)."""
    focal = float(focal_35mm) * np.hypot(width, height) / FILM_DIAGONAL_MM
    return Camera(int(width), int(height), focal, width / 2.0, height / 2.0, "exif", tuple(notes))


def camera_for_image(image, width, height, what=None):
    """The Camera of a photo (a JPEG or PNG path, or its bytes) of `width` x `height` pixels
    as it is read (resized, or turned upright by its Orientation, or not): the focal length
    from EXIF's FocalLengthIn35mmFilm when it lies in FOCAL_35MM_RANGE_MM, else from its
    FocalLength and the sensor's resolution (FocalPlaneXResolution and its unit), scaled to
    `width` x `height` through PixelX/YDimension, else default_camera. A corrupt or implausible
    EXIF gives the default with a note naming the file (`what`, default the file's name) and
    what was wrong; a photo whose shape differs from its EXIF's (cropped) gets a note too.
    SmplIkError for a size check_image_size refuses or a path that cannot be read."""
    name = image_name(image, what)
    check_image_size(width, height, name)
    fallback = f"used the default {DEFAULT_DIAGONAL_FOV_DEG:g} degree field of view"
    try:
        info = read_exif(image, name)
    except ExifError as error:
        return default_camera(width, height, (f"{error}; {fallback}",))
    except OSError as error:
        raise SmplIkError(f"{name}: cannot be read ({error.strerror or error})") from None
    if info is None:
        return default_camera(width, height)
    swapped, shape_note = _exif_shape(info, width, height)
    notes = [f"{name}: {shape_note}"] if shape_note else []
    problems = []
    low, high = FOCAL_35MM_RANGE_MM
    f35 = info.focal_length_35mm
    if f35 is not None and f35 != 0:   # 0: EXIF's "unknown"
        if low <= f35 <= high:
            return camera_from_35mm(width, height, f35, notes)
        problems.append(f"FocalLengthIn35mmFilm is {f35:g} mm (outside {low:g}-{high:g} mm)")
    focal, problem = _focal_from_sensor(info, width, height, swapped)
    if problem:
        problems.append(problem)
    if focal is not None:
        if problems:
            notes.append(f"{name}: implausible EXIF: {'; '.join(problems)}; used its FocalLength and sensor size")
        return Camera(int(width), int(height), focal, width / 2.0, height / 2.0, "exif", tuple(notes))
    if problems:
        notes.append(f"{name}: implausible EXIF: {'; '.join(problems)}; {fallback}")
    return default_camera(width, height, notes)


def _exif_shape(info, width, height):
    """(swapped, note): whether the image as read is the EXIF's stored image turned by 90
    degrees (its shape matches PixelY x PixelX better than PixelX x PixelY; Orientation 5-8,
    or an editor that turned the pixels and kept the dimensions), and a note when neither
    shape matches (the photo was cropped, so a focal length scaled by size is off)."""
    if not (info.pixel_width and info.pixel_height):
        return False, None
    aspect = np.log(width / height) - np.log(info.pixel_width / info.pixel_height)
    turned = np.log(width / height) + np.log(info.pixel_width / info.pixel_height)
    swapped = bool(abs(turned) < abs(aspect))
    if min(abs(aspect), abs(turned)) <= np.log1p(ASPECT_TOLERANCE):
        return swapped, None
    return swapped, (f"the photo is {width}x{height} but its EXIF says {info.pixel_width}x{info.pixel_height}: "
                     "if it was cropped, the focal length from EXIF is off")


def _focal_from_sensor(info, width, height, swapped):
    """(focal_px, problem): the focal length in pixels of the image as read from FocalLength
    and the sensor's pixels per millimetre along its x axis (FocalPlaneXResolution), which
    runs along the image's width, or its height when `swapped`; (None, None) when EXIF lacks
    them, (None, what is wrong) when they give an implausible lens."""
    mm, resolution = info.focal_length_mm, info.focal_plane_x_resolution
    if mm is None or resolution is None:
        return None, None
    if info.focal_plane_unit_mm is None:
        return None, "FocalPlaneResolutionUnit is not a unit of length"
    if not (np.isfinite(mm) and mm > 0 and np.isfinite(resolution) and resolution > 0):
        return None, f"FocalLength {mm:g} mm with FocalPlaneXResolution {resolution:g} is not a lens"
    focal = mm * resolution / info.focal_plane_unit_mm   # pixels of the stored image
    if info.pixel_width:   # else the photo is taken to be the size the camera stored
        focal *= (height if swapped else width) / info.pixel_width
    low, high = FOCAL_35MM_RANGE_MM
    equivalent = focal * FILM_DIAGONAL_MM / np.hypot(width, height)
    if not low <= equivalent <= high:
        return None, (f"FocalLength {mm:g} mm on a sensor of {resolution:g} pixels per "
                      f"{info.focal_plane_unit_mm:g} mm is a {equivalent:.3g} mm lens as 35 mm equivalent "
                      f"(outside {low:g}-{high:g} mm)")
    return float(focal), None

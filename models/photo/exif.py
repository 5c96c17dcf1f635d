"""The few EXIF tags a camera needs (focal lengths, the sensor's resolution, pixel dimensions,
orientation), read from a JPEG's APP1 segment or a PNG's eXIf chunk in pure Python.

Every offset and count is checked against the bytes at hand before it is used, and at most one
64 KiB segment (1 MiB for a PNG's chunk) is ever read, so a truncated or hostile file raises
ExifError, never anything else, and never loops or allocates without bound.
"""
import io
import math
import os
import struct
from dataclasses import dataclass

from ..core.errors import SmplIkError
from .image_size import jpeg_segments

TAG_ORIENTATION = 0x0112
TAG_EXIF_IFD = 0x8769
TAG_FOCAL_LENGTH = 0x920A
TAG_PIXEL_X_DIMENSION = 0xA002
TAG_PIXEL_Y_DIMENSION = 0xA003
TAG_FOCAL_PLANE_X_RESOLUTION = 0xA20E
TAG_FOCAL_PLANE_Y_RESOLUTION = 0xA20F
TAG_FOCAL_PLANE_RESOLUTION_UNIT = 0xA210
TAG_FOCAL_LENGTH_35MM = 0xA405
TAG_NAMES = {
    TAG_ORIENTATION: "Orientation", TAG_EXIF_IFD: "ExifIFD", TAG_FOCAL_LENGTH: "FocalLength",
    TAG_PIXEL_X_DIMENSION: "PixelXDimension", TAG_PIXEL_Y_DIMENSION: "PixelYDimension",
    TAG_FOCAL_PLANE_X_RESOLUTION: "FocalPlaneXResolution",
    TAG_FOCAL_PLANE_Y_RESOLUTION: "FocalPlaneYResolution",
    TAG_FOCAL_PLANE_RESOLUTION_UNIT: "FocalPlaneResolutionUnit",
    TAG_FOCAL_LENGTH_35MM: "FocalLengthIn35mmFilm",
}
# TIFF field types that hold numbers: type -> (struct code, bytes per value). 13 (IFD) is how
# some writers type the ExifIFD pointer. ASCII (2) and UNDEFINED (7) are not numbers.
NUMERIC_TYPES = {1: ("B", 1), 3: ("H", 2), 4: ("I", 4), 5: ("II", 8), 6: ("b", 1), 8: ("h", 2),
                 9: ("i", 4), 10: ("ii", 8), 11: ("f", 4), 12: ("d", 8), 13: ("I", 4)}
# Millimetres per FocalPlaneResolutionUnit: 2 inch (EXIF's default), 3 cm; 4 mm and 5 um are
# TIFF/EP's, which some cameras write. 1 ("no absolute unit") gives no sensor size.
UNIT_MM = {2: 25.4, 3: 10.0, 4: 1.0, 5: 0.001}

JPEG_SOI = b"\xff\xd8"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EXIF_HEADER = b"Exif\x00\x00"
MAX_JPEG_MARKERS = 1024      # APP segments come first; a file with more has no EXIF worth finding
MAX_PNG_CHUNKS = 100_000
MAX_PNG_EXIF_BYTES = 1 << 20


class ExifError(SmplIkError):
    """An EXIF block that cannot be read: the message names the file and what is wrong."""


@dataclass(frozen=True)
class ExifInfo:
    """What a photo's EXIF says about its camera; None where a tag is absent (or, for
    FocalLength and the resolutions, written as 0/0, EXIF's "unknown").

    focal_length_35mm: FocalLengthIn35mmFilm, millimetres, 35 mm equivalent (across the
    diagonal; 0 means unknown). focal_length_mm: the lens's FocalLength, millimetres.
    focal_plane_x_resolution, focal_plane_y_resolution: sensor pixels per
    focal_plane_unit_mm millimetres (the unit as millimetres: UNIT_MM; None when the unit is
    unknown or "no absolute unit"), counted on the image as stored, before Orientation.
    pixel_width, pixel_height: PixelX/YDimension, the stored image's size the resolutions refer
    to. orientation: 1-8 as EXIF counts (5-8 turn the stored image by 90 degrees to show it)."""

    focal_length_35mm: float = None
    focal_length_mm: float = None
    focal_plane_x_resolution: float = None
    focal_plane_y_resolution: float = None
    focal_plane_unit_mm: float = None
    pixel_width: int = None
    pixel_height: int = None
    orientation: int = None

    @property
    def rotated(self):
        """True when the stored image is shown turned by 90 degrees (Orientation 5-8)."""
        return self.orientation in (5, 6, 7, 8)


def read_exif(image, what=None):
    """The ExifInfo of a JPEG or PNG, given as a path or as the file's bytes; None when it holds
    no EXIF (or is neither a JPEG nor a PNG). ExifError for an EXIF block that cannot be read
    (cut short, offsets past its end, an IFD pointer looping back, a tag that is not a number);
    OSError when a path cannot be opened. `what` names the file in messages (default: the
    path's file name, or "the photo" for bytes)."""
    name = image_name(image, what)
    if is_bytes(image):
        tiff = _find_tiff(io.BytesIO(bytes(image)), name)
    else:
        with open(image, "rb") as f:
            tiff = _find_tiff(f, name)
    return None if tiff is None else parse_tiff(tiff, name)


def is_bytes(image):
    """True for a file given as its bytes rather than its path."""
    return isinstance(image, (bytes, bytearray, memoryview))


def image_name(image, what=None):
    """How messages name a file given as a path or bytes: `what`, else the path's file name,
    else "the photo"."""
    return what or ("the photo" if is_bytes(image) else os.path.basename(os.fspath(image)))


def _find_tiff(f, name):
    """The TIFF structure inside a JPEG's Exif APP1 segment or a PNG's eXIf chunk (bytes), or
    None; reads the file's markers or chunks and skips over everything else."""
    start = f.read(8)
    if start.startswith(JPEG_SOI):
        f.seek(2)
        return _jpeg_tiff(f, name)
    if start == PNG_SIGNATURE:
        return _png_tiff(f, name)
    return None


def _jpeg_tiff(f, name):
    for marker, length in jpeg_segments(f, MAX_JPEG_MARKERS):
        if marker != 0xE1:
            continue
        payload = f.read(length)
        if not payload.startswith(EXIF_HEADER[:len(payload)]):
            continue   # an XMP or other APP1 segment
        if len(payload) < length:
            raise ExifError(f"{name}: corrupt EXIF: its segment says {length} bytes but the file "
                            f"ends after {len(payload)}")
        if len(payload) >= len(EXIF_HEADER):
            return payload[len(EXIF_HEADER):]
    return None


def _png_tiff(f, name):
    for _ in range(MAX_PNG_CHUNKS):
        head = f.read(8)
        if len(head) < 8:
            return None
        length, kind = struct.unpack(">I4s", head)
        if kind == b"IEND":
            return None
        if kind != b"eXIf":
            f.seek(length + 4, io.SEEK_CUR)   # the data and its CRC
            continue
        if length > MAX_PNG_EXIF_BYTES:
            raise ExifError(f"{name}: corrupt EXIF: its eXIf chunk says {length} bytes "
                            f"(at most {MAX_PNG_EXIF_BYTES} are read)")
        data = f.read(length)
        if len(data) < length:
            raise ExifError(f"{name}: corrupt EXIF: its eXIf chunk says {length} bytes but the file "
                            f"ends after {len(data)}")
        return data
    return None


def parse_tiff(data, name="the photo"):
    """ExifInfo from an EXIF block's TIFF structure (bytes from the "II"/"MM" header on):
    IFD0's Orientation and the Exif IFD it points to. ExifError naming `name` for anything
    that does not fit inside `data`."""
    def fail(detail):
        return ExifError(f"{name}: corrupt EXIF: {detail}")

    if len(data) < 8:
        raise fail(f"its TIFF header is cut short ({len(data)} bytes)")
    order = {b"II": "<", b"MM": ">"}.get(bytes(data[:2]))
    if order is None:
        raise fail(f"unknown byte order {bytes(data[:2])!r} (expected b'II' or b'MM')")
    magic, ifd0_at = struct.unpack(order + "HI", data[2:8])
    if magic != 42:
        raise fail(f"the TIFF header's magic number is {magic}, not 42")
    ifd0 = _read_ifd(data, order, ifd0_at, "IFD0", fail)
    values = {TAG_ORIENTATION: _number(data, order, ifd0, TAG_ORIENTATION, fail)}
    exif = {}
    pointer = _number(data, order, ifd0, TAG_EXIF_IFD, fail)
    if pointer is not None:   # the one pointer followed; IFD1 (the thumbnail) and beyond never are
        if not (math.isfinite(pointer) and pointer == int(pointer)):
            raise fail(f"the ExifIFD pointer is {pointer}, not a byte offset")
        if pointer == ifd0_at:
            raise fail(f"the ExifIFD pointer loops back to IFD0 (byte {ifd0_at})")
        exif = _read_ifd(data, order, int(pointer), "the Exif IFD", fail)
    for tag in (TAG_FOCAL_LENGTH, TAG_PIXEL_X_DIMENSION, TAG_PIXEL_Y_DIMENSION, TAG_FOCAL_PLANE_X_RESOLUTION,
                TAG_FOCAL_PLANE_Y_RESOLUTION, TAG_FOCAL_PLANE_RESOLUTION_UNIT, TAG_FOCAL_LENGTH_35MM):
        values[tag] = _number(data, order, exif, tag, fail)

    def count(tag, valid):
        """A whole-number tag, None when absent or outside `valid` (a range)."""
        v = values[tag]
        return int(v) if v is not None and math.isfinite(v) and v == int(v) and int(v) in valid else None

    unit = values[TAG_FOCAL_PLANE_RESOLUTION_UNIT]
    return ExifInfo(
        focal_length_35mm=values[TAG_FOCAL_LENGTH_35MM],
        focal_length_mm=values[TAG_FOCAL_LENGTH],
        focal_plane_x_resolution=values[TAG_FOCAL_PLANE_X_RESOLUTION],
        focal_plane_y_resolution=values[TAG_FOCAL_PLANE_Y_RESOLUTION],
        focal_plane_unit_mm=UNIT_MM.get(2 if unit is None else unit),
        pixel_width=count(TAG_PIXEL_X_DIMENSION, range(1, 1 << 32)),
        pixel_height=count(TAG_PIXEL_Y_DIMENSION, range(1, 1 << 32)),
        orientation=count(TAG_ORIENTATION, range(1, 9)),
    )


def _read_ifd(data, order, at, what, fail):
    """{tag: (type, count, the entry's 4-byte value field)} of the IFD at byte `at`; the first
    entry of a tag written twice wins."""
    if at < 8 or at + 2 > len(data):
        raise fail(f"{what} at byte {at} lies outside the EXIF's {len(data)} bytes")
    n = struct.unpack(order + "H", data[at:at + 2])[0]
    end = at + 2 + 12 * n
    if end > len(data):
        raise fail(f"{what} at byte {at} holds {n} entries, running past the EXIF's {len(data)} bytes")
    entries = {}
    for i in range(at + 2, end, 12):
        tag, kind, count = struct.unpack(order + "HHI", data[i:i + 8])
        entries.setdefault(tag, (kind, count, data[i + 8:i + 12]))
    return entries


def _number(data, order, entries, tag, fail):
    """The first value of `tag` as a float; None when absent or a rational 0/0. Only the tags
    read are checked, so a broken maker note or thumbnail elsewhere does not matter."""
    if tag not in entries:
        return None
    kind, count, field = entries[tag]
    name = TAG_NAMES[tag]
    if kind not in NUMERIC_TYPES:
        raise fail(f"{name} is of TIFF type {kind}, not a number")
    if count == 0:
        raise fail(f"{name} holds no value")
    code, size = NUMERIC_TYPES[kind]
    total = size * count
    if total <= 4:
        raw = field[:size]
    else:
        at = struct.unpack(order + "I", field)[0]
        if at + total > len(data):
            raise fail(f"{name}'s {count} value(s) at byte {at} run past the EXIF's {len(data)} bytes")
        raw = data[at:at + size]
    values = struct.unpack(order + code, raw)
    if len(values) == 2:   # a rational
        return None if values[1] == 0 else values[0] / values[1]
    return float(values[0])

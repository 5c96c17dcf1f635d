"""The photo's camera: focal lengths from EXIF (JPEG files assembled here, both byte orders;
PNG's eXIf), a default field of view when there is none, and a note, never an exception, for
an EXIF that is corrupt or implausible; projection through the pinhole; image size limits."""
import io
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.core.errors import SmplIkError
from models.photo.camera import (DEFAULT_DIAGONAL_FOV_DEG, FILM_DIAGONAL_MM, Camera, camera_for_image,
                                 check_image_size, default_camera)
from models.photo.exif import read_exif

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT.parent / "shared" / "data" / "images"
ORDERS = ("<", ">")   # II (Intel) and MM (Motorola)
FALLBACK = f"used the default {DEFAULT_DIAGONAL_FOV_DEG:g} degree field of view"

# TIFF types as the EXIF standard lists them: type -> struct code of one value.
SHORT, LONG, RATIONAL, ASCII, FLOAT = 3, 4, 5, 2, 11
CODES = {SHORT: "H", LONG: "I", RATIONAL: "II", ASCII: "c", FLOAT: "f"}
EXIF_IFD, ORIENTATION, FOCAL, FOCAL_35MM = 0x8769, 0x0112, 0x920A, 0xA405
PIXEL_X, PIXEL_Y, PLANE_X, PLANE_Y, PLANE_UNIT = 0xA002, 0xA003, 0xA20E, 0xA20F, 0xA210


def build_tiff(ifd0, exif, order="<"):
    """(TIFF bytes, where): the header, IFD0 at byte 8 (`ifd0`'s entries and the ExifIFD
    pointer), the Exif IFD (`exif`'s), then the values longer than 4 bytes. Entries are
    (tag, type, values), rationals as (numerator, denominator) pairs; where[tag] is the byte
    offset of that tag's 12-byte entry, where["ifd0"] and where["exif"] those of the IFDs."""
    ifd0_at = 8
    exif_at = ifd0_at + 2 + 12 * (len(ifd0) + 1) + 4
    data_at = exif_at + 2 + 12 * len(exif) + 4
    where = {"ifd0": ifd0_at, "exif": exif_at}
    extra = bytearray()

    def ifd(entries, at):
        out = bytearray(struct.pack(order + "H", len(entries)))
        for i, (tag, kind, values) in enumerate(sorted(entries)):
            flat = [x for v in values for x in (v if kind == RATIONAL else (v,))]
            raw = struct.pack(order + CODES[kind][0] * len(flat), *flat)
            where[tag] = at + 2 + 12 * i
            if len(raw) <= 4:
                field = raw.ljust(4, b"\0")
            else:
                field = struct.pack(order + "I", data_at + len(extra))
                extra.extend(raw)
            out += struct.pack(order + "HHI", tag, kind, len(values)) + field
        return bytes(out + struct.pack(order + "I", 0))

    head = (b"II" if order == "<" else b"MM") + struct.pack(order + "HI", 42, ifd0_at)
    body = ifd(list(ifd0) + [(EXIF_IFD, LONG, [exif_at])], ifd0_at) + ifd(list(exif), exif_at)
    return head + body + bytes(extra), where


def patch(data, at, fmt, value, order):
    """`data` with `value` packed as `fmt` at byte `at`."""
    raw = struct.pack(order + fmt, value)
    return data[:at] + raw + data[at + len(raw):]


def segment(marker, payload):
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def jpeg(tiff=None, xmp=True):
    """A JPEG's header as cameras write it: SOI, APP0 (JFIF), an XMP APP1, the Exif APP1 (when
    `tiff` is given), a quantisation table, the start of scan and a stub of image data."""
    parts = [b"\xff\xd8", segment(0xE0, b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0")]
    if xmp:
        parts.append(segment(0xE1, b"http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>"))
    if tiff is not None:
        parts.append(segment(0xE1, b"Exif\0\0" + tiff))
    parts += [segment(0xDB, bytes(65)), segment(0xDA, bytes(10)), b"\x12\x34" * 8, b"\xff\xd9"]
    return b"".join(parts)


def png(exif=None):
    """A 16x16 grey PNG, with an eXIf chunk holding `exif` (TIFF bytes) when given."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + bytes(16) for _ in range(16))
    parts = [b"\x89PNG\r\n\x1a\n", chunk(b"IHDR", struct.pack(">IIBBBBB", 16, 16, 8, 0, 0, 0, 0))]
    if exif is not None:
        parts.append(chunk(b"eXIf", exif))
    return b"".join(parts + [chunk(b"IDAT", zlib.compress(rows)), chunk(b"IEND", b"")])


def phone_exif(f35=None, focal=None, plane=None, unit=None, dims=None, orientation=None):
    """(ifd0, exif) entries: the tags given (focal as a rational pair, plane the focal-plane
    resolution's rational pair for x and y, dims PixelX/YDimension)."""
    ifd0 = [(ORIENTATION, SHORT, [orientation])] if orientation else []
    exif = []
    if f35 is not None:
        exif.append((FOCAL_35MM, SHORT, [f35]))
    if focal is not None:
        exif.append((FOCAL, RATIONAL, [focal]))
    if plane is not None:
        exif += [(PLANE_X, RATIONAL, [plane]), (PLANE_Y, RATIONAL, [plane])]
    if unit is not None:
        exif.append((PLANE_UNIT, SHORT, [unit]))
    if dims is not None:
        exif += [(PIXEL_X, LONG, [dims[0]]), (PIXEL_Y, LONG, [dims[1]])]
    return ifd0, exif


def photo(order="<", **tags):
    return jpeg(build_tiff(*phone_exif(**tags), order)[0])


def equivalent_px(focal_35mm, width, height):
    return focal_35mm * np.hypot(width, height) / np.hypot(36.0, 24.0)


# ---------------------------------------------------------------- focal lengths from EXIF

@pytest.mark.parametrize("order", ORDERS)
def test_35mm_equivalent_gives_the_focal_length_in_pixels(order, tmp_path):
    data = photo(order, f35=26, dims=(4032, 3024), orientation=1)
    cam = camera_for_image(data, 4032, 3024)
    assert cam.source == "exif" and cam.notes == ()
    assert cam.focal_px == pytest.approx(26 * 5040 / 43.2666, rel=1e-4)   # 3028.6 px
    assert (cam.cx, cam.cy) == (2016.0, 1512.0)
    assert cam.diagonal_fov_deg == pytest.approx(2 * np.degrees(np.arctan(FILM_DIAGONAL_MM / 2 / 26)))
    path = tmp_path / "phone.jpg"
    path.write_bytes(data)
    assert camera_for_image(path, 4032, 3024) == cam   # a path reads as its bytes do
    assert camera_for_image(str(path), 4032, 3024) == cam
    # Resized to half: the equivalent is relative to the diagonal, so it still holds.
    assert camera_for_image(data, 2016, 1512).focal_px == pytest.approx(cam.focal_px / 2)
    # Turned upright (Orientation 6, as a reader that applies it gives it): the same diagonal.
    turned = camera_for_image(photo(order, f35=26, dims=(4032, 3024), orientation=6), 3024, 4032)
    assert turned.focal_px == pytest.approx(cam.focal_px) and turned.notes == ()


# 4.25 mm lens on a sensor 5.6 mm across 4032 pixels: 4.25 * 4032 / 5.6 = 3060 px.
SENSOR_PX = 4.25 * 4032 / 5.6
PLANES = {2: (18288, 1),   # pixels per inch: 4032 / 5.6 * 25.4
          3: (7200, 1),    # pixels per centimetre
          None: (18288, 1)}   # no unit: EXIF's default, inches


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("unit", sorted(PLANES, key=str))
def test_focal_length_and_sensor_size_give_the_focal_length_in_pixels(order, unit):
    tags = dict(focal=(17, 4), plane=PLANES[unit], unit=unit, dims=(4032, 3024))
    cam = camera_for_image(photo(order, **tags), 4032, 3024)
    assert cam.source == "exif" and cam.notes == ()
    assert cam.focal_px == pytest.approx(SENSOR_PX)
    # Resized to a quarter: the sensor's pixels per mm count the camera's pixels, so scaled.
    assert camera_for_image(photo(order, **tags), 1008, 756).focal_px == pytest.approx(SENSOR_PX / 4)
    # Orientation 6 read upright (756 x 1008) or as stored (1008 x 756): the same camera.
    turned = photo(order, orientation=6, **tags)
    for size in ((756, 1008), (1008, 756)):
        cam = camera_for_image(turned, *size)
        assert cam.focal_px == pytest.approx(SENSOR_PX / 4) and cam.notes == (), size


def test_35mm_equivalent_wins_over_the_sensor_size():
    both = photo(f35=50, focal=(17, 4), plane=(7200, 1), unit=3, dims=(4032, 3024))
    assert camera_for_image(both, 4032, 3024).focal_px == pytest.approx(equivalent_px(50, 4032, 3024))


def test_unknown_or_implausible_35mm_falls_to_the_sensor_then_to_the_default():
    sensor = dict(focal=(17, 4), plane=(7200, 1), unit=3, dims=(4032, 3024))
    unknown = camera_for_image(photo(f35=0, **sensor), 4032, 3024)   # 0: EXIF's "unknown"
    assert unknown.focal_px == pytest.approx(SENSOR_PX) and unknown.notes == ()
    wild = camera_for_image(photo(f35=5000, **sensor), 4032, 3024, what="zoom.jpg")
    assert wild.focal_px == pytest.approx(SENSOR_PX) and wild.source == "exif"
    assert wild.notes == ("zoom.jpg: implausible EXIF: FocalLengthIn35mmFilm is 5000 mm (outside 8-1200 mm); "
                          "used its FocalLength and sensor size",)
    alone = camera_for_image(photo(f35=3), 640, 480, what="zoom.jpg")
    assert alone == default_camera(640, 480, alone.notes)
    assert alone.notes == (f"zoom.jpg: implausible EXIF: FocalLengthIn35mmFilm is 3 mm (outside 8-1200 mm); "
                           f"{FALLBACK}",)
    # A sensor 100 times too fine (a unit in mm written as cm): a 2600 mm lens on 35 mm film.
    fine = camera_for_image(photo(focal=(17, 4), plane=(720000, 1), unit=3, dims=(4032, 3024)), 4032, 3024)
    assert fine.source == "default" and "35 mm equivalent (outside 8-1200 mm)" in fine.notes[0]
    relative = camera_for_image(photo(focal=(17, 4), plane=(7200, 1), unit=1), 4032, 3024)   # 1: no unit
    assert relative.source == "default" and "FocalPlaneResolutionUnit is not a unit of length" in relative.notes[0]


def test_exif_without_a_focal_length_or_sensor_size_gives_the_default_silently():
    for tags in (dict(orientation=1), dict(focal=(17, 4)), dict(focal=(0, 0), plane=(7200, 1), unit=3)):
        assert camera_for_image(photo(**tags), 4032, 3024) == default_camera(4032, 3024), tags


def test_a_cropped_photo_gets_a_note():
    cam = camera_for_image(photo(f35=26, dims=(4032, 3024)), 3000, 3000, what="crop.jpg")
    assert cam.source == "exif"
    assert cam.notes == ("crop.jpg: the photo is 3000x3000 but its EXIF says 4032x3024: "
                         "if it was cropped, the focal length from EXIF is off",)


# ---------------------------------------------------------------- no EXIF, other files

def test_no_exif_gives_the_default_camera_with_no_note():
    cam = camera_for_image(jpeg(), 640, 480)
    assert cam == default_camera(640, 480) and cam.source == "default" and cam.notes == ()
    assert cam.diagonal_fov_deg == pytest.approx(DEFAULT_DIAGONAL_FOV_DEG)
    assert read_exif(jpeg()) is None and read_exif(jpeg(xmp=False)) is None
    assert camera_for_image(png(), 640, 480) == default_camera(640, 480)
    assert camera_for_image(b"not an image at all", 640, 480) == default_camera(640, 480)


@pytest.mark.parametrize("order", ORDERS)
def test_a_png_eXIf_chunk_reads_as_a_jpegs_exif_does(order):
    tiff = build_tiff(*phone_exif(f35=26), order)[0]
    assert read_exif(png(tiff)) == read_exif(jpeg(tiff))
    assert camera_for_image(png(tiff), 4032, 3024).focal_px == pytest.approx(equivalent_px(26, 4032, 3024))


def test_an_unreadable_path_is_a_named_error(tmp_path):
    with pytest.raises(SmplIkError, match=r"^gone.jpg: cannot be read"):
        camera_for_image(tmp_path / "gone.jpg", 640, 480)


# ---------------------------------------------------------------- corrupt EXIF

def corrupt(order):
    """name -> (JPEG bytes with one thing broken, the words the note must hold)."""
    tiff, at = build_tiff(*phone_exif(f35=26, focal=(17, 4), plane=(7200, 1), unit=3, dims=(4032, 3024),
                                      orientation=1), order)
    n = len(tiff)
    return {
        "offset past the end": (patch(tiff, at[FOCAL] + 8, "I", 10 ** 6, order),
                                f"FocalLength's 1 value(s) at byte 1000000 run past the EXIF's {n} bytes"),
        "Exif IFD past the end": (patch(tiff, at[EXIF_IFD] + 8, "I", n + 100, order),
                                  f"the Exif IFD at byte {n + 100} lies outside the EXIF's {n} bytes"),
        "IFD0 past the end": (patch(tiff, 4, "I", 2 ** 32 - 1, order), "IFD0 at byte 4294967295 lies outside"),
        "IFD pointer loop": (patch(tiff, at[EXIF_IFD] + 8, "I", at["ifd0"], order),
                             "the ExifIFD pointer loops back to IFD0 (byte 8)"),
        "count of 2^31": (patch(tiff, at[FOCAL_35MM] + 4, "I", 2 ** 31, order),
                          "FocalLengthIn35mmFilm's 2147483648 value(s) at byte "),
        "65535 entries": (patch(tiff, at["exif"], "H", 0xFFFF, order), "holds 65535 entries, running past"),
        "cut short": (tiff[:at[FOCAL]], f"entries, running past the EXIF's {at[FOCAL]} bytes"),
        "text for a number": (patch(tiff, at[FOCAL] + 2, "H", ASCII, order), "FocalLength is of TIFF type 2"),
        "pointer not an offset": (patch(tiff, at[EXIF_IFD] + 2, "H", FLOAT, order), "not a byte offset"),
        "no value": (patch(tiff, at[FOCAL_35MM] + 4, "I", 0, order), "FocalLengthIn35mmFilm holds no value"),
        "byte order": (b"XX" + tiff[2:], "unknown byte order b'XX'"),
        "magic": (patch(tiff, 2, "H", 43, order), "magic number is 43, not 42"),
        "header": (tiff[:5], "its TIFF header is cut short (5 bytes)"),
    }


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", sorted(corrupt("<")))
def test_a_corrupt_exif_gives_the_default_camera_with_a_note(order, case, tmp_path):
    tiff, words = corrupt(order)[case]
    path = tmp_path / "broken.jpg"
    path.write_bytes(jpeg(tiff))
    cam = camera_for_image(path, 4032, 3024)
    assert cam == default_camera(4032, 3024, cam.notes)
    (note,) = cam.notes
    assert note.startswith("broken.jpg: corrupt EXIF: ") and note.endswith(f"; {FALLBACK}"), note
    assert words in note, note


def test_a_file_cut_inside_its_exif_segment_gives_a_note():
    whole = photo(f35=26)
    cut = whole[:whole.index(b"Exif\0\0") + 20]
    (note,) = camera_for_image(cut, 640, 480, what="cut.jpg").notes
    assert note.startswith("cut.jpg: corrupt EXIF: its segment says ") and "the file ends after 20" in note
    (note,) = camera_for_image(png(build_tiff(*phone_exif(f35=26))[0])[:60], 640, 480).notes
    assert note.startswith("the photo: corrupt EXIF: its eXIf chunk says ")


def test_an_ifd_chain_that_loops_is_never_followed():
    # IFD0's next-IFD pointer (the thumbnail's IFD1) pointing back at IFD0: only ExifIFD is
    # followed, so the file reads, and at once.
    tiff, at = build_tiff(*phone_exif(f35=26))
    end_of_ifd0 = at["exif"] - 4
    looped = patch(tiff, end_of_ifd0, "I", at["ifd0"], "<")
    assert camera_for_image(jpeg(looped), 4032, 3024).focal_px == pytest.approx(equivalent_px(26, 4032, 3024))


VALID = photo(">", f35=26, focal=(17, 4), plane=(7200, 1), unit=3, dims=(4032, 3024), orientation=6)


@settings(max_examples=300, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_damage_to_the_file_gives_a_camera_never_an_exception(data):
    """Cut, bit-flipped or overwritten anywhere in its header: a Camera (an EXIF reading, or the
    default with a note naming the file or none), never another exception."""
    raw = bytearray(VALID[:data.draw(st.integers(2, len(VALID)), label="cut at")])
    for _ in range(data.draw(st.integers(0, 6), label="flips")):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.sampled_from([raw[i] ^ (1 << data.draw(st.integers(0, 7))), 0, 0xFF]))
    cam = camera_for_image(bytes(raw), 4032, 3024, what="fuzz.jpg")
    assert isinstance(cam, Camera) and np.isfinite(cam.focal_px) and cam.focal_px > 0
    assert 8 <= cam.focal_px * FILM_DIAGONAL_MM / cam.diagonal_px <= 1200
    assert all(note.startswith("fuzz.jpg: ") for note in cam.notes)
    if cam.source == "default" and cam.notes:
        assert cam.notes[-1].endswith(FALLBACK)


# ---------------------------------------------------------------- a second reader agrees

@pytest.mark.parametrize("fmt", ("JPEG", "PNG"))
def test_pillows_exif_reads_the_same(fmt):
    """Pillow (tests only; the runtime never imports it) writes an EXIF the way many programs
    do; read_exif gives its values."""
    Image = pytest.importorskip("PIL.Image")
    from PIL.TiffImagePlugin import IFDRational

    exif = Image.Exif()
    exif[ORIENTATION] = 8
    sub = exif.get_ifd(EXIF_IFD)
    sub.update({FOCAL_35MM: 28, FOCAL: IFDRational(473, 100), PIXEL_X: 640, PIXEL_Y: 480,
                PLANE_X: IFDRational(640 * 254, 48), PLANE_Y: IFDRational(480 * 254, 36), PLANE_UNIT: 2})
    buffer = io.BytesIO()
    Image.new("RGB", (640, 480)).save(buffer, fmt, exif=exif.tobytes())
    info = read_exif(buffer.getvalue())
    back = Image.open(io.BytesIO(buffer.getvalue())).getexif()
    ours = (info.orientation, info.focal_length_35mm, info.focal_length_mm, info.pixel_width, info.pixel_height,
            info.focal_plane_x_resolution, info.focal_plane_y_resolution, info.focal_plane_unit_mm)
    theirs = back.get_ifd(EXIF_IFD)
    assert ours == pytest.approx((back[ORIENTATION], theirs[FOCAL_35MM], float(theirs[FOCAL]), theirs[PIXEL_X],
                                  theirs[PIXEL_Y], float(theirs[PLANE_X]), float(theirs[PLANE_Y]), 25.4))
    assert info.rotated


def test_the_runtime_reads_exif_without_pillow_or_opencv():
    code = ("import sys; from models.photo.camera import camera_for_image; "
            f"camera_for_image({photo(f35=26)!r}, 640, 480); "
            "print(sorted(m for m in ('PIL', 'cv2', 'mediapipe') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def shared_photos():
    if not IMAGES.is_dir():
        pytest.skip(f"{IMAGES} is not here (photos of people from ../shared/data/images)")
    photos = sorted(p for p in IMAGES.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    if not photos:
        pytest.skip(f"{IMAGES} holds no JPEG or PNG")
    return photos


def test_shared_photos_read_as_pillow_reads_them(shared_photos):
    """Every photo in ../shared/data/images: EXIF where Pillow finds one, and a Camera with the
    default field of view where it finds none."""
    Image = pytest.importorskip("PIL.Image")
    for path in shared_photos:
        with Image.open(path) as im:
            width, height = im.size
            theirs = im.getexif().get_ifd(EXIF_IFD)
        cam = camera_for_image(path, width, height)
        assert all(note.startswith(path.name) for note in cam.notes), (path, cam.notes)
        info = read_exif(path)
        if FOCAL_35MM in theirs:
            assert info.focal_length_35mm == theirs[FOCAL_35MM], path
        if not theirs:
            assert info is None or info.focal_length_35mm is info.focal_length_mm is None, path
            assert cam.source == "default" and cam.notes == (), (path, cam)


# ---------------------------------------------------------------- the pinhole and sizes

def test_project_puts_the_axis_at_the_centre_and_45_degrees_f_pixels_off():
    cam = camera_for_image(photo(f35=26), 4032, 3024)
    f = cam.focal_px
    points = np.array([[0, 0, -3.0],        # on the optical axis (the camera looks along -Z)
                       [1, 0, -1.0],        # 45 degrees right
                       [0, 2, -2.0],        # 45 degrees up: up the picture is fewer pixels down
                       [0.5, -0.25, -5.0],
                       [0, 0, 1.0]])        # behind the camera
    uv = cam.project(points)
    np.testing.assert_allclose(uv[:4], [[2016, 1512], [2016 + f, 1512], [2016, 1512 - f],
                                        [2016 + 0.1 * f, 1512 + 0.05 * f]])
    assert np.isnan(uv[4]).all()
    assert cam.project(points.reshape(5, 1, 3)).shape == (5, 1, 2)


def test_image_sizes_too_small_or_too_large_are_refused_by_name():
    with pytest.raises(SmplIkError, match=r"^dot.png is 1x1 pixels: too small to find a person in"):
        check_image_size(1, 1, "dot.png")
    with pytest.raises(SmplIkError, match=r"^huge.jpg is 20000x20000 pixels \(400 megapixels\): too large"):
        check_image_size(20000, 20000, "huge.jpg")
    check_image_size(16, 16)
    for size in ((1, 1), (20000, 20000)):
        with pytest.raises(SmplIkError, match=rf"^the photo is {size[0]}x{size[1]} pixels"):
            camera_for_image(photo(f35=26), *size)

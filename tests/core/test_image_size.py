"""An image's size from its header: what Pillow reads for every format it writes, None (never an
error or a long read) for anything else."""
import struct
import time
from pathlib import Path

import pytest

from models.photo.image_size import image_size_from_header

IMAGES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "images"


@pytest.mark.parametrize("fmt, mode, options", [
    ("PNG", "RGB", {}), ("PNG", "L", {}), ("PNG", "1", {}), ("JPEG", "RGB", {}), ("JPEG", "L", {}),
    ("JPEG", "RGB", {"progressive": True}), ("GIF", "P", {}), ("BMP", "RGB", {}),
    ("WEBP", "RGB", {}), ("WEBP", "RGB", {"lossless": True}), ("WEBP", "RGBA", {}),
])
def test_the_header_gives_the_size_pillow_reads(tmp_path, fmt, mode, options):
    Image = pytest.importorskip("PIL.Image")
    from PIL import features

    if fmt == "WEBP" and not features.check("webp"):
        pytest.skip("this Pillow writes no WebP")
    for size in ((123, 45), (45, 123), (1, 1), (3000, 17)):
        path = tmp_path / f"x.{fmt.lower()}"
        Image.new(mode, size).save(path, fmt, **options)
        assert image_size_from_header(path) == size == Image.open(path).size


def test_a_bmp_stored_top_down_has_its_height_positive(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    path = tmp_path / "x.bmp"
    Image.new("RGB", (20, 30)).save(path)
    data = bytearray(path.read_bytes())
    data[22:26] = struct.pack("<i", -30)   # a negative height: rows top-down
    path.write_bytes(bytes(data))
    assert image_size_from_header(path) == (20, 30)


@pytest.mark.skipif(not IMAGES.is_dir(), reason=f"{IMAGES} not found (the shared photos are absent)")
def test_the_shared_photos_read_as_opencv_reads_them():
    cv2 = pytest.importorskip("cv2")
    for path in sorted(IMAGES.glob("*.*")):
        height, width = cv2.imread(str(path)).shape[:2]
        assert image_size_from_header(path) == (width, height), path.name


def test_a_huge_png_is_sized_without_reading_its_pixels(tmp_path):
    path = tmp_path / "huge.png"
    ihdr = struct.pack(">IIBBBBB", 20_000, 20_000, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\x00" * 4)   # no pixels at all
    assert image_size_from_header(path) == (20_000, 20_000)


def test_cut_broken_or_other_files_give_none_quickly(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    jpeg = tmp_path / "real.jpg"
    Image.new("RGB", (64, 48)).save(jpeg)
    whole = jpeg.read_bytes()
    sof = whole.index(b"\xff\xc0")
    cases = {
        "text": b"not a picture\n",
        "empty": b"",
        "png cut in its header": b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00",
        "png of width 0": b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR"
                          + struct.pack(">IIBBBBB", 0, 5, 8, 2, 0, 0, 0),
        "jpeg cut before its frame": whole[:sof],
        "jpeg cut in its frame": whole[:sof + 6],
        "jpeg of fill bytes": b"\xff\xd8" + b"\xff" * 5_000_000,
        "jpeg of zero-length segments": b"\xff\xd8" + b"\xff\xe0\x00\x00" * 10_000,
        "jpeg of empty segments": b"\xff\xd8" + b"\xff\xe0\x00\x02" * 1_000_000,
        "webp cut": b"RIFF\x00\x00\x00\x00WEBPVP8 ",
    }
    for name, data in cases.items():
        path = tmp_path / "case"
        path.write_bytes(data)
        start = time.perf_counter()
        assert image_size_from_header(path) is None, name
        assert time.perf_counter() - start < 0.5, name
    with pytest.raises(OSError):
        image_size_from_header(tmp_path / "missing.png")

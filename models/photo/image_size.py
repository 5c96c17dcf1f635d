"""An image file's size in pixels read from its header alone (PNG, JPEG, GIF, BMP, WebP), so a
photo too large to read is refused before anything decodes its pixels: Blender's image.size
decodes the whole image (1.6 GB for a 20,000 x 20,000 photo) before it answers.

Pure Python; at most a few kilobytes are read besides the JPEG segments skipped over, and a
cut or hostile header gives None (the caller then asks the image reader), never an error.
"""
import struct

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_JPEG_SEGMENTS = 4096   # a JPEG's frame header (SOF) comes after its tables; more is not a JPEG
MAX_FILL = 64              # 0xFF fill bytes allowed before a marker
# JPEG markers that start a frame and hold its size: SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC).
JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def image_size_from_header(path):
    """(width, height) in pixels of the image file at `path` as its header states them (the
    image as stored, before any EXIF Orientation), or None when the format is not one of
    PNG, JPEG, GIF, BMP and WebP or its header is cut short or makes no sense. OSError when
    the file cannot be opened."""
    with open(path, "rb") as f:
        head = f.read(32)
        if head.startswith(PNG_SIGNATURE):
            return _png(head)
        if head.startswith(b"\xff\xd8"):
            f.seek(2)
            return _jpeg(f)
        if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
            return struct.unpack("<HH", head[6:10])
        if head.startswith(b"BM") and len(head) >= 26:
            width, height = struct.unpack("<ii", head[18:26])
            return _positive(width, abs(height))   # a negative height: rows stored top-down
        if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
            return _webp(head)
    return None


def _positive(width, height):
    return (int(width), int(height)) if width > 0 and height > 0 else None


def _png(head):
    if len(head) < 24 or head[12:16] != b"IHDR":
        return None
    return _positive(*struct.unpack(">II", head[16:24]))


def jpeg_segments(f, limit=MAX_JPEG_SEGMENTS):
    """Walk a JPEG's marker segments, `f` just after its SOI: yields (marker, length) with `f` at
    the segment's payload of `length` bytes, and goes on after the payload whatever the caller
    read of it. Ends at EOI or SOS (the image data), at anything that is not a marker (a cut or
    damaged file) and after `limit` markers."""
    for _ in range(limit):
        if f.read(1) != b"\xff":
            return                      # not at a marker: cut short or not a JPEG
        byte = f.read(1)
        for _ in range(MAX_FILL):       # fill bytes before the marker's code
            if byte != b"\xff":
                break
            byte = f.read(1)
        if not byte or byte == b"\xff":
            return
        marker = byte[0]
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:   # TEM, RSTn, SOI: no length follows
            continue
        if marker in (0xD9, 0xDA):       # EOI, or SOS: the scan's data
            return
        raw = f.read(2)
        if len(raw) < 2 or struct.unpack(">H", raw)[0] < 2:
            return
        length = struct.unpack(">H", raw)[0] - 2
        start = f.tell()
        yield marker, length
        f.seek(start + length)


def _jpeg(f):
    for marker, _length in jpeg_segments(f):
        if marker in JPEG_SOF:
            frame = f.read(5)            # precision, height, width
            if len(frame) < 5:
                return None
            height, width = struct.unpack(">HH", frame[1:5])
            return _positive(width, height)   # a height of 0 (set by a later DNL) is not read
    return None


def _webp(head):
    kind, data = head[12:16], head[20:]
    if kind == b"VP8 " and len(data) >= 10 and data[3:6] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[6:10])
        return _positive(width & 0x3FFF, height & 0x3FFF)
    if kind == b"VP8L" and len(data) >= 5 and data[0] == 0x2F:
        bits = int.from_bytes(data[1:5], "little")
        return _positive((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if kind == b"VP8X" and len(data) >= 10:
        return _positive(int.from_bytes(data[4:7], "little") + 1, int.from_bytes(data[7:10], "little") + 1)
    return None

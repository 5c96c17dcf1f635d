"""Test videos written with OpenCV from a shared photo of a standing person (tests/core and
tests/blender both make them)."""
from pathlib import Path

import numpy as np

IMAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "images"
PHOTO = IMAGES / "bus.jpg"
PERSON_BOX = (0, 380, 300, 960)   # bus.jpg's left person, head to feet, with a margin (x0, y0, x1, y1)
SIZE = (1280, 720)                # 720p
FPS = 30.0


def standing_clip(path, frames=24, size=SIZE, fps=FPS, seed=0, blank=(), box=PERSON_BOX):
    """Write an mp4 of bus.jpg's left person standing still, as a handheld camera sees them:
    the photo cut to the person, 95% of the frame high, drifting 0.2 pixels right a frame with
    0.5 pixels of random shake and a 0.4% breathing zoom; the frames in `blank` plain grey
    (nobody there). box: the part of the photo shown (None: all of it, three people).
    Returns the path."""
    import cv2

    image = cv2.imread(str(PHOTO))
    if box is not None:
        x0, y0, x1, y1 = box
        image = image[y0:y1, x0:x1]
    height = int(size[1] * 0.95)
    width = int(round(image.shape[1] * height / image.shape[0]))
    image = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    rng = np.random.default_rng(seed)
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
    for t in range(frames):
        s = 1.0 + 0.004 * np.sin(t / 7.0)
        dx = (size[0] - width * s) / 2 + 0.5 * rng.normal() + 0.2 * t
        dy = (size[1] - height * s) / 2 + 0.5 * rng.normal()
        frame = cv2.warpAffine(image, np.array([[s, 0, dx], [0, s, dy]]), size,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=(90, 90, 90))
        if t in blank:
            frame[:] = 90
        out.write(frame)
    out.release()
    return Path(path)


def empty_clip(path, size=(320, 240), fps=FPS):
    """A video opened for writing and closed with no frame written: an .avi (Motion JPEG) has
    a header that opens with no frames in it, an .mp4 (MPEG-4) not even a header."""
    import cv2

    codec = "MJPG" if Path(path).suffix.lower() == ".avi" else "mp4v"
    cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*codec), fps, size).release()
    return Path(path)

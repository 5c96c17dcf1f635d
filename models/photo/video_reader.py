"""A video file opened for reading: the checks that say why a path is not a video, and the
OpenCV reader that hands out its frames."""
import math
from pathlib import Path

from ..core.errors import SmplIkError
from .image_size import image_size_from_header
from .runtime import require_packages

VIDEO_SUFFIXES = (".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm", ".mpg", ".mpeg", ".wmv", ".flv")
DEFAULT_FPS = 30.0         # a video whose file states no frame rate


def video_path(path):
    """The Path of a video file; SmplIkError when none is given, there is no such file or it
    is a still image."""
    if not str(path).strip():
        raise SmplIkError("no video was given: choose a video file (the file path is empty)")
    p = Path(path)
    if not p.is_file():
        raise SmplIkError(f"{p}: no such file")
    try:
        still = image_size_from_header(p)
    except OSError as exc:
        raise SmplIkError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    if still is not None:
        raise SmplIkError(f"{p.name} is a still image, not a video: use Pose from Photo for it")
    return p


class VideoReader:
    """A video opened with OpenCV: width, height, fps, count (frames as the file states, maybe
    0 or approximate); read(skip) the next frame as (H, W, 3) BGR after skipping `skip`.
    SmplIkError (video_path's, or a file OpenCV cannot read); MissingPackage without OpenCV."""

    def __init__(self, path):
        require_packages("pose from a video")
        import cv2

        self.cv2 = cv2
        self.path = video_path(path)
        self.capture = cv2.VideoCapture(str(self.path))
        if not self.capture.isOpened():
            self.capture.release()
            raise SmplIkError(f"{self.path.name}: not a video OpenCV can read (not a video file, or one with "
                              "no frames)")
        self.width = int(self.capture.get(cv2.CAP_PROP_FRAME_WIDTH))
        self.height = int(self.capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
        fps = float(self.capture.get(cv2.CAP_PROP_FPS) or 0.0)
        self.fps_note = None
        if not (math.isfinite(fps) and 1.0 <= fps <= 1000.0):
            self.fps_note = f"{self.path.name} states no frame rate: taken as {DEFAULT_FPS:g} fps"
            fps = DEFAULT_FPS
        self.fps = fps
        self.count = max(int(self.capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0), 0)

    def seek(self, frame):
        """Skip to source frame `frame` (decoding the frames before it: seeking by time is not
        frame-exact in every container)."""
        for _ in range(frame):
            if not self.capture.grab():
                return False
        return True

    def read(self, skip=0):
        for _ in range(skip):
            if not self.capture.grab():
                return None
        ok, frame = self.capture.read()
        return frame if ok and frame is not None and frame.size else None

    def close(self):
        self.capture.release()

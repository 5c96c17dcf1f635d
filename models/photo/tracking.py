"""The person followed through a video: the landmarker tracking them from frame to frame, a
fresh search wherever tracking starts or is lost, and their keypoints filtered (One Euro)."""
import numpy as np

from ..core.errors import SmplIkError
from ..motion.temporal import OneEuro
from .detect import Detection, box_iou, detect_people, detection_of, grey_out, new_landmarker

# Frames are scaled down to this many pixels along their longer side for the landmarker (it
# looks at 256 pixels of the person anyway); fits use full pixels.
DETECT_LONG_SIDE = 640
SAME_PERSON = 0.3          # a new detection overlapping the last box by less is someone else
# The One Euro filter on the keypoints (image positions over the box diagonal, 3D landmarks in
# metres): the cutoff (Hz) is ONE_EURO_MIN_CUTOFF at rest, rising by ONE_EURO_BETA per unit/s.
ONE_EURO_MIN_CUTOFF = 1.5
ONE_EURO_BETA = 20.0
ONE_EURO_D_CUTOFF = 1.0


def keypoint_filter():
    """A new One Euro filter for a person's packed keypoints (PersonTracker's)."""
    return OneEuro(ONE_EURO_MIN_CUTOFF, ONE_EURO_BETA, ONE_EURO_D_CUTOFF)


def _scaled(detection, factor):
    """A Detection found on an image scaled by `factor`, in the full image's pixels."""
    return Detection(world=detection.world, image_xy=detection.image_xy / factor,
                     visibility=detection.visibility, bbox=tuple(v / factor for v in detection.bbox))


def _ordinal(n):
    """'1st', '2nd', '3rd', '4th', ... '11th', '21st'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class PersonTracker:
    """The person followed through a video: the landmarker in tracking mode on frames scaled down to
    DETECT_LONG_SIDE. The person is chosen (largest first, `person` from 0) on the first frame
    with people; whenever tracking starts or is lost, that frame is searched for people in
    static mode and everyone but the person followed (the one overlapping their last box) is
    greyed out, so the tracker takes them up again and nobody else."""

    def __init__(self, width, height, person, temporal, smooth):
        self.factor = min(1.0, DETECT_LONG_SIDE / max(width, height))
        self.size = (max(int(round(width * self.factor)), 1), max(int(round(height * self.factor)), 1))
        self.person, self.temporal = int(person), temporal
        self.pose = new_landmarker(tracking=True, what="pose from a video") if temporal else None
        self.last = None            # the last found Detection (full pixels)
        self.tracking = False
        self.filter = keypoint_filter() if temporal and smooth else None

    def close(self):
        self.pose = None

    def _people(self, rgb, name, frame):
        people = [_scaled(d, self.factor) for d in detect_people(rgb, max_people=max(3, self.person + 2), passes=1,
                                                                   tiles=False)]
        if self.last is None and people and self.person >= len(people):
            found = "only 1 person" if len(people) == 1 else f"only {len(people)} people"
            raise SmplIkError(f"{name}: the first frame with people (frame {frame}) shows {found}, so there is "
                              f"no {_ordinal(self.person + 1)} largest person to follow")
        return people

    def __call__(self, bgr, name, frame, time):
        """The person's Detection on one frame (full pixels), or None where they are not found."""
        import cv2

        small = cv2.resize(bgr, self.size, interpolation=cv2.INTER_AREA) if self.factor < 1.0 else bgr
        rgb = np.ascontiguousarray(cv2.cvtColor(small, cv2.COLOR_BGR2RGB))
        width, height = bgr.shape[1], bgr.shape[0]
        found = None
        if not self.temporal:
            people = self._people(rgb, name, frame)
            found = people[self.person] if self.person < len(people) else None
        elif self.tracking:
            found = detection_of(self.pose(rgb), width, height)
            if found is not None and box_iou(found.bbox, self.last.bbox) < SAME_PERSON ** 2:
                found = None   # it jumped to someone else
            self.tracking = found is not None
        if self.temporal and found is None:   # tracking starts, or was lost: search this frame
            people = self._people(rgb, name, frame)
            chosen = None
            if self.last is None:
                chosen = people[self.person] if people else None
            elif people:
                best = max(people, key=lambda d: box_iou(d.bbox, self.last.bbox))
                chosen = best if box_iou(best.bbox, self.last.bbox) >= SAME_PERSON else None
            found = None
            if chosen is not None:
                for other in people:
                    if other is not chosen:
                        grey_out(rgb, tuple(v * self.factor for v in other.bbox))
                tracked = detection_of(self.pose(rgb), width, height)
                self.tracking = tracked is not None and box_iou(tracked.bbox, chosen.bbox) >= SAME_PERSON
                found = tracked if self.tracking else chosen
        if found is None:
            return None
        self.last = found
        if self.filter is not None:
            x0, y0, x1, y1 = found.bbox
            diagonal = max(float(np.hypot(x1 - x0, y1 - y0)), 1.0)
            packed = np.concatenate([found.image_xy.ravel() / diagonal, found.world.ravel()])
            packed = self.filter(packed, time)
            n = found.image_xy.size
            found = Detection(world=packed[n:].reshape(-1, 3), image_xy=packed[:n].reshape(-1, 2) * diagonal,
                              visibility=found.visibility, bbox=found.bbox)
        return found

"""Live solving's memory, in one place: the effectors each body was last solved or pinned
with, the last solve's pose (Keep Pose While Dragging), the set of alternative poses being
stepped through, and the flags that pause live solving. Pinning (effectors) and solving (the
depsgraph handler) both write it; it imports nothing of the add-on, so imports go one way.
"""
solved = {}      # body session_uid -> signature of the effectors it was solved or pinned with
suspended = []   # non-empty while a bake drives frames itself
reprime = []     # non-empty after undo, redo or loading a file
unmet = {}       # body session_uid -> names of effectors its last solve left out of reach (soft or given way)
last = {}        # body session_uid -> the IkSolution its last solve wrote (checked against the pose on screen)
alternatives = {}  # body session_uid -> the alternative poses Next / Previous step through (solving.Alternatives)


def signature(objs):
    """What live solving compares: each effector object's settings and world matrix."""
    out = []
    for obj in objs:
        p = obj.smpl_ik_effector
        out.append((obj.name, p.joint, p.kind, p.axis, round(p.weight, 6),
                    tuple(round(v, 7) for row in obj.matrix_world for v in row)))
    return tuple(out)


def mark_solved(arm, objs):
    """Remember a body's enabled effector objects `objs` as they are now (no solve until one
    of them moves)."""
    solved[arm.session_uid] = signature(objs)


# A matrix Blender evaluates from the location, rotation and scale a pin wrote differs from the
# one written in the 7th decimal: closer than this counts as not moved (far below a drag step).
SAME_MATRIX = 1e-6


def _same_matrix(a, b):
    return max(abs(x - y) for x, y in zip(a, b)) <= SAME_MATRIX


def unchanged(before, now):
    """Whether two signatures hold the same effectors, settings and (to SAME_MATRIX) matrices."""
    return before is not None and len(before) == len(now) and all(
        a[:-1] == b[:-1] and _same_matrix(a[-1], b[-1]) for a, b in zip(before, now))


def moved(before, now):
    """Names of the effector objects whose world matrix differs between two signatures: the
    ones being dragged. None moved when there was no signature before (nothing to compare)."""
    if before is None:
        return frozenset()
    was = {entry[0]: entry[-1] for entry in before}
    return frozenset(entry[0] for entry in now if entry[0] in was and not _same_matrix(was[entry[0]], entry[-1]))

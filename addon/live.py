"""Live solving's memory, in one place: the effectors each body was last solved or pinned
with, and the flags that pause live solving. Pinning (effectors) and solving (the depsgraph
handler) both write it; it imports nothing of the add-on, so imports go one way.
"""
solved = {}      # body session_uid -> signature of the effectors it was solved or pinned with
suspended = []   # non-empty while a bake drives frames itself
reprime = []     # non-empty after undo, redo or loading a file


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


"""The SMPL kinematic tree: 24 joint names (smplx's spelling) and parents, defined once."""
from .errors import SmplIkError

JOINT_NAMES = (
    "pelvis", "left_hip", "right_hip", "spine1", "left_knee", "right_knee",
    "spine2", "left_ankle", "right_ankle", "spine3", "left_foot", "right_foot",
    "neck", "left_collar", "right_collar", "head", "left_shoulder", "right_shoulder",
    "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hand", "right_hand",
)

# parents[j] < j for every joint but the root, so a forward pass in index order is valid.
PARENTS = (
    -1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21,
)

NUM_JOINTS = len(JOINT_NAMES)
JOINT_INDEX = {name: i for i, name in enumerate(JOINT_NAMES)}

# SMPL-H and SMPL-X share SMPL's first 22 joints; their hands are finger chains ordered
# index, middle, pinky, ring, thumb (three joints each) starting at these indices.
NUM_BODY_JOINTS_SHARED = 22
FIRST_FINGER_JOINT = {"smplh": (22, 37), "smplx": (25, 40)}
MIDDLE_FINGER_OFFSET = 3  # middle1 is the 4th joint of a hand's chain: SMPL's "hand" joint
JOINT_COUNT_TO_KIND = {24: "smpl", 52: "smplh", 55: "smplx"}
KIND_LABEL = {"smpl": "SMPL", "smplh": "SMPL-H", "smplx": "SMPL-X"}

# MIRROR[j]: the joint on the other side of the body (itself on the midline).
MIRROR = tuple(JOINT_NAMES.index(n.replace("left_", "right_") if n.startswith("left_") else
                                 n.replace("right_", "left_")) for n in JOINT_NAMES)
# CHILDREN[j]: the joints whose parent is j.
CHILDREN = tuple(tuple(c for c in range(NUM_JOINTS) if PARENTS[c] == j) for j in range(NUM_JOINTS))
SINGLE = tuple(j for j in range(NUM_JOINTS) if len(CHILDREN[j]) == 1)   # one child: a bone to point
MULTI = tuple(j for j in range(NUM_JOINTS) if len(CHILDREN[j]) > 1)     # pelvis, spine3
LEAVES = tuple(j for j in range(NUM_JOINTS) if not CHILDREN[j])         # feet, head, hands
# PARENT_OR_SELF[j]: j's parent, or the root itself (for gathers that need an index everywhere).
PARENT_OR_SELF = tuple(max(p, 0) for p in PARENTS)

# Joint groups by name, each with one meaning; `indices(group)` gives their places in JOINT_NAMES.
FEET = (("left_ankle", "left_foot"), ("right_ankle", "right_foot"))   # per side: (ankle, ball of the foot)
FOOT_JOINTS = ("left_ankle", "right_ankle", "left_foot", "right_foot")  # every joint of both feet
# Where each leaf joint (no child) points in SMPL's T-pose, SMPL's axes (Y up, facing +Z): the
# direction of a BVH End Site, of a leaf bone in Blender, and that retargeting aligns a source leaf with.
LEAF_DIRECTION = {"head": (0, 1, 0), "left_foot": (0, 0, 1), "right_foot": (0, 0, 1),
                  "left_hand": (1, 0, 0), "right_hand": (-1, 0, 0)}
SIX_POINTS = ("pelvis", "neck", "left_wrist", "right_wrist", "left_ankle", "right_ankle")  # SMPL-IK's benchmark pins


def joint_index(name):
    """Index of an SMPL joint by name; raises SmplIkError listing valid names otherwise."""
    try:
        return JOINT_INDEX[name]
    except KeyError:
        raise SmplIkError(
            f"unknown SMPL joint {name!r}; valid joints: {', '.join(JOINT_NAMES)}"
        ) from None


def indices(names):
    """(len(names),) tuple: the index of each SMPL joint in `names`, in order."""
    return tuple(JOINT_INDEX[n] for n in names)


def parents_first(parents):
    """An order of the joints (indices) in which every joint comes after its parent: a
    skeleton listed in any order, `parents` (J,) each joint's parent index or -1 for a root.
    Joints keep their relative order where the tree allows. ValueError naming a joint whose
    chain of parents never reaches a root (a loop)."""
    order, placed = [], set()
    while len(order) < len(parents):
        added = [j for j, p in enumerate(parents) if j not in placed and (p < 0 or p in placed)]
        if not added:
            stuck = next(j for j in range(len(parents)) if j not in placed)
            raise ValueError(f"joint {stuck}: its parents loop back to it and never reach a root")
        for j in added:
            order.append(j)
            placed.add(j)
    return order


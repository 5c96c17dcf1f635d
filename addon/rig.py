"""Custom rigs: map a humanoid armature's bones to SMPL's joints, fit an SMPL proxy body to it,
drive the rig from the proxy (so effectors pose the character), and bake the result back
onto the rig's own bones.

The drive: for each mapped joint the proxy gets a hidden helper bone, parented to the joint's
bone, whose rest sits where the rig's bone sits when the proxy is in the rig's rest pose. The
rig bone copies the helper's world rotation and, unless it is connected to its parent, its
location (not its scale: the proxy is in metres, the rig in its own units). Unmapped bones on
the chain between two mapped ones (twist halves) are driven the same way from the joint above
them, so their own keys or constraints cannot kink the chain; other unmapped bones follow
their parents as usual. A generated Rigify rig is driven through its controls instead (the FK
controls and `torso`, with the limbs switched to FK), which Rigify's constraints read to move
the DEF chain, so a transfer keys the bones an animator would.
"""
import bpy
import numpy as np
from bpy.props import BoolProperty, CollectionProperty, IntProperty, PointerProperty, StringProperty
from mathutils import Matrix

from ..models.body.model import load_body_model
from ..models.core.errors import SmplIkError
from ..models.core.kinematics import forward_kinematics
from ..models.core.skeleton import JOINT_NAMES, PARENTS
from ..models.motion.mapping import auto_mapping, rigify_controls
from ..models.motion.rig_fit import fit_rig
from . import bridge
from .body_object import create_body, edit_bones, is_body
from .common import assign_new_action
from .effectors import pin

HELPER_PREFIX = "SMPL-IK drive "
CONSTRAINT_PREFIX = "SMPL-IK "
IK_FK = "IK_FK"   # Rigify's IK/FK switch on a limb's parent control: 0 IK, 1 FK


class SmplIkRigJoint(bpy.types.PropertyGroup):
    joint: StringProperty(name="SMPL joint", options={"HIDDEN"})
    bone: StringProperty(name="Bone", description="The rig's bone at this SMPL joint (empty: none)")


class SmplIkRigProperties(bpy.types.PropertyGroup):
    mapping: CollectionProperty(type=SmplIkRigJoint)
    active_index: IntProperty(options={"HIDDEN"})
    proxy: PointerProperty(name="Proxy", type=bpy.types.Object,
                           description="The SMPL-IK body that drives this rig")
    rigify: BoolProperty(name="Rigify Controls", options={"HIDDEN"},
                         description="The proxy drives this generated Rigify rig's FK controls")


def is_custom_rig(obj):
    return obj is not None and obj.type == "ARMATURE" and not is_body(obj)


def rig_joints(rig):
    """(names, parents, heads (J, 3) in world units relative to the rig's origin, Blender axes)."""
    bones = list(rig.data.bones)
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    world = bridge.matrix_array(rig.matrix_world)
    heads = np.array([b.head_local[:] for b in bones]).reshape(-1, 3) @ world[:3, :3].T
    # parents before children: Blender lists bones in hierarchy order, but do not rely on it
    order, placed = [], set()
    while len(order) < len(bones):
        for i, b in enumerate(bones):
            if i not in placed and (b.parent is None or index[b.parent.name] in placed):
                order.append(i)
                placed.add(i)
    new = {old: k for k, old in enumerate(order)}
    parents = [new[index[bones[i].parent.name]] if bones[i].parent else -1 for i in order]
    return [names[i] for i in order], parents, heads[order]


def mapping_overrides(rig):
    """The rig's mapping list as overrides {joint: bone or None}, or None when empty."""
    items = rig.smpl_ik_rig.mapping
    if not len(items):
        return None
    return {it.joint: (it.bone or None) for it in items}


def fill_mapping(rig, bones):
    """Write {smpl_joint: bone name} into the rig's list (all 24 joints, '' where none)."""
    items = rig.smpl_ik_rig.mapping
    items.clear()
    for joint in JOINT_NAMES:
        it = items.add()
        it.joint = joint
        it.bone = bones.get(joint) or ""


def auto_map(rig):
    """Fill the rig's mapping list from its bone names; returns the joints left unmapped."""
    names = [b.name for b in rig.data.bones]
    found, _ = auto_mapping(names)
    fill_mapping(rig, {joint: names[i] for joint, i in found.items()})
    return [j for j in JOINT_NAMES if j not in found]


def _mat(m):
    return Matrix(np.asarray(m).tolist())


def _proxy_matrix(rig, fit):
    """(4, 4) world matrix of the proxy armature: SMPL-frame metres (Blender axes) to the
    rig's world frame and units, at the rig's origin."""
    m = np.eye(4)   # the inverse of rig frame -> proxy (to_smpl is a rotation, unit a scale)
    m[:3, :3] = bridge.frame_to_blender(fit.to_smpl).T / fit.unit
    m[:3, 3] = bridge.matrix_array(rig.matrix_world)[:3, 3]
    return m


def fit_and_drive(context, rig):
    """Fit a proxy to `rig`, drive the rig from it; returns (proxy, RigFit). All checks come
    first: on SmplIkError the scene is untouched."""
    if not is_custom_rig(rig):
        raise SmplIkError("select a humanoid armature (not an SMPL-IK body) to fit")
    if rig.smpl_ik_rig.proxy is not None and rig.smpl_ik_rig.proxy.users_scene:
        raise SmplIkError(f"{rig.name} is already driven by {rig.smpl_ik_rig.proxy.name}; "
                          "bake it with Transfer to Rig (removing the drive) or delete the proxy first")
    names, parents, heads = rig_joints(rig)
    body = load_body_model()
    fit = fit_rig(names, parents, heads, body, mapping_overrides(rig), label=f"rig {rig.name!r}")

    proxy_world = _proxy_matrix(rig, fit)
    proxy = create_body(context, body, name=f"{rig.name} proxy", betas=fit.betas, rest_joints=fit.proxy_rest)
    proxy.matrix_world = _mat(proxy_world)
    proxy.smpl_ik.rig = rig
    mesh = proxy.smpl_ik.mesh   # the fitted body, scaled to the rig and put on its pelvis
    body_rest = body.rest_joints(fit.betas)
    mesh.scale = (fit.mesh_scale,) * 3
    mesh.location = bridge.to_blender(fit.proxy_rest[0] - body_rest[0] * fit.mesh_scale)

    axes = bridge.bone_axes(proxy)
    fk = forward_kinematics(fit.rig_pose, fit.proxy_rest, PARENTS)
    to_proxy = np.linalg.inv(proxy_world)
    rig_world = bridge.matrix_array(rig.matrix_world)
    controls = rigify_controls(names, {joint: fit.bone_for(joint) for joint in JOINT_NAMES})
    helpers = {}
    for bone, joint in drive_bones(fit, controls):
        j = JOINT_NAMES.index(joint)
        rest = np.eye(4)
        rest[:3, :3], rest[:3, 3] = axes[j], bridge.to_blender(fit.proxy_rest[j])
        at_rig_pose = bridge.joint_matrix(fk.rotations[j], fk.positions[j], axes[j])
        rig_bone = to_proxy @ rig_world @ bridge.matrix_array(rig.data.bones[bone].matrix_local)
        rig_bone[:3, :3] = bridge.orthonormal(rig_bone[:3, :3])
        helpers[bone] = (joint, rest @ np.linalg.inv(at_rig_pose) @ rig_bone)
    with edit_bones(context, proxy) as ebones:
        for bone, (joint, matrix) in helpers.items():
            eb = ebones.new(HELPER_PREFIX + bone)
            eb.tail = (0.0, 0.05, 0.0)  # a zero-length bone cannot take an orientation
            eb.matrix = _mat(matrix)
            eb.parent = ebones[joint]
            eb.use_deform = False
    for bone in helpers:
        proxy.data.bones[HELPER_PREFIX + bone].hide = True
    bridge.write_pose(proxy, fit.rig_pose, np.zeros(3), axes)
    for bone in helpers:
        pb = rig.pose.bones[bone]
        # a connected bone's head is its parent's tail, which the parent's drive already places
        kinds = ("COPY_ROTATION",) if pb.bone.use_connect else ("COPY_ROTATION", "COPY_LOCATION")
        for kind in kinds:
            con = pb.constraints.new(kind)
            con.name = f"{CONSTRAINT_PREFIX}{kind.split('_')[1].lower()}"
            con.target, con.subtarget = proxy, HELPER_PREFIX + bone
    if controls:   # Rigify's ORG chain copies the FK controls only with the limbs in FK
        for pb in rig.pose.bones:
            if IK_FK in pb.keys():
                pb[IK_FK] = 1.0
    rig.smpl_ik_rig.proxy = proxy
    rig.smpl_ik_rig.rigify = bool(controls)
    fill_mapping(rig, {joint: fit.bone_for(joint) for joint in JOINT_NAMES})
    pin(proxy, [])
    return proxy, fit


def drive_bones(fit, controls):
    """[(rig bone, SMPL joint whose helper it copies)]: the mapped bones, or for a joint in
    `controls` (a generated Rigify rig) its controls; then the bones between mapped ones,
    except under controlled joints (Rigify moves its own DEF chain)."""
    out = []
    for joint in JOINT_NAMES:
        if joint in controls:
            out += [(c, joint) for c in controls[joint]]
        elif fit.bone_for(joint) is not None:
            out.append((fit.bone_for(joint), joint))
    out += [(bone, joint) for bone, joint in fit.between if joint not in controls]
    return out


def drive_constraints(rig):
    return [(pb, c) for pb in rig.pose.bones for c in pb.constraints if c.name.startswith(CONSTRAINT_PREFIX)]


def transfer_action_name(rig, proxy):
    """The new action a transfer writes: '<rig> from <proxy's action>' (the proxy's name when
    it has no action)."""
    action = proxy.animation_data.action if proxy is not None and proxy.animation_data else None
    source = action.name if action is not None else (proxy.name if proxy is not None else "SMPL-IK")
    return f"{rig.name} from {source}"


def transfer_to_rig(context, rig, frame_start, frame_end, remove_drive=False):
    """Key the rig's driven bones with what the proxy makes them do on every frame of the
    range (their visual local transforms) into a new action (`transfer_action_name`),
    assigned to the rig; the rig's own actions are left as they were (one that only the rig
    used gets a fake user, so it is kept). Optionally remove the drive. On an error nothing
    is keyed and the rig keeps its action. Returns the number of frames keyed."""
    if not is_custom_rig(rig):
        raise SmplIkError("select the custom rig (the armature a proxy drives)")
    driven = drive_constraints(rig)
    if not driven:
        raise SmplIkError(f"{rig.name} is not driven by an SMPL-IK proxy; fit it first")
    if frame_end < frame_start:
        raise SmplIkError(f"the range {frame_start}-{frame_end} is empty")
    scene = context.scene
    proxy = rig.smpl_ik_rig.proxy or driven[0][1].target
    bones = sorted({pb.name for pb, _ in driven})
    switches = [pb for pb in rig.pose.bones if IK_FK in pb.keys()] if rig.smpl_ik_rig.rigify else []
    original = scene.frame_current
    ad = rig.animation_data or rig.animation_data_create()
    previous = ad.action
    previous_slot = getattr(ad, "action_slot", None) if previous is not None else None
    # sampled under the new, still empty action: the bones it will not key hold still while
    # sampling exactly as they will when it plays
    action, kept = assign_new_action(rig, transfer_action_name(rig, proxy))
    try:
        frames = range(frame_start, frame_end + 1)
        samples = []
        for frame in frames:
            scene.frame_set(frame)
            samples.append({name: rig.convert_space(pose_bone=rig.pose.bones[name], matrix=rig.pose.bones[name].matrix,
                                                    from_space="POSE", to_space="LOCAL").copy() for name in bones})
        for frame, sample in zip(frames, samples):
            for name, matrix in sample.items():
                _key_bone(rig.pose.bones[name], matrix, frame)
        for pb in switches:   # the keys are on FK controls: the action plays them in FK
            pb[IK_FK] = 1.0
            pb.keyframe_insert(f'["{IK_FK}"]', frame=frame_start, group=pb.name)
    except Exception as exc:
        ad.action = previous
        if previous_slot is not None:
            ad.action_slot = previous_slot
        if kept is not None:
            kept.use_fake_user = False
        bpy.data.actions.remove(action)
        scene.frame_set(original)
        raise SmplIkError(f"could not transfer the motion to {rig.name}: {exc}") from exc
    if remove_drive:
        for pb, con in driven:
            pb.constraints.remove(con)
        rig.smpl_ik_rig.proxy = None
    scene.frame_set(original)
    return frame_end - frame_start + 1


def _key_bone(pb, matrix, frame):
    """Key a pose bone's location and rotation (in its own rotation mode) from a local matrix."""
    name = pb.name
    loc, rot, _ = matrix.decompose()
    pb.location = loc
    if pb.rotation_mode == "QUATERNION":
        pb.rotation_quaternion = rot
        pb.keyframe_insert("rotation_quaternion", frame=frame, group=name)
    elif pb.rotation_mode == "AXIS_ANGLE":
        axis, angle = rot.to_axis_angle()
        pb.rotation_axis_angle = (angle, *axis)
        pb.keyframe_insert("rotation_axis_angle", frame=frame, group=name)
    else:
        pb.rotation_euler = rot.to_euler(pb.rotation_mode, pb.rotation_euler)
        pb.keyframe_insert("rotation_euler", frame=frame, group=name)
    pb.keyframe_insert("location", frame=frame, group=name)


classes = (SmplIkRigJoint, SmplIkRigProperties)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Object.smpl_ik_rig = PointerProperty(type=SmplIkRigProperties)


def unregister():
    del bpy.types.Object.smpl_ik_rig
    _unregister_classes()


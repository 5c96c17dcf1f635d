"""Driving a custom rig: fit an SMPL proxy body to a mapped humanoid armature and drive the rig
from the proxy, so effectors pose the character.

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
import numpy as np
from mathutils import Matrix

from ...models.body.model import load_body_model
from ...models.core.errors import SmplIkError
from ...models.core.kinematics import forward_kinematics
from ...models.core.skeleton import JOINT_NAMES, PARENTS
from ...models.motion.mapping import rigify_controls
from ...models.motion.rig_fit import fit_rig, helper_rest
from ..body.build import BodySpec, create_body, edit_bones
from ..com import bridge
from ..com.objects import is_custom_rig
from ..pose.effectors import pin
from .mapping import fill_mapping, mapping_overrides, rig_joints

HELPER_PREFIX = "SMPL-IK drive "
CONSTRAINT_PREFIX = "SMPL-IK "
IK_FK = "IK_FK"   # Rigify's IK/FK switch on a limb's parent control: 0 IK, 1 FK


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
    names, parents, heads, deform = rig_joints(rig)
    body = load_body_model()
    fit = fit_rig(names, parents, heads, body, mapping_overrides(rig), label=f"rig {rig.name!r}", deform=deform)

    proxy_world = _proxy_matrix(rig, fit)
    proxy = create_body(context, body, BodySpec(name=f"{rig.name} proxy", betas=fit.betas, rest_joints=fit.proxy_rest))
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
        helpers[bone] = (joint, helper_rest(rest, at_rig_pose, rig_bone))
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

"""Operators run from a script or a shortcut with the wrong selection say what to select,
change nothing, and never answer Blender's "poll() failed, context is incorrect"."""
import bpy
import pytest

SELECT_BODY = "select an SMPL-IK body (its armature or mesh) or one of its effectors"
WHAT_TO_SELECT = {
    "solve": SELECT_BODY, "reset_shape": SELECT_BODY, "add_effector": SELECT_BODY,
    "add_default_effectors": SELECT_BODY, "mirror_pose": SELECT_BODY, "reset_pose": SELECT_BODY,
    "keyframe_pose": SELECT_BODY, "bake": SELECT_BODY,
    "map_rig": "select a humanoid armature (not an SMPL-IK body) to map",
    "fit_rig": "select a humanoid armature (not an SMPL-IK body) to fit",
    "transfer_to_rig": "select the custom rig (the armature a proxy drives)",
}


def scene_state():
    return sorted(o.name for o in bpy.data.objects), len(bpy.data.actions)


@pytest.mark.parametrize("active", ["nothing", "a cube"])
@pytest.mark.parametrize("name", sorted(WHAT_TO_SELECT))
def test_operator_without_a_fitting_selection_says_what_to_select(name, active):
    if active == "a cube":
        mesh = bpy.data.meshes.new("cube")
        mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
        cube = bpy.data.objects.new("cube", mesh)
        bpy.context.collection.objects.link(cube)
        bpy.context.view_layer.objects.active = cube
    assert (bpy.context.active_object is None) == (active == "nothing")
    before = scene_state()
    with pytest.raises(RuntimeError) as error:
        getattr(bpy.ops.smpl_ik, name)()
    assert WHAT_TO_SELECT[name] in str(error.value)
    assert "poll()" not in str(error.value)
    assert scene_state() == before


def test_reset_shape_reports_a_refusal_of_its_own_not_an_old_one():
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    arm.smpl_ik.betas[4] = float("nan")            # refused: the shape stays average
    assert "beta 4 must be a number" in arm.smpl_ik.status
    assert bpy.ops.smpl_ik.reset_shape() == {"FINISHED"}
    assert arm.smpl_ik.status == "" and list(arm.smpl_ik.betas) == [0.0] * 10
    arm.smpl_ik.betas[0] = 1.5
    bpy.context.view_layer.objects.active = arm.smpl_ik.mesh   # the mesh stands for its body
    assert bpy.ops.smpl_ik.reset_shape() == {"FINISHED"}
    assert list(arm.smpl_ik.betas) == [0.0] * 10 and list(arm.smpl_ik.applied_betas) == [0.0] * 10

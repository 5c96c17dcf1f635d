"""The bpy-free core of the SMPL-IK extension, one subpackage per concern, in layers:

    core      joint names and tree, rotations, kinematics, the error type, atomic writes
    body      SMPL-family body models (the open body, a user's SMPL files) and their data
    motion    BVH files, joint-name mapping, retargeting, batch jobs, smoothing, rig fitting
    ik        the numpy networks (SMPL-IK, IK-GAT), refinement, their weights
    photo     people found in photos and videos (MediaPipe's models on LiteRT) and fitted to a body
    training  torch twins of the networks and their trainers (scripts only, never Blender)

A package imports only from packages above it in this list (tests/core/test_layout.py holds
the rule), so the same core runs inside Blender, in scripts, in tests and on a cluster.
"""

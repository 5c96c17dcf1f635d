"""Learned IK in numpy: SMPL-IK (effectors to a pose), IK-GAT (joint positions to rotations),
refinement; weights in weights/."""

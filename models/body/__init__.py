"""SMPL-family body models: the open body shipped beside this file, and SMPL / SMPL-H / SMPL-X files."""

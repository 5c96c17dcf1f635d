"""Pose from a photo: people found with MediaPipe (optional package) and fitted to a body."""

"""Pose from a photo and a video: people found by MediaPipe's models (run by LiteRT, an optional
package) and fitted to a body."""

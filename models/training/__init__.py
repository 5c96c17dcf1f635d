"""Torch twins of the networks and their training loop: used by scripts/train_*.py, never by the runtime."""

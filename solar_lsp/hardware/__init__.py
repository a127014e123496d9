"""Chip descriptions: the shipped chip files, their loader, and the host CPU probe."""

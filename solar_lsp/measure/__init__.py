"""Measurement: time an entry on a real device and set the run against its SOL bounds
(`solar headroom`)."""

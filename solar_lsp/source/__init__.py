"""The user's source: its entry points and pragmas (read, never run), and the user modules an
analysis loads."""

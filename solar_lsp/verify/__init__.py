"""Verification: every IR op is run on the golden values of a real run (torch or JAX) and
compared with them, so a lowering that does not reproduce the model is caught."""

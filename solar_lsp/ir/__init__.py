"""The Affine Loop IR: its objects, text form, validator and executor (lowest layer)."""

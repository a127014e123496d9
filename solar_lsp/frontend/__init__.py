"""Frontends: framework code to Affine Loop IR. errors.py and builders.py are shared; torch/ and
jax/ are the two tracers, which never import each other."""

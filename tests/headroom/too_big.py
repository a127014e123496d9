"""Inputs that do not fit in memory: analysis works (meta tensors), measuring must refuse."""


# solar: x=f32[65536,262144]
def huge(x):
    return x * 2.0

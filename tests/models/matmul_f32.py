"""Golden case: one fp32 matmul through a shape pragma."""


# solar: x=f32[256,512], w=f32[512,128]
def matmul(x, w):
    return x @ w

"""Golden case: one bf16 matmul through a shape pragma."""


# solar: x=bf16[128,256], w=bf16[256,64]
def matmul_bf16(x, w):
    return x @ w

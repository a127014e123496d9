"""ResNet basic block with a strided 1x1 projection shortcut (flax.linen, inference BN)."""
import flax.linen as nn


# solar: x=f32[8,32,32,64], init={"features": 128, "stride": 2}
class ResNetBlock(nn.Module):
    features: int = 64
    stride: int = 1

    @nn.compact
    def __call__(self, x):
        s = (self.stride, self.stride)
        y = nn.Conv(self.features, (3, 3), strides=s, padding=((1, 1), (1, 1)), use_bias=False)(x)
        y = nn.relu(nn.BatchNorm(use_running_average=True)(y))
        y = nn.Conv(self.features, (3, 3), use_bias=False)(y)
        y = nn.BatchNorm(use_running_average=True)(y)
        if x.shape[-1] != self.features or self.stride != 1:
            x = nn.Conv(self.features, (1, 1), strides=s, use_bias=False)(x)
            x = nn.BatchNorm(use_running_average=True)(x)
        return nn.relu(x + y)

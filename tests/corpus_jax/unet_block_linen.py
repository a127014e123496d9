"""Diffusion U-Net residual block: GroupNorm, SiLU, 3x3 convs, a time-embedding projection
added per channel, and a 1x1 skip when the width changes (flax.linen)."""
import flax.linen as nn


# solar: x=f32[2,32,32,64], temb=f32[2,256], init={"out_ch": 128}
class ResBlock(nn.Module):
    out_ch: int = 64

    @nn.compact
    def __call__(self, x, temb):
        h = nn.silu(nn.GroupNorm(num_groups=32)(x))
        h = nn.Conv(self.out_ch, (3, 3))(h)
        h = h + nn.Dense(self.out_ch)(nn.silu(temb))[:, None, None, :]
        h = nn.silu(nn.GroupNorm(num_groups=32)(h))
        h = nn.Conv(self.out_ch, (3, 3))(h)
        if x.shape[-1] != self.out_ch:
            x = nn.Conv(self.out_ch, (1, 1))(x)
        return x + h

"""Convolutional decoder that upsamples 4x with two stride-2 transposed convolutions."""
import flax.linen as nn


# solar: z=f32[8,8,8,128]
class Decoder(nn.Module):
    @nn.compact
    def __call__(self, z):
        h = nn.relu(nn.ConvTranspose(64, (4, 4), strides=(2, 2), padding="SAME")(z))
        h = nn.relu(nn.ConvTranspose(32, (4, 4), strides=(2, 2), padding="SAME")(h))
        return nn.sigmoid(nn.Conv(3, (3, 3))(h))

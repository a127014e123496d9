"""PointNet encoder: shared per-point MLP as 1x1 Conv1d + BN + ReLU (3->64->128->1024), symmetric
max-pool over 1024 points, classifier MLP (fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
            nn.Conv1d(128, 1024, 1), nn.BatchNorm1d(1024),
        )
        self.head = nn.Sequential(nn.Linear(1024, 512), nn.BatchNorm1d(512), nn.ReLU(),
                                  nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU(),
                                  nn.Linear(256, classes))

    def forward(self, points):
        feat = torch.max(self.mlp(points), dim=2)[0]
        return self.head(feat)


def get_inputs():
    return [torch.randn(2, 3, 1024)]


def get_init_inputs():
    return [40]

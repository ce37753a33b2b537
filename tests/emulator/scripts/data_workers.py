"""A DataLoader with worker processes and pinned memory feeding the GPU, as image training loops do;
its batches (16 x 3 x 224 x 224) exceed the host tensors Maya computes for real."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 48

    def __getitem__(self, i):
        return torch.randn(3, 224, 224), i % 10


if __name__ == "__main__":
    loader = DataLoader(Images(), batch_size=16, num_workers=2, pin_memory=True, persistent_workers=True)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4), nn.Flatten(), nn.Linear(8 * 56 * 56, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    print("batches done")

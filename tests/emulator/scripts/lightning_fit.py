"""A PyTorch Lightning fit as users write it: bf16 mixed precision, five steps, the default checkpoint
callback writing its .ckpt at the end. Arguments: the root directory, and optionally `ddp` (under
torchrun: DDP over the launched ranks, a validation pass every two steps, metrics synced)."""

import sys

import lightning as L
import torch

DDP = sys.argv[2:] == ["ddp"]


class LitModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 10))

    def training_step(self, batch, i):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss, prog_bar=True, sync_dist=DDP)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("accuracy", (self.net(x).argmax(1) == y).float().mean(), sync_dist=DDP)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


data = torch.utils.data.TensorDataset(torch.randn(512, 256), torch.randint(0, 10, (512,)))
placement = {"devices": 2, "strategy": "ddp", "val_check_interval": 2, "limit_val_batches": 2} if DDP else {"devices": 1}
trainer = L.Trainer(accelerator="gpu", max_steps=5, precision="bf16-mixed", logger=False,
                    default_root_dir=sys.argv[1], enable_progress_bar=False, **placement)
loader = torch.utils.data.DataLoader(data, batch_size=64)
trainer.fit(LitModel(), loader, loader if DDP else None)

"""A PyTorch Lightning fit as users write it: bf16 mixed precision, five steps, the default checkpoint
callback writing its .ckpt at the end. Argument: the root directory."""

import sys

import lightning as L
import torch


class LitModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 10))

    def training_step(self, batch, i):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


data = torch.utils.data.TensorDataset(torch.randn(512, 256), torch.randint(0, 10, (512,)))
trainer = L.Trainer(accelerator="gpu", devices=1, max_steps=5, precision="bf16-mixed", logger=False,
                    default_root_dir=sys.argv[1], enable_progress_bar=False)
trainer.fit(LitModel(), torch.utils.data.DataLoader(data, batch_size=64))

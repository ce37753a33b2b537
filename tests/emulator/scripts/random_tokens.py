"""A dataset of random token sequences for the Hugging Face Trainer scripts (labels = inputs)."""

import torch


class RandomTokens(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.randint(0, 1000, (128,))
        return {"input_ids": ids, "labels": ids.clone()}

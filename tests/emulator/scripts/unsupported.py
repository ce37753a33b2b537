"""Uses CUDA graphs, which Maya cannot emulate."""

import torch

g = torch.cuda.CUDAGraph()

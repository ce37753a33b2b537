"""An op zoo: one forward and backward each of about 120 PyTorch ops and modules a training script may
use, on the emulated GPU. The test runs it under `maya emulate` and expects every case to run; a case
that fails prints its name and error."""

import torch
import torch.nn as nn
import torch.nn.functional as F

d = "cuda"


def R(*s, **k):
    return torch.randn(*s, device=d, requires_grad=True, **k)


def I(hi, *s):
    return torch.randint(0, hi, s, device=d)


cases = {
 "cdist": lambda: torch.cdist(R(4, 10, 8), R(4, 12, 8)).sum(),
 "weight_norm": lambda: nn.utils.parametrizations.weight_norm(nn.Linear(8, 8).to(d))(R(4, 8)).sum(),
 "max_unpool": lambda: (lambda o: F.max_unpool2d(o[0], o[1], 2))(F.max_pool2d(R(2, 3, 8, 8), 2, return_indices=True)).sum(),
 "frac_pool": lambda: F.fractional_max_pool2d(R(2, 3, 16, 16), 2, output_size=8).sum(),
 "multilabel_margin": lambda: F.multilabel_margin_loss(R(4, 10), torch.randint(0, 10, (4, 10), device=d)),
 "nll2d": lambda: F.nll_loss(R(2, 5, 8, 8).log_softmax(1), torch.randint(0, 5, (2, 8, 8), device=d)),
 "kl_div": lambda: F.kl_div(R(4, 10).log_softmax(-1), torch.rand(4, 10, device=d), reduction="batchmean"),
 "huber": lambda: F.huber_loss(R(4, 10), torch.rand(4, 10, device=d)),
 "bce_logits_pos_weight": lambda: F.binary_cross_entropy_with_logits(R(4, 10), torch.rand(4, 10, device=d), pos_weight=torch.ones(10, device=d)),
 "cosine_emb": lambda: F.cosine_embedding_loss(R(4, 10), R(4, 10), torch.ones(4, device=d)),
 "triplet": lambda: F.triplet_margin_loss(R(4, 10), R(4, 10), R(4, 10)),
 "pixel_shuffle": lambda: F.pixel_shuffle(R(2, 16, 4, 4), 2).sum(),
 "unfold_fold": lambda: F.fold(F.unfold(R(2, 3, 8, 8), 3, padding=1), (8, 8), 3, padding=1).sum(),
 "conv_transpose3d": lambda: nn.ConvTranspose3d(3, 4, 3, stride=2).to(d)(R(1, 3, 4, 4, 4)).sum(),
 "instance_norm": lambda: nn.InstanceNorm2d(3, affine=True).to(d)(R(2, 3, 8, 8)).sum(),
 "local_response_norm": lambda: F.local_response_norm(R(2, 6, 8, 8), 3).sum(),
 "prelu": lambda: nn.PReLU().to(d)(R(4, 10)).sum(),
 "rrelu": lambda: F.rrelu(R(4, 10), training=True).sum(),
 "glu": lambda: F.glu(R(4, 10)).sum(),
 "dropout2d": lambda: F.dropout2d(R(2, 3, 8, 8), 0.5, training=True).sum(),
 "alpha_dropout": lambda: F.alpha_dropout(R(4, 10), 0.5, training=True).sum(),
 "interp_bicubic": lambda: F.interpolate(R(2, 3, 8, 8), scale_factor=2, mode="bicubic").sum(),
 "interp_nearest3d": lambda: F.interpolate(R(1, 2, 4, 4, 4), scale_factor=2, mode="nearest").sum(),
 "adaptive_max": lambda: F.adaptive_max_pool2d(R(2, 3, 9, 9), 4).sum(),
 "lp_pool": lambda: F.lp_pool2d(R(2, 3, 8, 8), 2, 2).sum(),
 "embedding_maxnorm": lambda: F.embedding(torch.randint(0, 10, (5,), device=d), R(10, 4), max_norm=1.0).sum(),
 "index_reduce": lambda: R(5, 4).index_reduce(0, torch.tensor([0, 1, 0], device=d), R(3, 4), "prod").sum(),
 "segment_gather": lambda: torch.gather(R(4, 10), 1, torch.randint(0, 10, (4, 3), device=d)).sum(),
 "logsumexp": lambda: torch.logsumexp(R(4, 10), -1).sum(),
 "cummax": lambda: torch.cummax(R(4, 10), -1).values.sum(),
 "kthvalue": lambda: torch.kthvalue(R(4, 10), 3, -1).values.sum(),
 "median": lambda: R(4, 10).median(-1).values.sum(),
 "norm_fro": lambda: torch.linalg.matrix_norm(R(4, 8, 8)).sum(),
 "svd": lambda: torch.linalg.svdvals(R(4, 8, 8)).sum(),
 "qr": lambda: torch.linalg.qr(R(8, 8)).Q.sum(),
 "cholesky": lambda: torch.linalg.cholesky(torch.eye(8, device=d) * 2 + 0 * R(8, 8)).sum(),
 "solve": lambda: torch.linalg.solve(torch.eye(8, device=d) + 0 * R(8, 8), R(8, 2)).sum(),
 "det": lambda: torch.linalg.det(R(3, 4, 4)).sum(),
 "complex_mul": lambda: torch.view_as_real(torch.view_as_complex(R(4, 8, 2)) * torch.view_as_complex(R(4, 8, 2))).sum(),
 "stft": lambda: torch.stft(R(2, 400), 64, return_complex=True, window=torch.hann_window(64, device=d)).abs().sum(),
 "bucketize": lambda: (R(10) * torch.bucketize(torch.rand(10, device=d), torch.linspace(0, 1, 5, device=d))).sum(),
 "multinomial": lambda: (R(4, 10).softmax(-1).gather(1, torch.multinomial(torch.rand(4, 10, device=d), 2))).sum(),
 "histc": lambda: (R(10).sum() + torch.histc(torch.rand(100, device=d), 10).sum()),
 "searchsorted": lambda: (R(10) * torch.searchsorted(torch.linspace(0, 1, 5, device=d), torch.rand(10, device=d))).sum(),
 "masked_scatter": lambda: torch.zeros(4, 10, device=d).masked_scatter(torch.rand(4, 10, device=d) > 0.5, R(4, 10)).sum(),
 "take_along_dim": lambda: torch.take_along_dim(R(4, 10), torch.argsort(torch.rand(4, 10, device=d), -1), -1).sum(),
 "roll_flip": lambda: torch.flip(torch.roll(R(4, 10), 3, -1), [0]).sum(),
 "tril_triu": lambda: (torch.tril(R(8, 8)) + torch.triu(R(8, 8), 1)).sum(),
 "diag_embed": lambda: torch.diag_embed(R(4, 8)).sum(),
 "nan_to_num": lambda: torch.nan_to_num(R(4, 10)).sum(),
 "polar": lambda: torch.view_as_real(torch.polar(R(4), R(4))).sum(),
 "bilinear": lambda: nn.Bilinear(4, 5, 6).to(d)(R(3, 4), R(3, 5)).sum(),
 "channel_shuffle": lambda: nn.ChannelShuffle(2)(R(2, 4, 4, 4)).sum(),
 "pad_reflect": lambda: F.pad(R(2, 3, 8, 8), (2, 2, 2, 2), mode="reflect").sum(),
 "pad_replicate3d": lambda: F.pad(R(1, 2, 4, 4, 4), (1, 1, 1, 1, 1, 1), mode="replicate").sum(),
 "pad_circular": lambda: F.pad(R(2, 3, 8, 8), (2, 2, 2, 2), mode="circular").sum(),
 "affine_grid": lambda: F.grid_sample(R(2, 3, 8, 8), F.affine_grid(R(2, 2, 3), (2, 3, 8, 8), align_corners=False), align_corners=False).sum(),

 "multi_margin": lambda: F.multi_margin_loss(R(4, 10), I(10, 4)),
 "soft_margin": lambda: F.soft_margin_loss(R(4, 10), torch.sign(torch.randn(4, 10, device=d))),
 "hinge_emb": lambda: F.hinge_embedding_loss(R(4, 10), torch.sign(torch.randn(4, 10, device=d))),
 "margin_ranking": lambda: F.margin_ranking_loss(R(4), R(4), torch.sign(torch.randn(4, device=d))),
 "poisson_nll": lambda: F.poisson_nll_loss(R(4, 10), torch.rand(4, 10, device=d)),
 "gaussian_nll": lambda: F.gaussian_nll_loss(R(4, 10), torch.rand(4, 10, device=d), torch.rand(4, 10, device=d) + 0.1),
 "bce": lambda: F.binary_cross_entropy(torch.sigmoid(R(4, 10)), torch.rand(4, 10, device=d)),
 "l1_smooth": lambda: F.smooth_l1_loss(R(4, 10), torch.rand(4, 10, device=d)) + F.l1_loss(R(4), torch.rand(4, device=d)),
 "ce_probs": lambda: F.cross_entropy(R(4, 10), torch.rand(4, 10, device=d).softmax(-1)),
 "ce_ignore_weight": lambda: F.cross_entropy(R(4, 10), I(10, 4), weight=torch.rand(10, device=d), ignore_index=3),
 "ce_3d": lambda: F.cross_entropy(R(2, 5, 8, 8), I(5, 2, 8, 8)),
 "nll_weight": lambda: F.nll_loss(R(4, 10).log_softmax(-1), I(10, 4), weight=torch.rand(10, device=d)),
 "embedding_bag_max": lambda: F.embedding_bag(I(100, 20), R(100, 8), torch.tensor([0, 5, 10], device=d), mode="max").sum(),
 "embedding_bag_sum_psw": lambda: F.embedding_bag(I(100, 20), R(100, 8), torch.tensor([0, 5, 10], device=d), mode="sum", per_sample_weights=torch.rand(20, device=d)).sum(),
 "avg_pool3d": lambda: F.avg_pool3d(R(1, 2, 8, 8, 8), 2).sum(),
 "max_pool3d": lambda: F.max_pool3d(R(1, 2, 8, 8, 8), 2).sum(),
 "max_pool1d": lambda: F.max_pool1d(R(2, 3, 16), 2).sum(),
 "adaptive_avg3d": lambda: F.adaptive_avg_pool3d(R(1, 2, 8, 8, 8), 3).sum(),
 "interp_trilinear": lambda: F.interpolate(R(1, 2, 4, 4, 4), scale_factor=2, mode="trilinear").sum(),
 "interp_linear": lambda: F.interpolate(R(2, 3, 16), scale_factor=2, mode="linear").sum(),
 "interp_area": lambda: F.interpolate(R(2, 3, 16, 16), size=(5, 5), mode="area").sum(),
 "interp_nearest_exact": lambda: F.interpolate(R(2, 3, 8, 8), scale_factor=2, mode="nearest-exact").sum(),
 "pixel_unshuffle": lambda: F.pixel_unshuffle(R(2, 4, 8, 8), 2).sum(),
 "conv1d_dilated": lambda: nn.Conv1d(4, 8, 3, dilation=2, padding=2).to(d)(R(2, 4, 32)).sum(),
 "conv3d": lambda: nn.Conv3d(2, 4, 3).to(d)(R(1, 2, 8, 8, 8)).sum(),
 "conv_transpose1d": lambda: nn.ConvTranspose1d(4, 8, 4, stride=2).to(d)(R(2, 4, 16)).sum(),
 "depthwise_conv1d": lambda: nn.Conv1d(8, 8, 5, groups=8, padding=2).to(d)(R(2, 8, 32)).sum(),
 "batchnorm1d": lambda: nn.BatchNorm1d(8).to(d)(R(4, 8, 16)).sum(),
 "batchnorm3d": lambda: nn.BatchNorm3d(2).to(d)(R(2, 2, 4, 4, 4)).sum(),
 "sync_bn_single": lambda: nn.SyncBatchNorm(8).to(d).eval()(R(4, 8, 4, 4)).sum(),
 "rmsnorm": lambda: nn.RMSNorm(16).to(d)(R(4, 16)).sum(),
 "layernorm_nobias": lambda: nn.LayerNorm(16, bias=False).to(d)(R(4, 16)).sum(),
 "gelu_tanh_mish_selu": lambda: (F.gelu(R(8), approximate="tanh") + F.mish(R(8)) + F.selu(R(8)) + F.celu(R(8)) + F.hardswish(R(8)) + F.softsign(R(8)) + F.logsigmoid(R(8))).sum(),
 "hardtanh_relu6_elu": lambda: (F.hardtanh(R(8)) + F.relu6(R(8)) + F.elu(R(8)) + F.leaky_relu(R(8)) + F.softshrink(R(8)) + F.tanhshrink(R(8)) + F.threshold(R(8), 0.1, 0.0)).sum(),
 "gumbel_softmax": lambda: F.gumbel_softmax(R(4, 10), hard=True).sum(),
 "normalize_cos": lambda: (F.normalize(R(4, 8)) * F.cosine_similarity(R(4, 8), R(4, 8)).unsqueeze(-1)).sum(),
 "pdist": lambda: F.pdist(R(6, 4)).sum(),
 "pairwise": lambda: F.pairwise_distance(R(4, 8), R(4, 8)).sum(),
 "index_add_copy_fill": lambda: (torch.zeros(5, 4, device=d).index_add(0, I(5, 3), R(3, 4)) + torch.zeros(5, 4, device=d).index_copy(0, torch.tensor([0, 2, 4], device=d), R(3, 4))).sum(),
 "scatter_gather_bwd": lambda: torch.zeros(4, 10, device=d).scatter(1, I(10, 4, 3), R(4, 3)).sum(),
 "put_take": lambda: torch.take(R(4, 10), I(40, 5)).sum(),
 "unique": lambda: torch.unique(I(5, 10)).float().sum() + R(1).sum(),
 "cumprod_logcumsumexp": lambda: (torch.cumprod(R(4, 8), -1) + torch.logcumsumexp(R(4, 8), -1)).sum(),
 "std_var_norm": lambda: (R(4, 8).std(-1) + R(4, 8).var(-1) + R(4, 8).norm(dim=-1)).sum(),
 "amax_aminmax": lambda: (R(4, 8).amax(-1) + R(4, 8).amin(-1)).sum(),
 "lerp_clamp_where": lambda: torch.lerp(R(8), R(8), 0.3).clamp(-1, 1).sum(),
 "complex_fft2": lambda: torch.fft.irfft2(torch.fft.rfft2(R(2, 16, 16))).sum(),
 "einsum_bilinear": lambda: torch.einsum("bi,oij,bj->bo", R(4, 5), R(3, 5, 6), R(4, 6)).sum(),
 "baddbmm_addbmm": lambda: (torch.baddbmm(R(2, 3, 5), R(2, 3, 4), R(2, 4, 5)).sum() + torch.addbmm(R(3, 5), R(2, 3, 4), R(2, 4, 5)).sum()),
 "linalg_inv_eig": lambda: torch.linalg.inv(torch.eye(4, device=d) * 2 + 0 * R(4, 4)).sum(),
 "slogdet_pinv": lambda: torch.linalg.pinv(R(4, 3)).sum(),
 "matrix_exp": lambda: torch.linalg.matrix_exp(R(3, 3) * 0.1).sum(),
 "rnn_cells": lambda: (nn.LSTMCell(8, 16).to(d)(R(4, 8))[0].sum() + nn.GRUCell(8, 16).to(d)(R(4, 8)).sum()),
 "transformer_decoder": lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(32, 4, 64, batch_first=True), 1).to(d)(R(2, 10, 32), R(2, 12, 32), tgt_mask=nn.Transformer.generate_square_subsequent_mask(10, device=d)).sum(),
 "upsample_module": lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)(R(1, 2, 4, 4)).sum(),
 "fold_unfold_tensor": lambda: R(2, 3, 8, 8).unfold(2, 3, 1).sum(),
 "as_strided_bwd": lambda: R(16).as_strided((3, 3), (2, 1)).sum(),
 "masked_fill_bwd": lambda: R(4, 8).masked_fill(torch.rand(4, 8, device=d) > 0.5, 0).sum(),
 "index_bool_bwd": lambda: R(4, 8)[torch.rand(4, 8, device=d) > 0.5].sum(),
 "nonzero_index_bwd": lambda: R(10)[torch.nonzero(torch.rand(10, device=d) > 0.5).squeeze(-1)].sum(),
 "repeat_interleave_tensor": lambda: torch.repeat_interleave(R(4, 2), torch.tensor([1, 2, 3, 4], device=d), dim=0).sum(),
}
bad = []
for name, fn in cases.items():
    try:
        out = fn()
        out.backward()
    except Exception as e:
        bad.append(name)
        print(f"FAIL {name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
print(f"op zoo: {len(cases) - len(bad)} of {len(cases)} cases ran", flush=True)

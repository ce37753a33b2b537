"""Hugging Face transformers architectures built from small configs, each one bf16-autocast training
step on the emulated GPU: Qwen2, Mistral (sliding window), Gemma 2, Phi-3, DeBERTa-v2 (TorchScript
helpers), Swin, wav2vec 2.0 with CTC loss, Whisper, CLIP, Mixtral (float32 experts under autocast: CUDA's
grouped-GEMM fallback). The test runs it under `maya emulate` and
expects every case to run; a case that fails prints its name and error."""

import torch
import transformers as tf

d = "cuda"


def lm(cfg_cls, model_cls, **kw):
    cfg = cfg_cls(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  **kw)
    m = model_cls(cfg).to(d)
    ids = torch.randint(0, 1000, (2, 64), device=d)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = m(input_ids=ids, labels=ids)
    out.loss.backward()


cases = {
 "qwen2": lambda: lm(tf.Qwen2Config, tf.Qwen2ForCausalLM, num_key_value_heads=2),
 "mistral": lambda: lm(tf.MistralConfig, tf.MistralForCausalLM, num_key_value_heads=2, sliding_window=32),
 "gemma2": lambda: lm(tf.Gemma2Config, tf.Gemma2ForCausalLM, num_key_value_heads=2, head_dim=32),
 "mixtral": lambda: lm(tf.MixtralConfig, tf.MixtralForCausalLM, num_key_value_heads=2, num_local_experts=4,
                       num_experts_per_tok=2),
 "phi3": lambda: lm(tf.Phi3Config, tf.Phi3ForCausalLM, num_key_value_heads=2, pad_token_id=0, bos_token_id=1, eos_token_id=2),
 "deberta_v2": lambda: (lambda m: m(input_ids=torch.randint(0, 1000, (2, 64), device=d), labels=torch.randint(0, 2, (2,), device=d)).loss.backward())(
     tf.DebertaV2ForSequenceClassification(tf.DebertaV2Config(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4)).to(d)),
 "swin": lambda: (lambda m: m(pixel_values=torch.randn(2, 3, 224, 224, device=d), labels=torch.randint(0, 10, (2,), device=d)).loss.backward())(
     tf.SwinForImageClassification(tf.SwinConfig(embed_dim=32, depths=[1, 1, 1, 1], num_heads=[1, 2, 4, 8], num_labels=10)).to(d)),
 "wav2vec2_ctc": lambda: (lambda m: m(input_values=torch.randn(2, 16000, device=d), labels=torch.randint(1, 30, (2, 20), device=d)).loss.backward())(
     tf.Wav2Vec2ForCTC(tf.Wav2Vec2Config(vocab_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, conv_dim=(32,) * 7)).to(d)),
 "whisper": lambda: (lambda m: m(input_features=torch.randn(2, 80, 3000, device=d), labels=torch.randint(0, 1000, (2, 16), device=d)).loss.backward())(
     tf.WhisperForConditionalGeneration(tf.WhisperConfig(vocab_size=1000, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, max_target_positions=64, max_source_positions=1500)).to(d)),
 "clip": lambda: (lambda m: m(input_ids=torch.randint(0, 1000, (2, 16), device=d), pixel_values=torch.randn(2, 3, 224, 224, device=d), return_loss=True).loss.backward())(
     tf.CLIPModel(tf.CLIPConfig(text_config=dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2), vision_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2, patch_size=32))).to(d)),
}
failed = []
for name, fn in cases.items():
    try:
        fn()
    except Exception as e:
        failed.append(name)
        print(f"FAIL {name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
print(f"hf zoo: {len(cases) - len(failed)} of {len(cases)} cases ran", flush=True)

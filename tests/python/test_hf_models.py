"""Hugging Face and timm models (small configs, random weights) through the backend: GPT-2, T5,
BERT, DistilBERT, ViT and an MLP-mixer in inference, BERT and GPT-2 in training (their SDPA
attention saves its output for the backward through an alias and a same-shape view: issue 40's
`aten::permute` got None there). On the CPU here; `scripts/gpu.sh test` runs the CUDA rows.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
timm = pytest.importorskip("timm")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _gpt2():
    config = transformers.GPT2Config(vocab_size=256, n_embd=64, n_layer=2, n_head=2, n_positions=64,
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(config), lambda g: {"input_ids": torch.randint(0, 256, (2, 16), generator=g)}


def _t5():
    config = transformers.T5Config(vocab_size=256, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=2,
                                   dropout_rate=0.0, decoder_start_token_id=0, eos_token_id=1, pad_token_id=0)
    return transformers.T5ForConditionalGeneration(config), lambda g: {
        "input_ids": torch.randint(0, 256, (2, 16), generator=g),
        "decoder_input_ids": torch.randint(0, 256, (2, 8), generator=g)}


def _bert():
    config = transformers.BertConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=128, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    return transformers.BertForMaskedLM(config), lambda g: {"input_ids": torch.randint(0, 256, (2, 16), generator=g)}


def _distilbert():
    config = transformers.DistilBertConfig(vocab_size=256, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                                           dropout=0.0, attention_dropout=0.0)
    return transformers.DistilBertModel(config), lambda g: {"input_ids": torch.randint(0, 256, (2, 16), generator=g)}


def _vit():
    config = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=128, hidden_dropout_prob=0.0,
                                    attention_probs_dropout_prob=0.0)
    return transformers.ViTModel(config), lambda g: {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}


def _mixer():
    model = timm.models.mlp_mixer.MlpMixer(num_classes=10, img_size=32, patch_size=8, embed_dim=64, num_blocks=2)
    return model, lambda g: {"x": torch.randn(2, 3, 32, 32, generator=g)}


MODELS = {"gpt2": _gpt2, "t5": _t5, "bert": _bert, "distilbert": _distilbert, "vit": _vit, "mixer": _mixer}


def _main_output(out):
    if isinstance(out, torch.Tensor):
        return out
    return out.logits if getattr(out, "logits", None) is not None else out.last_hidden_state


def _build(name: str, device: str):
    torch.manual_seed(0)
    model, make_inputs = MODELS[name]()
    inputs = {k: v.to(device) for k, v in make_inputs(torch.Generator().manual_seed(1)).items()}
    return model.to(device), inputs


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
def test_inference_matches_eager(name, device):
    model, inputs = _build(name, device)
    model.eval()
    # cuDNN convolutions default to TF32, whose rounding follows the algorithm cuDNN picks for
    # each call's strides and alignment: ViT's patch convolution then differs by ~1e-3 between
    # two equally valid runs. Full float32 makes the comparison about our kernels.
    with torch.no_grad(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        want = _main_output(model(**inputs))
        got = _main_output(torch.compile(model, backend="inductor_cpp")(**inputs))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_training_step_grads_match_float64(name, device):
    """One language-model training step (labels = inputs): loss and every gradient close to a
    float64 eager reference, as close as eager float32 is (within a margin)."""
    model, inputs = _build(name, device)
    model.train()
    reference = _build(name, device)[0].double().train()
    reference.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    ids = inputs["input_ids"]
    loss = torch.compile(model, backend="inductor_cpp")(input_ids=ids, labels=ids).loss
    loss.backward()
    eager = _build(name, device)[0].train()
    eager.load_state_dict(model.state_dict())
    eager(input_ids=ids, labels=ids).loss.backward()
    want = reference(input_ids=ids, labels=ids).loss
    want.backward()
    assert abs(loss.item() - want.item()) <= 1e-4 * abs(want.item())
    for (name_, p), q, e in zip(model.named_parameters(), reference.parameters(), eager.parameters()):
        if q.grad is None:
            continue
        err = (p.grad.double() - q.grad).abs().max().item()
        eager_err = (e.grad.double() - q.grad).abs().max().item()
        assert err <= 4 * eager_err + 1e-6, (name_, err, eager_err)

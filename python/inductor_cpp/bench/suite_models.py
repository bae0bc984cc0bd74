"""The inference models of `python -m inductor_cpp.bench suite --mode models` (issues 41, 51).

Sixteen vision and language models, float32, random weights, eval mode, dropout 0:
torchvision resnet18, resnet50, mobilenet_v2, mobilenet_v3_small, efficientnet_b0,
regnet_y_400mf, densenet121, convnext_tiny, shufflenet_v2_x1_0 and vit_b_16; timm DeiT-tiny and MLP-mixer
S/16; transformers BERT (4 layers), DistilBERT, GPT-2 (4 layers) and T5-small (2 layers),
built from configs. A step is one forward under no_grad; the check compares every output with
eager's (MODEL_TOL, with the float64 second chance).

Sizes: on CUDA batch 32 at 224x224 and text batch 8 x 128 tokens; on the CPU batch 4 (vit_b_16
batch 2) and text batch 2 x 128, so a 2-core machine finishes a run; with --quick batch 1 at
64x64 and tiny configs. A model whose package (timm, transformers) is missing is a "skipped"
row.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import torch
from torch import nn

from .suite_train import Skipped
from .suite_workloads import INFER_MODELS, MODEL_TOL, Workload

# resnet18 is the suite's own inference row (suite_workloads: batch 8 on the CPU, 64 on CUDA).
VISION = INFER_MODELS[1:10]
TIMM = {"deit_tiny": "deit_tiny_patch16_224", "mixer_s16": "mixer_s16_224"}
TEXT = INFER_MODELS[12:]
NEEDS = {**{name: "timm" for name in TIMM}, **{name: "transformers" for name in TEXT}}


def _sizes(quick: bool, device: str) -> dict[str, Any]:
    """image (batch, side); vit_batch; text (batch, sequence)."""
    if quick:
        return {"image": (1, 64), "vit_batch": 1, "text": (1, 16)}
    if device == "cuda":
        return {"image": (32, 224), "vit_batch": 32, "text": (8, 128)}
    return {"image": (4, 224), "vit_batch": 2, "text": (2, 128)}


def _no_dropout(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return model


class _Logits(nn.Module):
    """A transformers model called on token ids, returning its logits (or last hidden state)."""

    def __init__(self, model: nn.Module, encoder_decoder: bool = False):
        super().__init__()
        self.model = model
        self.encoder_decoder = encoder_decoder

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.encoder_decoder:
            out = self.model(input_ids=ids, decoder_input_ids=ids)
        else:
            out = self.model(input_ids=ids)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def _text_model(name: str, quick: bool) -> tuple[nn.Module, str]:
    import transformers as tr

    small = dict(hidden=64, heads=2, layers=2, vocab=1000) if quick else None
    if name == "bert4":
        c = tr.BertConfig(num_hidden_layers=2 if quick else 4, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0,
                          **({} if not small else dict(hidden_size=64, num_attention_heads=2,
                                                       intermediate_size=256, vocab_size=1000)))
        return _Logits(tr.BertForMaskedLM(c)), f"transformers BERT {c.num_hidden_layers} layers, MLM head"
    if name == "distilbert":
        c = tr.DistilBertConfig(dropout=0.0, attention_dropout=0.0,
                                **({} if not small else dict(dim=64, n_heads=2, hidden_dim=256,
                                                             n_layers=2, vocab_size=1000)))
        return _Logits(tr.DistilBertForMaskedLM(c)), f"transformers DistilBERT {c.n_layers} layers, MLM head"
    if name == "gpt2_4":
        c = tr.GPT2Config(n_layer=2 if quick else 4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                          **({} if not small else dict(n_embd=64, n_head=2, vocab_size=1000,
                                                       bos_token_id=0, eos_token_id=0)))
        return _Logits(tr.GPT2LMHeadModel(c)), f"transformers GPT-2 {c.n_layer} layers, LM head"
    c = tr.T5Config(num_layers=2, num_decoder_layers=2, dropout_rate=0.0,
                    **({} if not small else dict(d_model=64, d_kv=16, d_ff=256, num_heads=2,
                                                 vocab_size=1000)))
    return _Logits(tr.T5ForConditionalGeneration(c), encoder_decoder=True), \
        "transformers T5-small, 2 encoder + 2 decoder layers, LM head"


def build_model(name: str, device: str, quick: bool) -> Workload:
    """Inference workload `name` (one of INFER_MODELS but resnet18) on the CPU (the caller
    moves it); raises Skipped when its package is missing. The caller seeds the generator."""
    need = NEEDS.get(name)
    if need and importlib.util.find_spec(need) is None:
        raise Skipped(f"skipped: needs {need}")
    sizes = _sizes(quick, device)
    batch, side = sizes["image"]
    if name in VISION:
        import torchvision

        kwargs: dict[str, Any] = {"weights": None}
        if name == "vit_b_16":
            batch = sizes["vit_batch"]
            kwargs["image_size"] = side
        model, what = getattr(torchvision.models, name)(**kwargs), f"torchvision {name}"
        inputs: tuple[torch.Tensor, ...] = (torch.randn(batch, 3, side, side),)
        shape = f"batch {batch}x3x{side}x{side}"
    elif name in TIMM:
        import timm

        extra = {"img_size": side} if quick else {}
        model = timm.create_model(TIMM[name], pretrained=False, drop_rate=0.0, drop_path_rate=0.0,
                                  **extra)
        what = f"timm {TIMM[name]}"
        inputs, shape = (torch.randn(batch, 3, side, side),), f"batch {batch}x3x{side}x{side}"
    elif name in TEXT:
        model, what = _text_model(name, quick)
        text_batch, seq = sizes["text"]
        vocab = model.model.config.vocab_size
        inputs, shape = (torch.randint(0, vocab, (text_batch, seq)),), f"batch {text_batch}x{seq}"
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(INFER_MODELS)}")
    return Workload(name, f"{what}, {shape}, inference", _no_dropout(model).eval(), inputs,
                    tol=dict(MODEL_TOL))

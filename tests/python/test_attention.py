"""Attention on our kernels (options={"matrix_kernels": True}, the default): in an inference
graph, `F.scaled_dot_product_attention` on the CPU (ATen's `_scaled_dot_product_flash_attention_
for_cpu`) of float32 tensors without dropout, with or without an additive or boolean mask, over
at most 512 keys, becomes a `matrix::attention` plan step (runtime/attention_step.h on
runtime/matrix/attention.h); in a training forward it also writes the logsumexp ATen's backward
reads. Outputs and gradients are compared with eager's and a float64 reference; longer key
sequences stay ATen and say why."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

import inductor_cpp
from conftest import assert_same, test_graphs

pytestmark = pytest.mark.skipif(not inductor_cpp._C.matrix.cpu_features()["avx512"],
                                reason="our attention needs AVX-512 (elsewhere it stays ATen)")


def compile_cpp(fn, **options):
    return torch.compile(fn, backend="inductor_cpp", dynamic=False, options=options)


def plan_lines(op: str) -> list[str]:
    return [line.strip() for g in test_graphs() for line in g.plan_text.splitlines() if op in line]


def self_attention(x, heads, causal=False, scale=None):
    """A BERT-style attention core: q, k, v as views of one packed projection output."""
    b, s, three_d = x.shape
    d = three_d // 3
    qkv = x.view(b, s, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
    out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=causal, scale=scale)
    return out.transpose(1, 2).reshape(b, s, d)


def check(fn, *args):
    """Compiled vs eager (close) and vs float64: our error at most 4x eager's."""
    with torch.no_grad():
        ours = compile_cpp(fn)(*args)
        eager = fn(*args)
        reference = fn(*[a.double() for a in args])
    assert_same(ours, eager, rtol=1e-5, atol=1e-5)
    ours_error = (ours.double() - reference).abs().max().item()
    eager_error = (eager.double() - reference).abs().max().item()
    assert ours_error <= 4 * eager_error + 1e-6, (ours_error, eager_error)


@pytest.mark.parametrize("causal", [False, True])
def test_packed_qkv_self_attention_runs_on_ours(causal):
    check(lambda x: self_attention(x, 4, causal), torch.randn(2, 70, 3 * 128))
    (line,) = plan_lines("matrix::attention")
    assert ("causal" in line) == causal, line
    assert not plan_lines("aten::_scaled_dot_product"), plan_lines("aten::")


def test_cross_attention_lengths_and_scale():
    """q_len != kv_len, an explicit scale. (A value dimension unlike the head dimension takes
    torch's math path, bmm and softmax, not this op.)"""
    q, k, v = torch.randn(2, 3, 9, 40), torch.randn(2, 3, 300, 40), torch.randn(2, 3, 300, 40)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3), q, k, v)
    (line,) = plan_lines("matrix::attention")
    assert "scale=0.3" in line, line


def stays_aten_because(reason: str):
    graphs = [g for g in test_graphs() if "_scaled_dot_product_flash_attention_for_cpu" in g.plan_text]
    assert graphs and not plan_lines("matrix::attention")
    reasons = [d["reason"] for g in graphs for d in json.loads(g.debug_info()["decisions"])
               if not d["generated"]]
    assert any(reason in r for r in reasons), reasons


def test_padding_mask_as_hugging_face_bert_passes_it():
    """An additive [batch, 1, 1, keys] mask, finfo.min over each sequence's padding."""
    x = torch.randn(3, 40, 3 * 64)
    mask = torch.zeros(3, 1, 1, 40)
    for b, length in enumerate((40, 31, 7)):
        mask[b, ..., length:] = torch.finfo(torch.float32).min

    def fn(x, mask):
        b, s, _ = x.shape
        q, k, v = x.view(b, s, 3, 2, 32).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    check(fn, x, mask)
    (line,) = plan_lines("matrix::attention")
    assert "mask=%s" in line, line


def test_boolean_mask_with_a_fully_hidden_row():
    """A [queries, keys] boolean mask broadcast over batch and heads; a query that sees no key
    gets zeros, as ATen's kernel gives it."""
    q, k, v = torch.randn(2, 3, 6, 16), torch.randn(2, 3, 20, 16), torch.randn(2, 3, 20, 16)
    mask = torch.rand(6, 20) > 0.3
    mask[0] = True
    mask[2] = False
    check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, mask)
    assert plan_lines("matrix::attention")
    with torch.no_grad():
        out = compile_cpp(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m))(q, k, v, mask)
    assert torch.equal(out[:, :, 2], torch.zeros_like(out[:, :, 2]))


def test_long_key_sequences_stay_aten_and_say_why():
    """Over 512 keys ATen's kernel is as fast as ours: it keeps them."""
    q, k, v = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 513, 16), torch.randn(1, 2, 513, 16)
    check(F.scaled_dot_product_attention, q, k, v)
    stays_aten_because("more than 512 keys")


def test_training_forward_runs_on_ours_and_gradients_match():
    """A training forward keeps the logsumexp for ATen's backward: ours writes it too (m + log l
    per query row), and the backward's gradients match eager's and float64's."""
    torch.manual_seed(0)
    x = torch.randn(2, 40, 3 * 64, requires_grad=True)
    mask = torch.zeros(2, 1, 1, 40)
    mask[1, ..., 30:] = float("-inf")

    def fn(x, mask):
        b, s, _ = x.shape
        q, k, v = x.view(b, s, 3, 2, 32).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    grad_out = torch.randn(2, 2, 40, 32)
    grads = []
    for f, inputs in ((compile_cpp(fn), (x, mask)), (fn, (x, mask)), (fn, (x.double(), mask.double()))):
        leaf = inputs[0].detach().clone().requires_grad_()
        (f(leaf, inputs[1]) * grad_out.to(leaf.dtype)).sum().backward()
        grads.append(leaf.grad)
    ours, eager, reference = grads
    assert_same(ours, eager, rtol=1e-4, atol=1e-5)
    ours_error = (ours.double() - reference).abs().max().item()
    eager_error = (eager.double() - reference).abs().max().item()
    assert ours_error <= 4 * eager_error + 1e-6, (ours_error, eager_error)
    (line,) = plan_lines("matrix::attention")
    assert line.startswith("%s") and ", %s" in line.split("=")[0], line  # out, logsumexp
    assert plan_lines("aten::_scaled_dot_product_flash_attention_for_cpu_backward")


def test_training_with_a_fully_hidden_query_gives_eagers_gradients():
    """A query whose keys are all hidden: output zeros and a logsumexp of 0, as ATen's forward
    gives them, so ATen's backward computes finite gradients from ours (-inf gave NaN)."""
    mask = torch.ones(6, 6, dtype=torch.bool)
    mask[2] = False
    fn = lambda x: F.scaled_dot_product_attention(x, x * 0.5, x + 1, attn_mask=mask)
    x, grad_out = torch.randn(1, 2, 6, 16), torch.randn(1, 2, 6, 16)
    grads = []
    for f in (compile_cpp(fn), fn):
        leaf = x.clone().requires_grad_()
        (f(leaf) * grad_out).sum().backward()
        grads.append(leaf.grad)
    assert torch.isfinite(grads[0]).all()
    assert_same(grads[0], grads[1], rtol=1e-4, atol=1e-5)
    assert plan_lines("matrix::attention")


def test_plan_round_trips_through_the_cache():
    x = torch.randn(2, 33, 3 * 64)
    fn = lambda x: self_attention(x, 2, causal=True)

    def outcomes():
        return [g.counters()["cache"] for g in test_graphs() if "matrix::attention" in g.plan_text]

    with torch.no_grad():
        first = compile_cpp(fn)(x)
        assert outcomes() == ["built"]
        torch._dynamo.reset()
        second = compile_cpp(fn)(x)  # plan.json read back
        assert "hit" in outcomes(), outcomes()
    assert torch.equal(first, second)

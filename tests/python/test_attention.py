"""Attention on our kernels (options={"matrix_kernels": True}, the default): in an inference
graph, `F.scaled_dot_product_attention` on the CPU (ATen's `_scaled_dot_product_flash_attention_
for_cpu`) of float32 tensors without dropout, with or without an additive or boolean mask, over
at most 512 keys, becomes a `matrix::attention` plan step (runtime/attention_step.h on
matrix/attention.h); in a training forward it also writes the logsumexp the backward
reads, and the backward (`..._for_cpu_backward`) becomes a `matrix::attention_backward` step
(matrix/attention_backward.h). Outputs and gradients are compared with eager's and a
float64 reference; longer key sequences stay ATen and say why."""

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
    (line,) = plan_lines("matrix::attention(")
    assert ("causal" in line) == causal, line
    assert not plan_lines("aten::_scaled_dot_product"), plan_lines("aten::")


def test_cross_attention_lengths_and_scale():
    """q_len != kv_len, an explicit scale. (A value dimension unlike the head dimension takes
    torch's math path, bmm and softmax, not this op.)"""
    q, k, v = torch.randn(2, 3, 9, 40), torch.randn(2, 3, 300, 40), torch.randn(2, 3, 300, 40)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3), q, k, v)
    (line,) = plan_lines("matrix::attention(")
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
    (line,) = plan_lines("matrix::attention(")
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


def gradients(fn, inputs, grad_out):
    """d(sum(fn(*inputs) * grad_out)) / d inputs that require grad: compiled ours, eager, and
    eager in float64."""
    results = []
    for f, dtype in ((compile_cpp(fn), None), (fn, None), (fn, torch.float64)):
        leaves = [t.detach().to(dtype or t.dtype).requires_grad_(t.requires_grad) if t.is_floating_point()
                  else t for t in inputs]
        (f(*leaves) * grad_out.to(dtype or grad_out.dtype)).sum().backward()
        results.append([t.grad for t in leaves if t.requires_grad])
    return results


def check_gradients(fn, inputs, grad_out):
    """Ours close to eager's, and its error against float64 at most 4x eager's."""
    ours, eager, reference = gradients(fn, inputs, grad_out)
    for o, e, r in zip(ours, eager, reference, strict=True):
        assert_same(o, e, rtol=1e-4, atol=1e-5)
        ours_error = (o.double() - r).abs().max().item()
        eager_error = (e.double() - r).abs().max().item()
        assert ours_error <= 4 * eager_error + 1e-6, (ours_error, eager_error)
    return ours


def test_training_runs_forward_and_backward_on_ours():
    """A training forward keeps the logsumexp for the backward: ours writes it (m + log l per
    query row), and the backward runs on ours too, from it and the forward's output."""
    torch.manual_seed(0)
    x = torch.randn(2, 40, 3 * 64, requires_grad=True)
    mask = torch.zeros(2, 1, 1, 40)
    mask[1, ..., 30:] = float("-inf")

    def fn(x, mask):
        b, s, _ = x.shape
        q, k, v = x.view(b, s, 3, 2, 32).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    check_gradients(fn, (x, mask), torch.randn(2, 2, 40, 32))
    (line,) = plan_lines("matrix::attention(")
    assert line.startswith("%s") and ", %s" in line.split("=")[0], line  # out, logsumexp
    (backward,) = plan_lines("matrix::attention_backward(")
    assert backward.split("=")[0].count("%s") == 3 and "mask=%s" in backward, backward
    assert not plan_lines("aten::_scaled_dot_product"), plan_lines("aten::")


@pytest.mark.parametrize("causal", [False, True])
def test_query_key_and_value_gradients(causal):
    """Separate q, k and v leaves (each gradient checked), 130 queries (three query blocks),
    an explicit scale; causal with as many keys as queries."""
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 3, 130, 48, requires_grad=True) for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.2)
    check_gradients(fn, (q, k, v), torch.randn(2, 3, 130, 48))
    (backward,) = plan_lines("matrix::attention_backward(")
    assert ("causal" in backward) == causal and "scale=0.2" in backward, backward


def test_training_with_a_fully_hidden_query_gives_eagers_gradients():
    """A query whose keys are all hidden: output zeros and a logsumexp of 0, as ATen's forward
    gives them; its probabilities recompute to 0 in the backward, and gradients are finite and
    eager's (a logsumexp of -inf gave NaN)."""
    mask = torch.ones(6, 6, dtype=torch.bool)
    mask[2] = False
    fn = lambda x: F.scaled_dot_product_attention(x, x * 0.5, x + 1, attn_mask=mask)
    x, grad_out = torch.randn(1, 2, 6, 16, requires_grad=True), torch.randn(1, 2, 6, 16)
    (ours,) = check_gradients(fn, (x,), grad_out)
    assert torch.isfinite(ours).all()
    assert plan_lines("matrix::attention(") and plan_lines("matrix::attention_backward(")


def test_long_key_sequences_train_on_aten_and_say_why():
    q = torch.randn(1, 2, 8, 16, requires_grad=True)
    k, v = torch.randn(1, 2, 513, 16, requires_grad=True), torch.randn(1, 2, 513, 16, requires_grad=True)
    check_gradients(F.scaled_dot_product_attention, (q, k, v), torch.randn(1, 2, 8, 16))
    assert not plan_lines("matrix::attention")
    reasons = [d["reason"] for g in test_graphs() for d in json.loads(g.debug_info()["decisions"])
               if not d["generated"] and "backward" in g.plan_text]
    assert any("more than 512 keys" in r for r in reasons), reasons


def test_training_plans_round_trip_through_the_cache():
    """The backward's plan step (its extra slots and gradients) is read back from plan.json."""
    x = torch.randn(2, 33, 3 * 64)
    fn = lambda x: self_attention(x, 2, causal=True)
    grad_out = torch.randn(2, 33, 64)

    def run():
        leaf = x.clone().requires_grad_()
        (compile_cpp(fn)(leaf) * grad_out).sum().backward()
        return leaf.grad

    first = run()
    assert plan_lines("matrix::attention_backward(")
    torch._dynamo.reset()
    second = run()
    outcomes = [g.counters()["cache"] for g in test_graphs() if "attention_backward" in g.plan_text]
    assert "hit" in outcomes, outcomes
    assert torch.equal(first, second)


def test_plan_round_trips_through_the_cache():
    x = torch.randn(2, 33, 3 * 64)
    fn = lambda x: self_attention(x, 2, causal=True)

    def outcomes():
        return [g.counters()["cache"] for g in test_graphs() if "matrix::attention(" in g.plan_text]

    with torch.no_grad():
        first = compile_cpp(fn)(x)
        assert outcomes() == ["built"]
        torch._dynamo.reset()
        second = compile_cpp(fn)(x)  # plan.json read back
        assert "hit" in outcomes(), outcomes()
    assert torch.equal(first, second)


def test_opinfo_samples_train_as_eager():
    """PyTorch's own OpInfo samples of F.scaled_dot_product_attention (fewer queries than keys
    with is_causal, 3-D and broadcast batch dimensions, a mask; values up to ±9, so peaked
    softmaxes), those without dropout: compiled forward and backward against float64, each
    output and q / k / v gradient within 4x eager's error plus 2e-6 of its magnitude."""
    from torch.testing._internal.common_methods_invocations import op_db

    (op,) = [o for o in op_db if o.name == "nn.functional.scaled_dot_product_attention"]
    ran = 0
    for sample in op.sample_inputs("cpu", torch.float32, requires_grad=True):
        if sample.kwargs.get("dropout_p", 0.0) != 0.0:
            continue
        torch._dynamo.reset()
        kwargs = sample.kwargs
        fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs)  # noqa: E731
        results = []
        for f, dtype in ((compile_cpp(fn), torch.float32), (fn, torch.float32), (fn, torch.float64)):
            leaves = [t.detach().to(dtype).requires_grad_() for t in (sample.input, *sample.args)]
            out = f(*leaves)
            out.backward(torch.ones_like(out) + out.detach())
            results.append([out.detach(), *(t.grad for t in leaves)])
        for ours, eager, reference in zip(*results, strict=True):
            ours_error = (ours.double() - reference).abs().max().item()
            eager_error = (eager.double() - reference).abs().max().item()
            bound = 4 * eager_error + 2e-6 * reference.abs().max().item()
            assert ours_error <= bound, (sample.kwargs, ours_error, eager_error)
        ran += bool(plan_lines("matrix::attention_backward("))
    assert ran >= 4, ran  # the 4-D samples run ours


def test_new_sequence_lengths_train_on_ours_with_symbolic_shapes():
    """A second sequence length makes Dynamo send graphs with a symbolic length; with
    shape_specializations=0 their plans run every later length: forward and backward stay on
    ours (outputs allocated per call in ATen's layout); 600 keys run ATen's kernel (bit-equal to
    eager's), in a graph of their own or past a symbolic plan's per-call check."""
    torch.manual_seed(2)
    compiled = torch.compile(lambda x: self_attention(x, 2), backend="inductor_cpp",
                             options={"shape_specializations": 0})
    for seq in (40, 70, 600, 33):
        x = torch.randn(2, seq, 3 * 64)
        grad_out = torch.randn(2, seq, 64)
        results = []
        for f in (compiled, lambda x: self_attention(x, 2)):
            leaf = x.clone().requires_grad_()
            out = f(leaf)
            (out * grad_out).sum().backward()
            results.append((out.detach(), leaf.grad))
        (ours, ours_grad), (eager, eager_grad) = results
        assert_same(ours, eager, rtol=1e-5, atol=1e-5)
        assert_same(ours_grad, eager_grad, rtol=1e-4, atol=1e-5)
        if seq == 600:
            assert torch.equal(ours, eager) and torch.equal(ours_grad, eager_grad)
    graphs = test_graphs()
    steps = [s["library"] for g in graphs for s in json.loads(g.plan_json)["steps"] if "library" in s]
    symbolic = [m["op"] for m in steps
                if m["op"].startswith("attention") and not m.get("out", m.get("grad_query"))["sizes"]]
    assert sum("matrix::attention(" in g.plan_text for g in graphs) >= 2  # static, then symbolic
    assert sum("matrix::attention_backward(" in g.plan_text for g in graphs) >= 2
    for g in graphs:
        if "aten::_scaled_dot_product" in g.plan_text:
            reasons = [d["reason"] for d in json.loads(g.debug_info()["decisions"]) if not d["generated"]]
            assert any("more than 512 keys" in r for r in reasons), reasons
    assert sorted(set(symbolic)) == ["attention", "attention_backward"], symbolic


def test_symbolic_plan_leaves_long_sequences_to_aten_per_call():
    """With shape_specializations=0 every length runs the symbolic graph's plan: attention
    there is ours too (outputs allocated per call in ATen's layout), the step checks the key
    count per call and runs ATen's kernel for 600 keys (bit-equal to eager's), ours for 40."""
    compiled = torch.compile(lambda x: self_attention(x, 2, causal=True), backend="inductor_cpp",
                             options={"shape_specializations": 0})
    for seq in (40, 600):
        x = torch.randn(1, seq, 3 * 64)
        torch._dynamo.mark_dynamic(x, 1)
        with torch.no_grad():
            ours, eager = compiled(x), self_attention(x, 2, causal=True)
        assert_same(ours, eager, rtol=1e-5, atol=1e-5)
        if seq == 600:
            assert torch.equal(ours, eager)
    (graph,) = test_graphs()
    (step,) = [s["library"] for s in json.loads(graph.plan_json)["steps"] if "library" in s]
    assert step["op"] == "attention" and step["out"]["sizes"] == [], step  # symbolic


def attention_of_contiguous_heads(q, k, v):
    """SDPA on contiguous [batch, heads, length, dim] tensors, its output viewed as rows: the
    view is valid only on the layout eager gives (a contiguous output, as the query)."""
    return F.scaled_dot_product_attention(q, k, v).view(q.shape[0], -1)


@pytest.mark.parametrize("model", ["multihead_attention", "contiguous_heads"])
def test_symbolic_plan_output_takes_the_querys_layout(model):
    """ATen's attention output is laid out as its query (empty_like), and the graph's later
    views rely on it: nn.MultiheadAttention (vit) reads q out of a [length, batch·heads, dim]
    projection and views the output's [length, batch, heads, dim] permutation as rows; a
    contiguous query gives a contiguous output. A symbolic plan allocated [batch, length,
    heads, dim] for both, and the view raised."""
    torch.manual_seed(0)
    if model == "multihead_attention":
        mha = torch.nn.MultiheadAttention(64, 4).eval()
        fn = lambda x: mha(x, x, x, need_weights=False)[0]  # noqa: E731
        shapes = [(7, 2, 64), (9, 3, 64)]  # [length, batch, embed]
    else:
        fn = lambda x: attention_of_contiguous_heads(x, x * 0.5, x + 1)  # noqa: E731
        shapes = [(2, 4, 7, 16), (3, 4, 9, 16)]
    # The second shape makes Dynamo mark the changed dims (lengths, batch) symbolic; with no
    # static copies it runs the symbolic graph's plan.
    compiled = torch.compile(fn, backend="inductor_cpp", options={"shape_specializations": 0})
    with torch.no_grad():
        for shape in shapes:
            x = torch.randn(*shape)
            assert_same(compiled(x), fn(x), rtol=1e-5, atol=1e-5)
    steps = [s["library"] for g in test_graphs() if g.counters()["calls"] > 0
             for s in json.loads(g.plan_json)["steps"] if "library" in s]
    assert any(m["op"] == "attention" and m["out"]["sizes"] == [] for m in steps), steps

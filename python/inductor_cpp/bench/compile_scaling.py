"""`python -m inductor_cpp.bench compile_scaling`: compile time against graph size.

Why: issue 40 asks that no pass be super-linear in graph size. This builds a GPT-style training
step (token and position embeddings, pre-norm blocks of causal attention and a GELU MLP, an LM
head and cross entropy) at 1x, 2x and 4x its base depth, captures the forward and backward
graphs Dynamo and AOT autograd hand us (one CPU training step), then compiles each graph again,
cold (cache off), for the target: `cpu` (C++ through the compiler) or `cuda` (the graph's
devices rewritten to cuda:0: lowering, passes, LLVM NVPTX and ptxas run on this machine, no
GPU needed). Per graph and depth it reports nodes, kernels and the phases of the build record
(lowering, passes, emit, ptxas / C++ compiler) and the time per node; a phase whose time per
node grows with depth is super-linear.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from . import timing

HELP = "compile time against graph size: a GPT-style training step at 1x/2x/4x depth, per phase"


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.fc, self.out = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class TinyGpt(nn.Module):
    def __init__(self, depth: int, hidden: int, heads: int, vocab: int, seq: int):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(depth))
        self.ln, self.head = nn.LayerNorm(hidden), nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def to_device(description: Any, device: str) -> Any:
    """The graph description with every "device": "cpu" replaced by `device`."""
    if isinstance(description, dict):
        return {k: (device if k == "device" and v == "cpu" else to_device(v, device))
                for k, v in description.items()}
    if isinstance(description, list):
        return [to_device(v, device) for v in description]
    return description


def capture_graphs(depth: int, sizes: dict[str, int]) -> list[tuple]:
    """The compile_graph arguments of one CPU training step of TinyGpt(depth) (forward, backward)."""
    from .. import _C, dynamo_backend

    seen: list[tuple] = []
    compile_graph = _C.compile_graph

    def record(*args):
        seen.append(args)
        return compile_graph(*args)

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TinyGpt(depth, sizes["hidden"], sizes["heads"], sizes["vocab"], sizes["seq"])
    ids = torch.randint(0, sizes["vocab"], (sizes["batch"], sizes["seq"]))
    dynamo_backend._C.compile_graph = record
    try:
        torch.compile(model, backend="inductor_cpp")(ids).backward()
    finally:
        dynamo_backend._C.compile_graph = compile_graph
        torch._dynamo.reset()
    return seen


def phases(build: dict[str, Any]) -> dict[str, float]:
    """The build record's phases in ms: lowering, passes (all), emit, and ptxas or the C++ compiler."""
    gpu = build.get("gpu") or {}
    cxx = build.get("cxx") or {}
    return {"lowering": build.get("lowering_ms", 0.0),
            "passes": sum(p["ms"] for p in build.get("passes", [])),
            "emit": build.get("emit_ms", 0.0),
            "assemble": gpu.get("ptxas_ms", 0.0) or 1e3 * cxx.get("seconds", 0.0)}


def recompile(args: tuple, device: str) -> dict[str, Any]:
    """Compiles one captured graph again for `device`, cache off: nodes, kernels, phases."""
    from .. import _C

    description, constants, options, environment, diagnostics = args
    graph = to_device(json.loads(description), device) if device != "cpu" else json.loads(description)
    opts = dict(json.loads(options), cache=False)
    diag = dict(json.loads(diagnostics), log_artifacts=[], progress=False)
    compiled = _C.compile_graph(json.dumps(graph), constants, json.dumps(opts), environment, json.dumps(diag))
    info = compiled.debug_info()
    build, timings = (json.loads(v) if isinstance(v, str) else v for v in (info["build"], info["timings"]))
    return {"nodes": len(graph["nodes"]), "kernels": build.get("kernels", 0),
            "total_ms": timings.get("total_ms", 0.0), "phases": phases(build)}


def report(rows: list[dict[str, Any]]) -> str:
    headers = ["depth", "graph", "nodes", "kernels", "total ms", "us/node", "lowering ms", "passes ms",
               "emit ms", "ptxas / cc ms"]
    table = [[r["depth"], r["graph"], r["nodes"], r["kernels"], f"{r['total_ms']:.0f}",
              f"{1e3 * r['total_ms'] / max(r['nodes'], 1):.0f}",
              *(f"{r['phases'][k]:.1f}" for k in ("lowering", "passes", "emit", "assemble"))]
             for r in rows]
    return timing.format_table(headers, table)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", choices=["cpu", "cuda"], default="cuda",
                   help="what the captured graphs are compiled for (cuda needs no GPU, only the NVPTX build)")
    p.add_argument("--layers", type=int, default=2, help="base depth (1x)")
    p.add_argument("--scales", default="1,2,4", help="depth multiples of --layers")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--json", metavar="PATH", default=None, help="write the rows as JSON")


def run(args: argparse.Namespace) -> int:
    sizes = {k: getattr(args, k) for k in ("hidden", "heads", "vocab", "seq", "batch")}
    device = "cuda:0" if args.target == "cuda" else "cpu"
    rows = []
    for scale in (int(s) for s in args.scales.split(",")):
        depth = args.layers * scale
        graphs = capture_graphs(depth, sizes)
        for number, captured in enumerate(graphs):
            row = recompile(captured, device)
            row.update(depth=depth, graph={0: "forward", 1: "backward"}.get(number, str(number)))
            rows.append(row)
            print(report(rows[-1:]).splitlines()[-1], flush=True)
    print(f"\ncompile time against depth, target {args.target}, cold (cache off)")
    print(report(rows))
    if args.json:
        timing.write_json(args.json, {"environment": timing.environment_info(), "target": args.target,
                                      "sizes": sizes, "rows": rows})
    return 0

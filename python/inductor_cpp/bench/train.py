"""The training benchmark: `python -m inductor_cpp.bench train`.

Whole training steps (zero_grad, forward, cross-entropy, backward, optimizer step) of the
issue-4 models (train_models.py: MLP + SGD/momentum, CNN with BatchNorm + Adam, 2-layer
transformer encoder + AdamW), side by side in one process: eager, stock
torch.compile(backend="inductor") and torch.compile(backend="inductor_cpp"), the compiled
variants compiling the model and the optimizer step. Per model and variant:

  * correctness: the first `--check-steps` losses of each compiled variant against eager's,
    from identical initial weights (rtol 1e-3: Adam's normalization amplifies last-bit
    differences over steps);
  * first steps: wall time of the first step (forward + backward + optimizer compiles);
  * step time: median over interleaved rounds after warm-up;
  * peak memory: the largest net amount of CPU memory the step allocates above what it held at
    its start, from the profiler's allocation events (torch.profiler, profile_memory=True; our
    runtime allocates through ATen's CPU allocator, so it is seen like eager's), and its ratio
    to eager's.
--mk-off adds inductor_cpp with matrix_kernels off (ATen matmuls and convolutions, "ours mk=off");
--only encoder,resnet18 runs the models of the matrix kernels' training paths
(train_models.EXTRA_MODELS); --profile N prints, per variant, the profiler's N ops (and
generated kernels) with the most self CPU time over 3 steps: where a step's time goes.
The exit code is 1 when an inductor_cpp variant is wrong or fails.
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from . import timing
from .train_models import EXTRA_MODELS, MODELS, build_model, make_trainer

HELP = "training steps (model + optimizer) eager vs stock Inductor vs inductor_cpp, with peak memory"

# variant -> (backend, torch.compile options); None: eager
VARIANTS: dict[str, tuple[str, dict] | None] = {
    "eager": None, "stock": ("inductor", {}), "ours": ("inductor_cpp", {})}
MK_OFF = "ours mk=off"
PROFILE_STEPS = 3


def peak_step_memory(step) -> int:
    """Bytes: the highest running total of the step's CPU allocations minus frees."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = sorted((e for e in prof.events() if e.self_cpu_memory_usage), key=lambda e: e.time_range.start)
    running = peak = 0
    for e in events:
        running += e.self_cpu_memory_usage
        peak = max(peak, running)
    return peak


def op_shares(name: str, model, x, target) -> list[dict[str, Any]]:
    """Per graph of one compiled training step (forward, backward, optimizer): ops generated,
    ops run as ATen calls and which ones, from inductor_cpp.explain."""
    import inductor_cpp  # noqa: PLC0415 (registers the backend; imported late like the others)

    trainer = make_trainer(name, model, x, target, backend=None)

    def step():
        trainer.optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(trainer.model(trainer.x), trainer.target).backward()
        trainer.optimizer.step()

    shares = []
    for g in inductor_cpp.explain(step)().graphs:
        fallback: dict[str, int] = {}
        for o in g.fallbacks:
            fallback[o.op] = fallback.get(o.op, 0) + 1
        shares.append({"kind": g.kind, "generated": len(g.generated), "fallback": fallback,
                       "whole_graph_eager": g.eager_reason})
    return shares


def profile_table(step, rows: int) -> str:
    """The profiler's `rows` ops with the most self CPU time over PROFILE_STEPS steps."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(PROFILE_STEPS):
            step()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows,
                                     max_name_column_width=110)


def _trainer(name: str, model, x, target, spec: tuple[str, dict] | None):
    backend, options = spec or (None, None)
    return make_trainer(name, model, x, target, backend, options=options or None)


def run_model(name: str, variants: dict[str, tuple[str, dict] | None],
              args: argparse.Namespace) -> dict[str, Any]:
    timing.seed_all(args.seed)
    model, x, target = build_model(name, args.size)
    ops = op_shares(name, model, x, target)
    torch._dynamo.reset()
    trainers = {v: _trainer(name, model, x, target, spec) for v, spec in variants.items()}
    result: dict[str, Any] = {"model": name, "variants": {}, "ops": ops}
    losses: dict[str, list[float]] = {}
    for v, trainer in trainers.items():
        entry: dict[str, Any] = {}
        try:
            first_s, loss = timing.time_once(trainer.step)
            entry["first_step_s"] = first_s
            losses[v] = [loss.item()] + [trainer.step().item() for _ in range(args.check_steps - 1)]
        except Exception as e:  # reported, never fatal
            entry["error"] = f"{type(e).__name__}: {e}"
        result["variants"][v] = entry
    for v, entry in result["variants"].items():
        if "error" in entry or v == "eager":
            continue
        expected = torch.tensor(losses["eager"], dtype=torch.float64)
        actual = torch.tensor(losses[v], dtype=torch.float64)
        entry["max_loss_rel_diff"] = ((actual - expected).abs() / expected.abs()).max().item()
        entry["correct"] = bool(torch.allclose(actual, expected, rtol=1e-3, atol=1e-5))
    ok = {v: t.step for v, t in trainers.items() if "error" not in result["variants"][v]}
    times = timing.time_interleaved(ok, args.iters, args.warmup)
    for v, t in times.items():
        entry = result["variants"][v]
        entry["median_ms"] = t.median_ms
        entry["peak_bytes"] = peak_step_memory(ok[v])
        if args.profile:
            print(f"{name} / {v}: self CPU time over {PROFILE_STEPS} steps\n"
                  f"{profile_table(ok[v], args.profile)}", flush=True)
    eager = result["variants"].get("eager", {})
    for v, entry in result["variants"].items():
        if "median_ms" in entry and "median_ms" in eager:
            entry["speedup_vs_eager"] = eager["median_ms"] / entry["median_ms"]
            entry["peak_vs_eager"] = entry["peak_bytes"] / max(eager["peak_bytes"], 1)
    stock = result["variants"].get("stock", {})
    for v, entry in result["variants"].items():
        if v.startswith("ours") and "median_ms" in stock and "median_ms" in entry:
            entry["speedup_vs_stock"] = stock["median_ms"] / entry["median_ms"]
    return result


def report(results: list[dict[str, Any]]) -> str:
    rows = []
    for r in results:
        for v, e in r["variants"].items():
            if "error" in e:
                rows.append([r["model"], v, "ERROR " + e["error"][:60], "", "", "", "", ""])
                continue
            rows.append([
                r["model"], v, timing.format_ms(e.get("median_ms", 0) / 1e3),
                timing.format_ratio(e.get("speedup_vs_eager")),
                timing.format_ratio(e.get("speedup_vs_stock")) if v.startswith("ours") else "",
                f"{e.get('peak_bytes', 0) / 2**20:.1f} MiB ({e.get('peak_vs_eager', 0):.2f}x)",
                timing.format_s(e.get("first_step_s")),
                "" if v == "eager" else ("ok" if e.get("correct") else "WRONG") +
                f" ({e.get('max_loss_rel_diff', 0):.1e})",
            ])
    return timing.format_table(
        ["model", "variant", "step", "vs eager", "vs stock", "peak memory (vs eager)", "first step", "losses"],
        rows)


def ops_report(results: list[dict[str, Any]]) -> str:
    lines = ["ops of each compiled graph: generated / run as ATen (which)"]
    for r in results:
        for g in r["ops"]:
            total = g["generated"] + sum(g["fallback"].values())
            aten = ", ".join(f"{op.removeprefix('aten::')} x{n}" for op, n in sorted(g["fallback"].items()))
            lines.append(f"  {r['model']:<12} {g['kind']:<9} {g['generated']}/{total} generated"
                         + (f"; ATen: {aten}" if aten else ""))
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op threads (default: torch.get_num_threads())")
    p.add_argument("--only", default=None, metavar="NAME,NAME",
                   help=f"models, of: {','.join(MODELS + EXTRA_MODELS)} (default: {','.join(MODELS)})")
    p.add_argument("--size", choices=["test", "bench"], default="bench", help="model and batch sizes")
    p.add_argument("--no-stock", action="store_true", help="skip stock Inductor (saves minutes)")
    p.add_argument("--mk-off", action="store_true",
                   help="also run inductor_cpp with matrix_kernels off")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="print each variant's N ops with the most self CPU time (0: none)")
    p.add_argument("--iters", type=int, default=20, help="timed rounds")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds after the checked steps")
    p.add_argument("--check-steps", type=int, default=5, help="steps whose losses are compared with eager")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", default=None, help="write all results as JSON")


def run(args: argparse.Namespace) -> int:
    threads = timing.set_threads(args.threads)
    models = args.only.split(",") if args.only else list(MODELS)
    unknown = [m for m in models if m not in MODELS + EXTRA_MODELS]
    if unknown:
        raise SystemExit(f"--only: unknown model(s) {unknown}; choose from {list(MODELS + EXTRA_MODELS)}")
    variants = {k: v for k, v in VARIANTS.items() if not (args.no_stock and k == "stock")}
    if args.mk_off:
        variants[MK_OFF] = ("inductor_cpp", {"matrix_kernels": False})
    results = []
    for name in models:
        torch._dynamo.reset()
        results.append(run_model(name, variants, args))
        print(report(results[-1:]), flush=True)
    print(f"\ntraining steps, {threads} threads, median of {args.iters} interleaved rounds")
    print(report(results))
    print(ops_report(results))
    if args.json:
        timing.write_json(args.json, {"environment": timing.environment_info(), "results": results})
    failed = any("error" in r["variants"].get("ours", {}) or not r["variants"].get("ours", {}).get("correct")
                 for r in results)
    return 1 if failed else 0


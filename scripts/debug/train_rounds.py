"""Shared by the training-step probes (conv_backward_train_probe.py, attention_train_probe.py):
first steps of each variant with the matrix steps their new plans hold, then interleaved timed
rounds (the order reversed every other round) and a table of medians against eager and stock.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import inductor_cpp


def first_steps(name: str, step: Callable[[], object], counted_ops: list[str]) -> list[float]:
    """Runs two steps of a fresh variant; prints their wall time, losses and how many times each
    of counted_ops appears in the plans they compiled. Returns the losses."""
    before = {id(g) for g in inductor_cpp.live_graphs()}
    start = time.perf_counter()
    losses = [float(step()) for _ in range(2)]
    plans = [g.plan_text for g in inductor_cpp.live_graphs() if id(g) not in before]
    counts = ", ".join(f"{op} {sum(text.count(op + '(') for text in plans)}" for op in counted_ops)
    print(f"{name}: first two steps {time.perf_counter() - start:.1f} s, losses {losses}; {counts}",
          flush=True)
    return losses


def timed_rounds(steps: dict[str, Callable[[], object]], losses: dict[str, list[float]],
                 rounds: int) -> None:
    """Times `rounds` interleaved rounds of every variant's step and prints median step times,
    ratios to "eager" (and to "stock" when present) and |loss - eager's| of the first steps."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for r in range(rounds):
        for name in (list(steps) if r % 2 == 0 else list(reversed(steps))):
            start = time.perf_counter()
            steps[name]()
            times[name].append(time.perf_counter() - start)
    eager = statistics.median(times["eager"])
    stock = statistics.median(times["stock"]) if "stock" in times else None
    for name in steps:
        med = statistics.median(times[name])
        diff = max(abs(a - b) for a, b in zip(losses[name], losses["eager"]))
        vs_stock = f"  {stock / med:5.2f}x stock" if stock else ""
        print(f"{name:12s} median step {med * 1e3:8.1f} ms  {eager / med:5.2f}x eager{vs_stock}  "
              f"|loss - eager| {diff:.1e}")

"""The full OpInfo correctness sweep: every op of op_db x dtypes, compiled vs eager.

Why: the CI slice (test_opinfo_slice.py) covers ~40 representative (op, dtype) pairs; this
script covers all ~700 OpInfos at float32/float64/int64/int32/bool and prints the numbers the
project tracks -- pairs total / eager-supported / correct % / generated % / ran eagerly -- the
failures grouped by error message, and, for correct pairs that are not fully generated, their
ATen fallbacks grouped by op and reason (what to lower next). It is slow (tens of minutes), so it is not a pytest test.

    python -m tests.opinfo.sweep [--dtypes float32,int64] [--ops add,max.reduction_with_dim]
                                 [--max-samples N] [--json out.json] [--workers 2]
    python tests/opinfo/sweep.py ...   (same)

The protocol per sample is harness.py's. The pairs run in worker processes (--workers, default
the number of cores, at most 4), so a backend crash (segfault, abort) or a hang costs one pair --
reported as "crash"/"timeout" with the tail of the worker's stderr -- and not the sweep.
`--workers 0` runs everything in this process (no protection; easiest to debug).

Progress goes to stderr, only if stderr is a TTY. Exit status: 0, also with failures (the
sweep measures; the slice enforces).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import harness  # noqa: E402  (needs the path above)


def _quiet() -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("inductor_cpp").setLevel(logging.ERROR)
    logging.getLogger("torch").setLevel(logging.ERROR)


# ---- worker side ---------------------------------------------------------------------------------

def worker_main(max_samples: int | None) -> int:
    """Reads 'op|dtype' lines on stdin, answers one JSON line per pair on the original stdout;
    anything else written to stdout goes to stderr instead, so it cannot break the protocol."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _quiet()
    threads = os.environ.get("OPINFO_SWEEP_THREADS")
    if threads:
        import torch

        torch.set_num_threads(int(threads))
    proto.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        key = line.strip()
        if not key:
            continue
        name, dtype = key.rsplit("|", 1)
        print(f"=== {key}", file=sys.stderr, flush=True)
        try:
            result = harness.run_pair(harness.find_op(name), dtype, max_samples).to_dict()
        except BaseException as e:  # a harness bug: report it as the pair's failure
            result = harness.PairResult(name, dtype, "fail",
                                        "harness error: " + harness._short_error(e)).to_dict()
        proto.write(json.dumps(result) + "\n")
    return 0


class Worker:
    def __init__(self, max_samples: int | None, env: dict, log_dir: Path, n: int):
        self.args = [sys.executable, str(Path(__file__).resolve()), "--worker"]
        if max_samples:
            self.args += ["--max-samples", str(max_samples)]
        self.env, self.log_dir, self.n, self.starts = env, log_dir, n, 0
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.starts += 1
        self.log_path = self.log_dir / f"worker{self.n}.{self.starts}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env=self.env, bufsize=1)
        if self._read(600) is None:
            raise RuntimeError(f"sweep worker did not start; see {self.log_path}")

    def _read(self, timeout: float) -> dict | None:
        assert self.proc and self.proc.stdout
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def log_tail(self, lines: int = 6) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        text = [l for l in text if l.strip() and not l.startswith("===")]
        return " | ".join(text[-lines:])[-800:]

    def run(self, key: str, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc and self.proc.stdin
        name, dtype = key.rsplit("|", 1)
        start = time.perf_counter()
        try:
            self.proc.stdin.write(key + "\n")
            self.proc.stdin.flush()
            result = self._read(timeout)
        except (BrokenPipeError, OSError, ValueError):
            result = None
        if result is not None:
            return result
        seconds = round(time.perf_counter() - start, 1)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            status, reason = "timeout", f"no result after {seconds}s (limit {timeout}s)"
        else:
            code = self.proc.returncode
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
            status, reason = "crash", f"worker died ({how}): {self.log_tail()}"
        self.proc = None
        return harness.PairResult(name, dtype, status, reason, seconds=seconds).to_dict()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# ---- main side ---------------------------------------------------------------------------------

def select_pairs(dtypes: list[str], ops: list[str] | None) -> list[tuple[object, str]]:
    pairs = []
    names = set(ops or [])
    seen = set()
    for op in harness.op_db():
        name = harness.pair_name(op)
        if names and name not in names and op.name not in names:
            continue
        seen.update({name, op.name})
        for dtype in harness.supported_dtype_names(op, dtypes):
            pairs.append((op, dtype))
    unknown = names - seen
    if unknown:
        raise SystemExit(f"unknown op(s): {sorted(unknown)}")
    return pairs


def group_key(error: str) -> str:
    """The error with the specifics (numbers, sizes, source locations) taken out."""
    s = re.sub(r"\([^()]*\.py:\d+ in [^()]*\)", "(<source>)", error)
    s = re.sub(r"0x[0-9a-fA-F]+", "0x?", s)
    if "values differ" in s:
        s = s.split("values differ")[0] + "values differ"
    s = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", s)
    return s[:240]


def summarize(results: list[harness.PairResult]) -> dict:
    by_status = collections.Counter(r.status for r in results)
    supported = [r for r in results if r.status not in ("skipped", "eager_error", "sample_error")]
    correct = [r for r in supported if r.status == "pass"]
    generated = [r for r in supported if r.generated]
    pct = (lambda n: round(100.0 * n / len(supported), 1) if supported else 0.0)
    samples = [s for r in results for s in r.run_samples]
    return {
        "pairs_total": len(results),
        "ops_total": len({r.op for r in results}),
        "skipped_random": by_status["skipped"],
        "eager_unsupported": by_status["eager_error"] + by_status["sample_error"],
        "eager_supported": len(supported),
        "correct": len(correct),
        "correct_pct": pct(len(correct)),
        "generated": len(generated),
        "generated_pct": pct(len(generated)),
        "generated_trivially": sum(1 for r in generated if r.trivially_generated),
        "failing": by_status["fail"],
        "crashed": by_status["crash"],
        "timed_out": by_status["timeout"],
        "pairs_with_samples_run_eagerly": sum(1 for r in supported if r.ran_eagerly),
        "pairs_with_samples_without_graph": sum(1 for r in supported if r.no_graph),
        "correct_pairs_fully_compiled": sum(1 for r in correct
                                            if all(s.how == "compiled" for s in r.run_samples)),
        "samples_run": len(samples),
        "samples_passed": sum(s.status == "pass" for s in samples),
        "samples_run_eagerly": sum(s.how == "ran_eagerly" for s in samples),
        "samples_without_graph": sum(s.how == "no_graph" for s in samples),
        "samples_with_alias_notes": sum(bool(s.notes) for s in samples),
        "samples_passed_by_fp64": sum(bool(s.passed_by_fp64) for s in samples),
    }


def failure_groups(results: list[harness.PairResult]) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(normalized error, [(pair key, 'sample i desc: error'), ...])], biggest group first;
    a pair appears in a group once (its first sample with that error)."""
    groups: dict[str, dict[str, str]] = collections.defaultdict(dict)
    for r in results:
        if r.status in ("crash", "timeout"):
            groups[f"{r.status}: " + group_key(r.reason)].setdefault(r.key, r.reason)
        for s in r.failures:
            groups[group_key(s.error)].setdefault(r.key, f"sample {s.index} {s.desc}: {s.error}")
        if r.status == "fail" and not r.failures and r.reason:
            groups[group_key(r.reason)].setdefault(r.key, r.reason)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [(k, sorted(v.items())) for k, v in ordered]


def eager_reason_groups(results: list[harness.PairResult]) -> list[tuple[str, list[str]]]:
    groups: dict[str, set[str]] = collections.defaultdict(set)
    for r in results:
        for s in r.run_samples:
            for reason in s.eager_reasons:
                groups[group_key(reason)].add(r.key)
    return sorted(((k, sorted(v)) for k, v in groups.items()), key=lambda kv: -len(kv[1]))


def fallback_reason_groups(results: list[harness.PairResult]) -> list[tuple[str, list[str]]]:
    """[(normalized '<op>: <reason>', [pair keys])], most pairs first: why correct pairs are not
    'generated' (ops of their compiled graphs that ran as ATen calls)."""
    groups: dict[str, set[str]] = collections.defaultdict(set)
    for r in results:
        if r.status != "pass":
            continue
        for s in r.run_samples:
            for reason in s.fallback_reasons:
                groups[group_key(reason)].add(r.key)
    return sorted(((k, sorted(v)) for k, v in groups.items()), key=lambda kv: (-len(kv[1]), kv[0]))


def print_report(results: list[harness.PairResult], config: dict, out=sys.stdout,
                 examples: int = 4) -> None:
    s = summarize(results)
    w = lambda *a: print(*a, file=out)  # noqa: E731
    w(f"OpInfo sweep (inductor_cpp vs eager, {config.get('device', 'cpu').upper()}): dtypes {','.join(config['dtypes'])}; "
      f"max samples per pair: {config['max_samples'] or 'all'}; {config['seconds']:.0f}s")
    w(f"  (op,dtype) pairs total:     {s['pairs_total']} ({s['ops_total']} OpInfos)")
    w(f"  skipped (random ops):       {s['skipped_random']}")
    w(f"  eager-unsupported:          {s['eager_unsupported']} (every sample raises eagerly)")
    w(f"  eager-supported:            {s['eager_supported']}")
    w(f"  correct:                    {s['correct']} ({s['correct_pct']}%)")
    w(f"  generated (no ATen fallback): {s['generated']} ({s['generated_pct']}%), of which "
      f"{s['generated_trivially']} trivially (every compiled graph is empty)")
    w(f"  failing / crashed / timed out: {s['failing']} / {s['crashed']} / {s['timed_out']}")
    w(f"  pairs with a sample that ran eagerly (backend gave the graph back): "
      f"{s['pairs_with_samples_run_eagerly']}")
    w(f"  pairs with a sample where Dynamo compiled no graph: "
      f"{s['pairs_with_samples_without_graph']}")
    w(f"  correct pairs with every sample compiled by inductor_cpp: "
      f"{s['correct_pairs_fully_compiled']}")
    w(f"  samples: {s['samples_run']} run, {s['samples_passed']} pass, "
      f"{s['samples_run_eagerly']} ran eagerly, {s['samples_without_graph']} without a graph, "
      f"{s['samples_with_alias_notes']} with an aliasing note, "
      f"{s['samples_passed_by_fp64']} passed by the float64 second chance")
    groups = failure_groups(results)
    if groups:
        w(f"\nFailures by error ({len(groups)} groups):")
        for key, members in groups:
            w(f"\n[{len(members)} pair(s)] {key}")
            for pair, detail in members[:examples]:
                w(f"    {pair}: {detail[:700]}")
            if len(members) > examples:
                w(f"    ... and: {', '.join(p for p, _ in members[examples:])}")
    eager = eager_reason_groups(results)
    if eager:
        w("\nGraphs that ran eagerly, by reason:")
        for key, pairs in eager:
            w(f"  [{len(pairs)} pair(s)] {key}: {', '.join(pairs[:8])}"
              + (" ..." if len(pairs) > 8 else ""))
    fallbacks = fallback_reason_groups(results)
    if fallbacks:
        w(f"\nATen fallbacks in compiled graphs of correct pairs, by op and reason "
          f"({len(fallbacks)} groups; a pair counts once per group):")
        for key, pairs in fallbacks[:40]:
            w(f"  [{len(pairs)} pair(s)] {key[:200]}: {', '.join(pairs[:6])}"
              + (" ..." if len(pairs) > 6 else ""))
        if len(fallbacks) > 40:
            w(f"  ... and {len(fallbacks) - 40} smaller groups (all in --json)")
    notes = collections.defaultdict(list)
    for r in results:
        for smp in r.run_samples:
            if smp.notes:
                notes[r.key].append(f"sample {smp.index} {smp.desc}: {smp.notes[0]}")
    if notes:
        w(f"\nAliasing notes (not failures), {len(notes)} pair(s):")
        for key, items in sorted(notes.items()):
            w(f"    {key}: {items[0][:300]}" + (f" (+{len(items) - 1} more)" if len(items) > 1 else ""))


def run_sweep(pairs, max_samples: int | None, workers: int, timeout: float,
              progress: bool) -> list[harness.PairResult]:
    results: list[harness.PairResult | None] = [None] * len(pairs)
    pending: queue.Queue = queue.Queue()
    done = [0]
    lock = threading.Lock()

    def record(i: int, r: harness.PairResult) -> None:
        results[i] = r
        with lock:
            done[0] += 1
            if progress:
                extra = f" ({r.reason[:80]})" if r.status not in ("pass",) and r.reason else ""
                if r.failures:
                    extra = f" ({r.failures[0].error[:100]})"
                print(f"[{done[0]}/{len(pairs)}] {r.key}: {r.status}{extra}", file=sys.stderr,
                      flush=True)

    for i, (op, dtype) in enumerate(pairs):
        reason = harness.skip_reason(op)
        if reason:
            record(i, harness.PairResult(harness.pair_name(op), dtype, "skipped", reason))
        else:
            pending.put((i, harness.pair_key(op, dtype)))

    if workers == 0:
        _quiet()
        while not pending.empty():
            i, key = pending.get()
            name, dtype = key.rsplit("|", 1)
            record(i, harness.run_pair(harness.find_op(name), dtype, max_samples))
        return [r for r in results if r is not None]

    env = dict(os.environ)
    tmp = Path(tempfile.mkdtemp(prefix="opinfo_sweep_"))
    env.setdefault("INDUCTOR_CPP_CACHE_DIR", str(tmp / "cache"))
    env["OPINFO_SWEEP_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    env["PYTHONWARNINGS"] = "ignore"

    def loop(n: int) -> None:
        worker = Worker(max_samples, env, tmp, n)
        try:
            while True:
                try:
                    i, key = pending.get_nowait()
                except queue.Empty:
                    return
                record(i, harness.PairResult.from_dict(worker.run(key, timeout)))
        finally:
            worker.stop()

    threads = [threading.Thread(target=loop, args=(n,), daemon=True) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done_results = [r for r in results if r is not None]
    # The private cache goes; worker logs stay only where a worker crashed or hung.
    shutil.rmtree(tmp / "cache", ignore_errors=True)
    if any(r.status in ("crash", "timeout") for r in done_results):
        print(f"worker logs: {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return done_results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.opinfo.sweep", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtypes", default=",".join(harness.DEFAULT_DTYPES),
                   help="comma-separated, of: " + ",".join(harness.DTYPES))
    p.add_argument("--ops", default="", help="comma-separated OpInfo names (name or name.variant)")
    p.add_argument("--max-samples", type=int, default=0, help="first N samples per pair (0: all)")
    p.add_argument("--json", default="", help="write every pair's result here")
    p.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1),
                   help="worker processes (0: run in this process)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per pair (workers only)")
    p.add_argument("--examples", type=int, default=4, help="pairs shown per failure group")
    p.add_argument("--device", default=harness.DEVICE, choices=["cpu", "cuda"],
                   help="device the samples are made on (workers inherit it)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    os.environ["INDUCTOR_CPP_OPINFO_DEVICE"] = harness.DEVICE = args.device
    max_samples = args.max_samples or None
    if args.worker:
        return worker_main(max_samples)

    dtypes = [d for d in args.dtypes.split(",") if d]
    bad = [d for d in dtypes if d not in harness.DTYPES]
    if bad:
        p.error(f"unknown dtype(s) {bad}; known: {list(harness.DTYPES)}")
    ops = [o for o in args.ops.split(",") if o] or None
    pairs = select_pairs(dtypes, ops)
    start = time.perf_counter()
    results = run_sweep(pairs, max_samples, args.workers, args.timeout, sys.stderr.isatty())
    config = {"device": args.device, "dtypes": dtypes, "ops": ops, "max_samples": max_samples,
              "seconds": time.perf_counter() - start}
    print_report(results, config, examples=args.examples)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"config": config, "summary": summarize(results),
             "pairs": [r.to_dict() for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Fuzzing real cache entries (issue 44, point 3): a graph with generated kernels and a library
call is built once; then, one seeded mutation at a time, the entry's plan.json or meta.json is
damaged on disk and the same graph compiled again in the same process, through the real lookup
(store verification, the strict plan loader, the checked library load), and run.

Every run must end without a signal, a hang or a Python exception, with one of:
- the entry rejected: the graph rebuilt (here with no compiler on PATH, so it runs as its ATen
  plan: the rebuild path without a minute of g++ per mutation) and the answer right;
- the entry accepted and the answer right.
A plan.json rewritten *together with* meta.json's size and sha256 of it ("consistent") passes
the checksums by construction, so it tests the strict loader alone: it must be rejected or run
without a crash, but a rewrite that stays a valid plan (a buffer index swapped for another in
range and live) can compute something else, or raise a clean error when run. Checksums detect
corruption, not a writer with access to the entry: that is what the ownership and permission
checks are for (docs/cache.md). Such runs are counted, not failed. Resealed mutations leave the
kernels' expected `layouts` alone (an input copied into other strides would be read past its
end; the plan does not say how far a kernel reads). Inputs are fresh clones each run (a resealed
plan may write into one). The C++ plan_fuzz_test mutates plans without the files around them.
This file found: a device name, a slot that is empty when read, a kernel given fewer buffers
than it takes, a library operand of 2^31 wrapping negative, and a CPU plan with kernels but no
library; each is now rejected at load (docs/cache.md "Verification").
"""

from __future__ import annotations

import json

from conftest import run_python

FUZZ = r"""
    import copy, hashlib, json, os, random, shutil, sys, time, torch
    import inductor_cpp
    from inductor_cpp import dynamo_backend
    from inductor_cpp import _C

    calls = []
    original = _C.compile_graph
    def capture(*args):
        calls.append(args)
        return original(*args)
    dynamo_backend._C.compile_graph = capture

    def f(x, w):
        h = torch.nn.functional.gelu(x @ w) * 2 + x.sum()
        return torch.softmax(h, dim=-1), h.amax(dim=0)
    x = torch.randn(6, 10)
    w = torch.randn(10, 7)
    with torch.no_grad():
        expected = f(x, w)
        got = torch.compile(f, backend="inductor_cpp")(x, w)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(got, expected))
    assert len(calls) == 1, len(calls)
    args = calls[0]
    compiled = original(*args)
    key = compiled.key
    root = os.environ["INDUCTOR_CPP_CACHE_DIR"]
    entry = os.path.join(root, key[:2], key)
    pristine = entry + ".pristine"
    shutil.copytree(entry, pristine)
    inputs = [x, w]
    os.environ["PATH"] = ""  # a rejected entry's rebuild cannot compile: its ATen plan runs

    def run_once(resealed):
        c = original(*args)
        try:
            out = c([t.clone() for t in inputs])  # a resealed plan may write into an input
            ok = len(out) == len(expected) and all(
                a.shape == b.shape and torch.allclose(a, b, atol=1e-5) for a, b in zip(out, expected))
        except RuntimeError as e:  # a resealed plan the loader could not tell from a valid one
            if not resealed:
                raise
            return c.cache_outcome + " (error: " + str(e).splitlines()[0][:60] + ")", False
        return c.cache_outcome, ok

    # ---- mutations of a JSON document -------------------------------------------------------
    def paths(node, here=()):
        yield here
        if isinstance(node, dict):
            for k, v in node.items():
                yield from paths(v, here + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from paths(v, here + (i,))

    def get(node, path):
        for p in path:
            node = node[p]
        return node

    def replacements(rng, value):
        big = [2**31, 2**31 - 1, 2**32 + 3, 2**62, -2**62, 2**63 - 1]
        if isinstance(value, bool):
            return [not value, 0, "true", None]
        if isinstance(value, int):
            return [-1, 0, value + 1, value - 1, value * 1000 + 7, rng.choice(big), 1.5, str(value), None, [value]]
        if isinstance(value, float):
            return [float("nan"), -0.0, 1e308, 0, str(value), None]
        if isinstance(value, str):
            return ["", "../" * 6 + "etc/passwd", "/tmp/x.so", value + "/", value[:-1], "x" * 5000,
                    "kernels.so", "plan.json", "meta.json", 7, None, {"a": 1}]
        if isinstance(value, list):
            return [[], value + value[:1], value[:-1], value[::-1], {}, None, [None] * len(value)]
        if isinstance(value, dict):
            return [{}, [], None, 0, dict(list(value.items())[:-1])]
        return [0, "", [], {}]

    # The layouts a resealed plan may not change: the kernels were compiled for them, and an
    # input copied into other strides than those would be read past its end (module docstring).
    GEOMETRY = {"layouts"}

    def mutate_tree(rng, doc, resealed):
        all_paths = [p for p in paths(doc) if not (resealed and GEOMETRY & set(map(str, p)))]
        path = rng.choice(all_paths)
        if not path:
            return rng.choice([[], "null", 0, {"format": 1}]), "root replaced"
        parent = get(doc, path[:-1])
        last = path[-1]
        what = rng.random()
        if what < 0.15 and isinstance(parent, dict):
            del parent[last]
            return doc, f"deleted {path}"
        if what < 0.2 and isinstance(parent, dict):
            parent["unknown_" + str(rng.randrange(100))] = rng.choice([1, "x", [], {}])
            return doc, f"added a key beside {path}"
        new = rng.choice(replacements(rng, parent[last]))
        parent[last] = new
        return doc, f"{path} := {str(new)[:60]}"

    def mutate_bytes(rng, data):
        kind = rng.randrange(6)
        if kind == 0:
            cut = rng.randrange(len(data))
            return data[:cut], f"truncated at {cut}"
        if kind == 1:
            i = rng.randrange(len(data))
            return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:], f"bit flip at {i}"
        if kind == 2:
            return b"", "emptied"
        if kind == 3:
            depth = rng.choice([1000, 100000])
            return b"[" * depth + b"]" * depth, f"nested {depth} deep"
        if kind == 4:
            i = rng.randrange(len(data))
            return data[:i] + b"\x00\xff{[\"" + data[i:], f"garbage at {i}"
        return data + data, "doubled"

    def rehash(meta_path, name, data):
        meta = json.load(open(meta_path))
        meta["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        open(meta_path, "w").write(json.dumps(meta))

    rng = random.Random(int(os.environ.get("FUZZ_SEED", "0")))
    n = int(os.environ.get("FUZZ_N", "1000"))
    trace = os.environ["FUZZ_TRACE"]
    counts = {}
    wrong = []
    start = time.time()
    for i in range(n):
        shutil.rmtree(entry, ignore_errors=True)
        shutil.copytree(pristine, entry)
        target = rng.choice(["plan.json", "meta.json"])
        path = os.path.join(entry, target)
        data = open(path, "rb").read()
        consistent = target == "plan.json" and rng.random() < 0.5
        if rng.random() < 0.35 and not consistent:
            data, what = mutate_bytes(rng, data)
        else:
            data, what = mutate_tree(rng, json.loads(data), consistent)
            data = json.dumps(data).encode()
        label = f"{i}: {target} {'(meta.json rehashed) ' if consistent else ''}{what}"
        with open(trace, "w") as t:  # a crash leaves the mutation that caused it here
            t.write(label)
        with open(trace + ".bytes", "wb") as t:
            t.write(data)
        open(path, "wb").write(data)
        if consistent:
            rehash(os.path.join(entry, "meta.json"), target, data)
        outcome, ok = run_once(consistent)
        kind = ("consistent " if consistent else "") + outcome + (" right" if ok else " WRONG")
        counts[kind] = counts.get(kind, 0) + 1
        if not ok and not consistent:
            wrong.append(label + " -> " + outcome)
    print(json.dumps({"counts": counts, "wrong": wrong[:20], "seconds": time.time() - start,
                      "pristine_outcome": "hit"}))
"""


def test_mutated_real_entries_are_rebuilt_or_run_right(tmp_path):
    trace = tmp_path / "mutation.txt"
    env = {"INDUCTOR_CPP_CACHE_DIR": str(tmp_path / "cache"), "FUZZ_N": "2000",
           "FUZZ_SEED": "44", "FUZZ_TRACE": str(trace)}
    try:
        result = run_python(FUZZ, env, timeout=600)
    except AssertionError as e:
        last = trace.read_text() if trace.exists() else "(before the first mutation)"
        raise AssertionError(f"fuzz run died at mutation {last}\n{e}") from None
    counts = result["counts"]
    assert not result["wrong"], result
    assert sum(counts.values()) == 2000, counts
    # the fuzz reached both ends: entries rejected (rebuilt as ATen plans, right) and entries
    # whose harmless damage (an unknown key, a changed creation time) still loads
    rejected = sum(v for k, v in counts.items() if "hit" not in k)
    accepted = sum(v for k, v in counts.items() if "hit" in k)
    assert rejected > 600 and accepted > 40, json.dumps(counts)

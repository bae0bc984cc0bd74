"""A standalone reproducer for one compiled graph: repro.py in each debug-dir subdirectory.

The script holds the ATen FX graph as Python code (GraphModule.code, as a Module's forward),
the inputs' recorded sizes, strides, dtypes and devices, and the graph's constant tensors
(constants.pt beside it, when there are any). It runs on the first call's inputs (inputs.pt,
saved by the debug dump when small enough), else on random inputs of the recorded layouts,
and compares inductor_cpp against eager:

    python repro.py            # torch.compile(Repro(), backend="inductor_cpp") vs Repro()
    python repro.py --direct   # this exact ATen graph through inductor_cpp's graph compiler
                               # (no Dynamo, no AOT autograd), vs eager
    python repro.py --random   # random inputs even when inputs.pt exists

Random data: floating inputs standard normal; integer inputs zeros (always in range where
they index something); bool inputs random. Sizes of graphs with symbolic shapes are the hints
of the compile that wrote the dump.
"""

from __future__ import annotations

import os
import textwrap
from typing import Any

import torch

CONSTANTS_FILE = "constants.pt"
INPUTS_FILE = "inputs.pt"


def _hint(x: Any) -> Any:
    """A concrete number for a possibly symbolic one (the example's value)."""
    if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        node = x.node
        hint = getattr(node, "hint", None)
        if hint is None:
            hint = node.shape_env.size_hint(node.expr)
        if isinstance(x, torch.SymFloat):
            return float(hint)
        return bool(hint) if isinstance(x, torch.SymBool) else int(hint)
    return x


def input_specs(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> list[tuple]:
    """Per placeholder: ("tensor", sizes, strides, dtype, device) or ("number", value)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    specs = []
    for i, node in enumerate(placeholders):
        val = node.meta.get("val", example_inputs[i] if i < len(example_inputs) else None)
        if isinstance(val, torch.Tensor):
            specs.append(("tensor", [int(_hint(s)) for s in val.shape],
                          [int(_hint(s)) for s in val.stride()], str(val.dtype), str(val.device)))
        elif val is None:
            specs.append(("number", None))
        else:
            specs.append(("number", _hint(val)))
    return specs


def constants_of(gm: torch.fx.GraphModule) -> dict[str, torch.Tensor]:
    """The tensors get_attr nodes read, by attribute name."""
    out = {}
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        value: Any = gm
        for part in str(node.target).split("."):
            value = getattr(value, part, None)
        if isinstance(value, torch.Tensor):
            out[str(node.target)] = value.detach().cpu() if value.device.type != "meta" else value
    return out


_TEMPLATE = '''\
#!/usr/bin/env python
"""Standalone reproducer of inductor_cpp graph {key} ({kind} graph {number}),
written by INDUCTOR_CPP_DEBUG_DIR.

    python repro.py            # torch.compile(Repro(), backend="inductor_cpp") vs eager
    python repro.py --direct   # this exact ATen graph through inductor_cpp's graph compiler
                               # (no Dynamo, no AOT autograd) vs eager
    python repro.py --random   # random inputs even when inputs.pt exists

Exit status 0 when the outputs match eager (rtol 1e-4, atol 1e-5, NaNs equal), 1 when not.
Inputs: the first call's (inputs.pt) when saved, else random with the recorded layouts:
floats normal, integers zero, bools random.
"""
import argparse
import math  # noqa: F401  (names the graph code may use)
import operator  # noqa: F401
import os
import sys

import torch
from torch import device, inf, nan  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
KIND = {kind!r}

# ("tensor", sizes, strides, dtype, device) or ("number", value), one per graph input
INPUTS = {inputs}


class Repro(torch.nn.Module):
    def __init__(self):
        super().__init__()
        path = os.path.join(HERE, {constants_file!r})
        if os.path.exists(path):
            for name, value in torch.load(path).items():
                *parents, leaf = name.split(".")
                owner = self
                for part in parents:
                    if not hasattr(owner, part):
                        owner.add_module(part, torch.nn.Module())
                    owner = getattr(owner, part)
                owner.register_buffer(leaf, value)

{code}


def make_inputs(random=False, seed=0):
    path = os.path.join(HERE, {inputs_file!r})
    if os.path.exists(path) and not random:
        return torch.load(path)
    g = torch.Generator().manual_seed(seed)
    out = []
    for spec in INPUTS:
        if spec[0] == "number":
            out.append(spec[1])
            continue
        _, sizes, strides, dtype, dev = spec
        dtype = getattr(torch, dtype.removeprefix("torch."))
        span = 1 + sum((s - 1) * st for s, st in zip(sizes, strides)) if all(sizes) else 0
        if dtype.is_floating_point or dtype.is_complex:
            base = torch.randn(span, generator=g).to(dtype)
        elif dtype == torch.bool:
            base = torch.randint(0, 2, (span,), generator=g).bool()
        else:
            base = torch.zeros(span, dtype=dtype)
        out.append(torch.as_strided(base, sizes, strides).to(dev))
    return out


def compile_direct(module, inputs):
    """The ATen graph itself through inductor_cpp's graph compiler (metadata from fake
    tensors, as AOT autograd would give it)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    from inductor_cpp import dynamo_backend, options

    gm = torch.fx.symbolic_trace(module)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    FakeTensorProp(gm, mode).propagate(*fake)
    compiled = dynamo_backend.compile_aten_graph(gm, fake, KIND, options.resolve())
    return lambda *args: compiled(list(args))


def flatten(out):
    if isinstance(out, (list, tuple)):
        return [y for x in out for y in flatten(x)]
    return [out]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--direct", action="store_true",
                        help="compile the ATen graph itself, without Dynamo and AOT autograd")
    parser.add_argument("--random", action="store_true",
                        help="random inputs even when the first call's inputs were saved")
    args = parser.parse_args()
    module = Repro().eval()
    print("inputs:", "random" if args.random or not os.path.exists(
        os.path.join(HERE, {inputs_file!r})) else "the first call's (inputs.pt)")
    with torch.no_grad():
        expected = flatten(module(*make_inputs(args.random)))
        if args.direct:
            run = compile_direct(module, make_inputs(args.random))
        else:
            run = torch.compile(module, backend="inductor_cpp", dynamic=False)
        actual = flatten(run(*make_inputs(args.random)))
    if len(actual) != len(expected):
        print(f"MISMATCH: {{len(actual)}} outputs, eager gives {{len(expected)}}")
        return 1
    ok = True
    for i, (a, e) in enumerate(zip(actual, expected)):
        if not isinstance(e, torch.Tensor):
            if a != e:
                print(f"output {{i}}: {{a!r}}, eager {{e!r}}")
                ok = False
            continue
        try:
            torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5, equal_nan=True)
            diff = (a.double() - e.double()).abs().max().item() if e.numel() else 0.0
            print(f"output {{i}}: {{tuple(e.shape)}} {{e.dtype}} matches eager "
                  f"(max abs diff {{diff:.3g}})")
        except AssertionError as err:
            print(f"output {{i}}: MISMATCH\\n{{err}}")
            ok = False
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def write_repro(directory: str, gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str,
                key: str, number: int) -> str:
    """Writes repro.py (and constants.pt when the graph has constants); returns its path."""
    constants = constants_of(gm)
    if constants:
        torch.save(constants, os.path.join(directory, CONSTANTS_FILE))
    code = textwrap.indent(gm.code.strip("\n"), "    ")
    text = _TEMPLATE.format(key=key, kind=kind, number=number,
                            inputs=repr(input_specs(gm, example_inputs)),
                            constants_file=CONSTANTS_FILE, inputs_file=INPUTS_FILE, code=code)
    path = os.path.join(directory, "repro.py")
    with open(path, "w") as f:
        f.write(text)
    return path

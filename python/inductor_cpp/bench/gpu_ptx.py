"""PTX text rewrites for `python -m inductor_cpp.bench gpu_raw` (gpu_raw.py launches the results).

Why: to learn what a change to our NVPTX emitter would buy before writing it, gpu_raw launches
our kernel's PTX rewritten by hand-written rules: a straight-line segment's global loads moved
ahead of its stores (loads_ahead), loads made ld.global.nc, or cache hints set per buffer
(hinted: the big input, parameter 0, against the small ones; stores). Pure text functions:
they parse just enough PTX (LLVM's NVPTX output) for these rules.
"""

from __future__ import annotations

import re


def _dest_registers(line: str) -> set[str]:
    parts = line.strip().split(None, 1)
    if len(parts) < 2 or parts[0].startswith(("st.", "@", "bar.", "bra")):
        return set()
    rest = parts[1]
    dest = rest[:rest.index("}") + 1] if rest.startswith("{") else rest.split(",")[0]
    return set(re.findall(r"%\w+", dest))


def loads_ahead(ptx: str, distance: int, non_coherent: bool = False) -> tuple[str, int]:
    """The PTX with each straight-line segment's global loads that follow its first store moved
    `distance` stores earlier (their address registers permitting); non_coherent: those loads
    become ld.global.nc. Returns the text and the number of loads moved."""
    lines = ptx.split("\n")
    out: list[str] = []
    moved = 0
    segment: list[str] = []

    def flush():
        nonlocal moved
        stores = [i for i, l in enumerate(segment) if l.strip().startswith("st.global")]
        if not stores:
            out.extend(segment)
            return
        placed: dict[int, list[str]] = {}
        keep = []
        for i, line in enumerate(segment):
            text = line.strip()
            if text.startswith("ld.global") and i > stores[0]:
                if non_coherent and not text.startswith("ld.global.nc"):
                    line = line.replace("ld.global", "ld.global.nc", 1)
                before = sum(1 for st in stores if st < i)
                target = stores[max(0, before - distance)]
                address = set(re.findall(r"%\w+", line[line.index("["):]))
                if target < i and not any(_dest_registers(segment[j]) & address
                                          for j in range(target, i)):
                    placed.setdefault(target, []).append(line)
                    moved += 1
                    continue
            keep.append((i, line))
        for i, line in keep:
            out.extend(placed.get(i, []))
            out.append(line)

    for line in lines:
        text = line.strip()
        if text.startswith("$L__"):
            flush()
            segment = [line]
            continue
        segment.append(line)
        if "bra" in text.split(None, 1)[0] if text else False:
            flush()
            segment = []
    flush()
    return "\n".join(out), moved


def param_registers(ptx: str) -> dict[int, set[str]]:
    """Per kernel parameter (pointer), the registers computed from it (a forward data flow over
    the PTX text: good enough for the address arithmetic LLVM emits)."""
    sets: dict[int, set[str]] = {}
    for m in re.finditer(r"ld\.param\.u64\s+(%rd\d+), \[\w+_param_(\d+)\]", ptx):
        sets.setdefault(int(m.group(2)), set()).add(m.group(1))
    lines = [line.strip().rstrip(";") for line in ptx.split("\n")]
    for _ in range(3):  # loops: registers defined after their use in the text
        for line in lines:
            parts = line.split(None, 1)
            if len(parts) < 2 or line.startswith(("ld.", "st.", "/", "@", "$", ".", "bra", "bar")):
                continue
            operands = [o.strip() for o in parts[1].split(",")]
            for regs in sets.values():
                if any(o in regs for o in operands[1:]):
                    regs.add(operands[0])
    return sets


POLICY = "\n\t.reg .b64 %rdpol_{0};\n\tcreatepolicy.fractional.L2::{0}.b64 %rdpol_{0}, 0f3F800000;"


def hinted(ptx: str, x_l1: str = "", x_l2: str = "", other_l1: str = "", other_l2: str = "",
           store: str = "") -> str:
    """The PTX with cache hints by buffer: loads of parameter 0 (the big input, read once) get
    L1 hint x_l1 and L2 policy x_l2 (evict_first / evict_last), the other loads (w, b: every
    row) other_l1 and other_l2; loads already hinted are left alone; stores get `store` (an
    L2 policy name, or a plain qualifier such as .cs)."""
    x_regs = param_registers(ptx).get(0, set())
    load = re.compile(r"^(\s*(?:@%p\d+\s+)?)ld\.global\.(?!nc|L2::cache_hint)(\S+)(\s+)(.*?)"
                      r"\[(%rd\d+)(.*);$", re.M)
    policies = set()

    def one_load(m):
        is_x = m.group(5) in x_regs
        hint, tail = (x_l1 if is_x else other_l1), f"[{m.group(5)}{m.group(6)}"
        l2 = x_l2 if is_x else other_l2
        if l2:
            hint, tail = hint + ".L2::cache_hint", tail + f", %rdpol_{l2}"
            policies.add(l2)
        return f"{m.group(1)}ld.global{hint}.{m.group(2)}{m.group(3)}{m.group(4)}{tail};"

    text = load.sub(one_load, ptx)
    if store.startswith("."):
        text = re.sub(r"\bst\.global\.", f"st.global{store}.", text)
    elif store:
        text = re.sub(r"^(\s*(?:@%p\d+\s+)?)st\.global\.(\S+)(\s+)(.*);$",
                      rf"\1st.global.L2::cache_hint.\2\3\4, %rdpol_{store};", text, flags=re.M)
        policies.add(store)
    if policies:
        setup = "".join(POLICY.format(p) for p in sorted(policies))
        text = re.sub(r"(\.entry [^{]*\{)", lambda m: m.group(1) + setup, text)
    return text


def hint_variants(ptx: str, case: str) -> dict[str, str]:
    out = {"x L1 no_allocate": hinted(ptx, x_l1=".L1::no_allocate"),
           "x L2 evict_first": hinted(ptx, x_l2="evict_first")}
    if case == "layernorm":
        out.update({"wb L2 evict_last": hinted(ptx, other_l2="evict_last"),
                    "wb L1+L2 evict_last": hinted(ptx, other_l1=".L1::evict_last",
                                                  other_l2="evict_last"),
                    "st L2 evict_first": hinted(ptx, store="evict_first")})
    return out


def ptx_variants(ptx: str, case: str) -> dict[str, str]:
    """Every rewrite of our kernel's PTX that gpu_raw launches, by label (besides "ptx" itself):
    the cache hints, all loads non-coherent, and loads 8 stores ahead (plain and .nc) where
    any load moves."""
    out = {f"ptx {name}": text for name, text in hint_variants(ptx, case).items()}
    out["ptx nc"] = re.sub(r"\bld\.global\.(?!nc)", "ld.global.nc.", ptx)
    for distance, nc in ((8, False), (8, True)):  # a row's loads before its stores
        text, moved = loads_ahead(ptx, distance, nc)
        if moved:
            out[f"ptx ahead{distance}{' nc' if nc else ''}"] = text
    return out

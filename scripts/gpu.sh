#!/usr/bin/env bash
# The GPU machine's script (run there through the `device` tool, with carry=["build/carry"]
# prepared by scripts/gpu_carry.sh on the development machine). Stages, each sized to fit one
# device call; results (logs, JSON, tables) go under $OUT:
#
#   bash scripts/gpu.sh build    CMake + Ninja build of the extension against the machine's
#                                Python 3.12 / torch 2.11.0+cu130, with the carried LLVM 16 headers
#   bash scripts/gpu.sh test     tests/python/test_gpu.py and test_gpu_library.py (pytest from carried
#                                wheels; GPU_TESTS: other files and options)
#   bash scripts/gpu.sh opinfo   OpInfo sweep on CUDA: float32, float16, bfloat16
#   bash scripts/gpu.sh bench    GPU micro benchmark: eager vs stock Inductor vs inductor_cpp
#   bash scripts/gpu.sh matrix   CPU matrix-kernel benchmark on the host's CPU (issue 7):
#                                `bench matrix --threads 16` (MATRIX_THREADS, MATRIX_ARGS)
#   bash scripts/gpu.sh cputest  CPU matrix-kernel pytest files on the host's AVX-512 Xeon
#                                (CPU_TESTS: files and -k; the dev machine may lack AVX-512)
#   bash scripts/gpu.sh ctest    C++ tests of the matrix kernels and the CPU emitter, whose
#                                AVX-512 variants the dev machine may skip (carried GoogleTest)
#   bash scripts/gpu.sh sweep    GEMM knob settings (blocking, ...) as ratios to torch.mm on the
#                                host's CPU, one process per setting: `bench ab -- matrix --shapes`
#                                (SWEEP_ARGS: ab's settings, e.g. "--env default --env
#                                INDUCTOR_CPP_MATRIX_BLOCKING=14,32,256,112,1024"; SWEEP_SHAPES)
#   bash scripts/gpu.sh tune     launch-shape variants of our GPU kernels (option gpu_tuning) vs
#                                stock, several processes (TUNE_VARIANTS, TUNE_ONLY, TUNE_REPEATS)
#   bash scripts/gpu.sh diag     the transformer encoder's training step, every compiled graph
#                                (forward, backward) checked against its ATen graph run eagerly
#                                on the same inputs: the worst outputs per graph, with the node
#                                that produces them (finds a kernel that computes wrong values)
#   bash scripts/gpu.sh probe    any bench subcommand on the host with the built package
#                                (PROBE="train --only resnet18 --profile 20 --threads 16": the
#                                words after `python -m inductor_cpp.bench`; output in probe.txt,
#                                its JSON results copied to $OUT)
#   bash scripts/gpu.sh compare  `bench suite --device cuda` (COMPARE) on the tree carried in
#                                build/base_src and on this one: before / after a change
#   bash scripts/gpu.sh all      all of the above (longer than one call allows: prefer stages)
#
# Every stage builds first (incremental: seconds when the machine still holds build/gpu).
# Knobs: OPINFO_DTYPES, OPINFO_OPS (comma-separated OpInfo names), OPINFO_MAX_SAMPLES, OPINFO_WORKERS, OPINFO_SECONDS, BENCH_ARGS.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-$ROOT/out}
CARRY=$ROOT/build/carry
BUILD=${GPU_BUILD_DIR:-$ROOT/build/gpu}
mkdir -p "$OUT"
# /opt/gcc's g++ (first on PATH there, and $CXX in its environment) links libstdc++
# statically: a second libstdc++ beside torch's crashes in iostreams (seen: a segfault in
# std::ostream inside _C). The distribution's compiler builds us and the CPU kernels.
export CXX=${GPU_CXX:-/usr/bin/g++} CC=${GPU_CC:-/usr/bin/gcc}

# Few files come back from a device call, so $OUT gets only: summary.txt (this log),
# test_gpu.txt, bench_gpu.txt/.json, opinfo_cuda.txt/.json, matrix_cpu.txt/.json, sweep_cpu.txt/.json, tune_gpu.txt, diag_gpu.txt, probe.txt (+ its JSON). Build logs stay in
# $BUILD. (Run at most about six of these per call: e.g. "build test bench diag".)
log() { echo "[gpu.sh $(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt" >&2; }

# Carried headers and libraries: xbyak + sleef for our build and the CPU kernels' g++ runs;
# the wheels unpacked into a directory put on PYTHONPATH (expecttest for OpInfo, pytest).
setup_carry() {
  export CPATH="$CARRY/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$CARRY/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local site=$ROOT/build/gpu_site
  if [ ! -f "$site/.complete" ]; then
    mkdir -p "$site"
    for w in "$CARRY"/wheels/*.whl; do "$PY" -m zipfile -e "$w" "$site"; done
    touch "$site/.complete"
  fi
  if [ ! -f "$site/inductor_cpp-0.0.0.dist-info/entry_points.txt" ]; then
    # Our package is not pip-installed there: this metadata makes its Dynamo entry point
    # (pyproject.toml), hence backend="inductor_cpp", visible from PYTHONPATH.
    mkdir -p "$site/inductor_cpp-0.0.0.dist-info"
    printf 'Metadata-Version: 2.1\nName: inductor_cpp\nVersion: 0.0.0\n' \
      >"$site/inductor_cpp-0.0.0.dist-info/METADATA"
    printf '[torch_dynamo_backends]\ninductor_cpp = inductor_cpp.dynamo_backend:backend\n' \
      >"$site/inductor_cpp-0.0.0.dist-info/entry_points.txt"
  fi
  export PYTHONPATH="$ROOT/python:$ROOT/tests/python:$site"
  export INDUCTOR_CPP_CACHE_DIR=${INDUCTOR_CPP_CACHE_DIR:-$ROOT/build/gpu_cache}
}

# The machine has libLLVM-16.so.1 but neither headers nor LLVM's CMake config (whose exports
# name static libraries it lacks): unpack the carried headers and write a minimal config that
# find_package(LLVM 16 CONFIG) accepts, with the imported target LLVM on the machine's library.
setup_llvm() {
  local prefix=$BUILD-llvm
  local lib
  lib=$(ls /usr/lib/llvm-16/lib/libLLVM-16.so /usr/lib/llvm-16/lib/libLLVM-16.so.1 \
           /usr/lib/x86_64-linux-gnu/libLLVM-16.so.1 /usr/lib/x86_64-linux-gnu/libLLVM-16.so 2>/dev/null | head -1)
  if [ -z "$lib" ]; then log "no libLLVM-16 on this machine: the GPU emitter is not built"; return 1; fi
  mkdir -p "$prefix/include" "$prefix/cmake"
  [ -f "$prefix/include/llvm/IR/IRBuilder.h" ] || tar -xzf "$CARRY/llvm16.tgz" -C "$prefix/include"
  cat >"$prefix/cmake/LLVMConfig.cmake" <<CMAKE
# Written by scripts/gpu.sh: LLVM 16 headers carried from Debian 12, the machine's $lib.
set(LLVM_FOUND TRUE)
set(LLVM_PACKAGE_VERSION 16.0.6)
set(LLVM_VERSION_MAJOR 16)
set(LLVM_INCLUDE_DIRS "$prefix/include")
set(LLVM_DEFINITIONS "-D_GNU_SOURCE;-D__STDC_CONSTANT_MACROS;-D__STDC_FORMAT_MACROS;-D__STDC_LIMIT_MACROS")
set(LLVM_TARGETS_TO_BUILD "AMDGPU;NVPTX;X86")
if(NOT TARGET LLVM)
  add_library(LLVM SHARED IMPORTED)
  set_target_properties(LLVM PROPERTIES IMPORTED_LOCATION "$lib")
endif()
CMAKE
  cat >"$prefix/cmake/LLVMConfigVersion.cmake" <<'CMAKE'
set(PACKAGE_VERSION 16.0.6)
if(PACKAGE_FIND_VERSION_MAJOR EQUAL 16)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
CMAKE
  LLVM_CMAKE_DIR=$prefix/cmake
}

stage_build() {
  setup_carry
  local llvm_args=(-DINDUCTOR_CPP_NVPTX=OFF)
  if setup_llvm; then llvm_args=(-DLLVM_DIR="$LLVM_CMAKE_DIR" -DINDUCTOR_CPP_NVPTX=ON); fi
  local start=$SECONDS
  # A build directory configured with another compiler (an older run of this script) is redone.
  if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=$CXX\$" "$BUILD/CMakeCache.txt"; then
    log "build dir configured with another compiler: reconfiguring"
    rm -rf "$BUILD"
  fi
  if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DPython_EXECUTABLE="$PY" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_C_COMPILER="$CC" -DINDUCTOR_CPP_PYTHON=ON \
      -DINDUCTOR_CPP_TESTS=OFF "${llvm_args[@]}" >"$BUILD.cmake.log" 2>&1 ||
      { log "cmake failed:"; tail -30 "$BUILD.cmake.log" | tee -a "$OUT/summary.txt" >&2; return 1; }
  fi
  cmake --build "$BUILD" -j "$(nproc)" >"$BUILD.build.log" 2>&1 ||
    { log "build failed:"; grep -E "error|Error" -A3 "$BUILD.build.log" | head -60 | tee -a "$OUT/summary.txt" >&2; return 1; }
  [ -n "${GPU_NO_INSTALL:-}" ] || cp "$BUILD"/python/_C*.so "$ROOT/python/inductor_cpp/"
  grep -sE "NVPTX emitter|CXX compiler:" "$BUILD.cmake.log" | tee -a "$OUT/summary.txt" >&2 || true
  log "build ok in $((SECONDS - start)) s"
}

stage_test() {
  setup_carry
  log "${GPU_TESTS:-test_gpu.py test_gpu_library.py test_cuda_graphs.py test_hf_models.py test_optional_args.py test_decompositions.py}"
  # shellcheck disable=SC2086  # GPU_TESTS is a list of files and pytest options
  (cd "$ROOT/tests/python" && timeout "${TEST_SECONDS:-420}" "$PY" -m pytest -q -p no:cacheprovider \
    -p no:logging --tb=short -rfE ${GPU_TESTS:-test_gpu.py test_gpu_library.py test_cuda_graphs.py test_hf_models.py test_optional_args.py test_decompositions.py} >"$OUT/test_gpu.txt" 2>&1)
  local rc=$?
  tail -40 "$OUT/test_gpu.txt"
  return $rc
}

stage_opinfo() {
  setup_carry
  local dtypes=${OPINFO_DTYPES:-float32,float16,bfloat16}
  log "OpInfo sweep on CUDA ($dtypes)"
  (cd "$ROOT" && timeout "${OPINFO_SECONDS:-480}" "$PY" tests/opinfo/sweep.py --device cuda \
    --dtypes "$dtypes" --max-samples "${OPINFO_MAX_SAMPLES:-4}" --workers "${OPINFO_WORKERS:-12}" \
    --timeout 60 --examples 2 ${OPINFO_OPS:+--ops "$OPINFO_OPS"} --json "$OUT/opinfo_cuda.json" >"$OUT/opinfo_cuda.txt" 2>"$BUILD.opinfo.err")
  head -60 "$OUT/opinfo_cuda.txt"
}

stage_bench() {
  setup_carry
  log "GPU micro benchmark"
  (cd "$ROOT" && timeout "${BENCH_SECONDS:-420}" "$PY" -m inductor_cpp.bench gpu ${BENCH_ARGS:-} \
    --json "$OUT/bench_gpu.json" >"$OUT/bench_gpu.txt" 2>&1)
  cat "$OUT/bench_gpu.txt"
}

stage_matrix() {
  setup_carry
  log "CPU matrix benchmark, ${MATRIX_THREADS:-16} threads"
  (cd "$ROOT" && timeout "${MATRIX_SECONDS:-500}" "$PY" -m inductor_cpp.bench matrix \
    --threads "${MATRIX_THREADS:-16}" ${MATRIX_ARGS:-} --json "$OUT/matrix_cpu.json" \
    >"$OUT/matrix_cpu.txt" 2>&1)
  tail -60 "$OUT/matrix_cpu.txt"
}

# The CPU matrix-kernel tests on the host's Xeon: the AVX-512 micro-kernels and C++ epilogue
# pass, which an AVX2-only development machine cannot run (CPU_TESTS: pytest files / -k).
stage_cputest() {
  setup_carry
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L2|L3" >>"$OUT/summary.txt"
  log "CPU matrix tests (${CPU_TESTS:-test_matmul.py test_matmul_weights.py test_conv_kernels.py})"
  (cd "$ROOT/tests/python" && timeout "${CPU_TEST_SECONDS:-300}" "$PY" -m pytest -q \
    -p no:cacheprovider --tb=short -rfE ${CPU_TESTS:-test_matmul.py test_matmul_weights.py test_conv_kernels.py} \
    >"$OUT/cputest.txt" 2>&1)
  local rc=$?
  tail -30 "$OUT/cputest.txt"
  return $rc
}

# The C++ tests of the CPU matrix kernels and the CPU emitter, built there against the carried
# GoogleTest: their AVX-512 variants skip on an AVX2-only development machine.
stage_ctest() {
  setup_carry
  local dir=$ROOT/build/gpu_ctest start=$SECONDS
  local targets=${CTEST_TARGETS:-matrix_gemm_test matrix_conv_test matrix_conv_backward_test matrix_gemm_bf16_test matrix_attention_test matrix_attention_backward_test xbyak_microkernel_test emit_cpp_test amx_check}
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$CXX" \
      -DCMAKE_C_COMPILER="$CC" -DINDUCTOR_CPP_PYTHON=OFF -DINDUCTOR_CPP_NVPTX=OFF \
      -DINDUCTOR_CPP_TESTS=ON -DGTest_DIR="$CARRY/gtest/lib/x86_64-linux-gnu/cmake/GTest" \
      >"$dir.cmake.log" 2>&1 || { log "ctest cmake failed:"; tail -20 "$dir.cmake.log" | tee -a "$OUT/summary.txt" >&2; return 1; }
  fi
  cmake --build "$dir" -j "$(nproc)" --target $targets >"$dir.build.log" 2>&1 ||
    { log "ctest build failed:"; grep -E "error" -A3 "$dir.build.log" | head -40 | tee -a "$OUT/summary.txt" >&2; return 1; }
  log "ctest build ok in $((SECONDS - start)) s"
  (cd "$dir" && timeout "${CTEST_SECONDS:-300}" ctest -j "$(nproc)" -R "${CTEST_REGEX:-matrix|Micro|Emit|emit|Gemm|Conv|Bf16}" \
    --output-on-failure >"$OUT/ctest_cpu.txt" 2>&1)
  local rc=$?
  grep -E "tests passed|Failed|\*\*\*" "$OUT/ctest_cpu.txt" | head -40
  # AMX bf16 numerics and throughput against the fp32 reference (where the CPU has AMX).
  [ -z "${CTEST_TARGETS:-}" ] && "$dir/tests/cpp/amx_check" 2>&1 | tail -8 | tee -a "$OUT/summary.txt"
  return $rc
}

stage_sweep() {
  setup_carry
  log "GEMM knob sweep (bench ab -- matrix --shapes), ${MATRIX_THREADS:-16} threads"
  # shellcheck disable=SC2086  # SWEEP_ARGS holds several arguments (settings have no spaces)
  (cd "$ROOT" && timeout "${SWEEP_SECONDS:-420}" "$PY" -m inductor_cpp.bench ab \
    ${SWEEP_ARGS:---env default} --json "$OUT/sweep_cpu.json" -- matrix --no-stock \
    --threads "${MATRIX_THREADS:-16}" --shapes "${SWEEP_SHAPES:-1024x1024x1024,4096x4096x4096}" \
    >"$OUT/sweep_cpu.txt" 2>&1)
  cat "$OUT/sweep_cpu.txt"
}

# Launch-shape variants of our GPU kernels (the option "gpu_tuning", docs/gpu.md): each
# variant runs `bench gpu --only $TUNE_ONLY` in its own process, the variants interleaved and
# repeated TUNE_REPEATS times; stock Inductor runs in every process, so each row is a ratio
# taken in one process. TUNE_VARIANTS: "label=name=value,name=value;label2=...;base=".
stage_tune() {
  setup_carry
  local variants=${TUNE_VARIANTS:-"base=;no_hints=read_once_hints=0"}
  local repeats=${TUNE_REPEATS:-2} list r v
  IFS=';' read -ra list <<<"$variants"
  log "GPU tuning: ${#list[@]} variants x $repeats processes, workloads ${TUNE_ONLY:-sum1,sum0}"
  rm -f "$BUILD".tune.*.json
  for r in $(seq "$repeats"); do
    for v in "${list[@]}"; do
      (cd "$ROOT" && INDUCTOR_CPP_GPU_TUNING="${v#*=}" timeout "${TUNE_SECONDS:-150}" "$PY" -m inductor_cpp.bench \
        gpu --only "${TUNE_ONLY:-sum1,sum0}" --iters "${TUNE_ITERS:-60}" \
        --json "$BUILD.tune.${v%%=*}.$r.json" >>"$BUILD.tune.log" 2>&1) || log "variant ${v%%=*} run $r failed"
    done
  done
  "$PY" - "$BUILD" "$variants" >"$OUT/tune_gpu.txt" 2>&1 <<'PYTUNE'
import glob, json, statistics, sys
build, variants = sys.argv[1], sys.argv[2].split(";")
print("back to back, ms per call (median of rounds), ours / stock per process; x = stock / ours")
for v in variants:
    label, tuning = v.split("=", 1)
    rows = {}
    for path in sorted(glob.glob(f"{build}.tune.{label}.*.json")):
        for case in json.load(open(path))["cases"]:
            b2b = case.get("back_to_back_ms", {})
            if "inductor_cpp" in b2b and "inductor" in b2b:
                rows.setdefault(case["workload"], []).append((b2b["inductor_cpp"], b2b["inductor"]))
    for workload, pairs in sorted(rows.items()):
        ratios = [s / o for o, s in pairs]
        runs = ", ".join(f"{o:.4f}/{s:.4f}" for o, s in pairs)
        print(f"{label:>14} {workload:>9}  x {statistics.median(ratios):.4f}  [{runs}]  ({tuning or 'defaults'})")
PYTUNE
  cat "$OUT/tune_gpu.txt"
}

stage_diag() {
  setup_carry
  log "diag: transformer training graphs vs their ATen graphs"
  (cd "$ROOT/tests/python" && timeout "${DIAG_SECONDS:-240}" "$PY" - >"$OUT/diag_gpu.txt" 2>&1 <<'PYDIAG'
import copy, torch, torch.nn.functional as F
import inductor_cpp.dynamo_backend as db
original = db.compile_aten_graph
def checked(gm, example_inputs, kind, opts):
    run = original(gm, example_inputs, kind, opts)
    outputs = list(gm.graph.nodes)[-1].args[0]
    def wrapped(args):
        clones = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        expected = gm(*clones)
        actual = run(args)
        rows = []
        for k, (e, a) in enumerate(zip(expected, actual)):
            if not isinstance(e, torch.Tensor) or not e.is_floating_point():
                continue
            err = (a.double() - e.double()).abs().max().item() if e.numel() else 0.0
            scale = e.double().abs().max().item() if e.numel() else 0.0
            node = outputs[k]
            rows.append((err / (scale + 1e-12), err, scale, str(node), str(getattr(node, "target", "")),
                         tuple(e.shape), tuple(e.stride()), tuple(a.stride())))
        rows.sort(reverse=True)
        print(f"== {kind} graph: {len(rows)} float outputs; worst (rel err, abs err, max|x|, node, op, shape, strides eager/ours):")
        for r in rows[:8]:
            print("  %.3e %.3e %.3e %s %s %s %s %s" % r)
        if rows and rows[0][0] > 1e-3:
            print("  GRAPH:")
            print(gm.code)
        return actual
    wrapped._boxed_call = True
    return wrapped
db.compile_aten_graph = checked
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, dropout=0.0, batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).cuda()
reference = copy.deepcopy(model).double(); ours = copy.deepcopy(model)
x = torch.randn(4, 32, 128, device="cuda"); t = torch.randn(4, 32, 128, device="cuda")
def step(m, x, t):
    loss = F.mse_loss(m(x), t); loss.backward(); return loss
step(model, x, t); step(reference, x.double(), t.double())
loss = step(torch.compile(ours, backend="inductor_cpp"), x, t)
print("loss", loss.item())
for (name, p32), po, p64 in zip(model.named_parameters(), ours.parameters(), reference.parameters()):
    e = (p32.grad.double() - p64.grad).abs().max().item(); o = (po.grad.double() - p64.grad).abs().max().item()
    print("%-50s eager %.3e ours %.3e %s" % (name, e, o, "BAD" if o > 4 * e + 1e-6 else ""))
PYDIAG
  )
  tail -60 "$OUT/diag_gpu.txt"
}

stage_probe() {
  setup_carry
  log "probe: bench ${PROBE:-}"
  local marker=$BUILD.probe.start
  touch "$marker"
  # shellcheck disable=SC2086  # PROBE is a subcommand and its arguments
  (cd "$ROOT" && timeout "${PROBE_SECONDS:-300}" "$PY" -m inductor_cpp.bench ${PROBE:?set PROBE} \
     >>"$OUT/probe.txt" 2>&1)
  # its results (bench/results/, the bench's default) come back with $OUT
  find "$ROOT/bench/results" -name "*.json" -newer "$marker" -exec cp {} "$OUT/" \; 2>/dev/null
  tail -60 "$OUT/probe.txt"
}

# Before / after: `bench SUBCOMMAND` (COMPARE, default: the suite on CUDA without stock
# Inductor) on the tree of another commit carried in build/base_src (`git archive REV | tar -x
# -C build/base_src` on the development machine), then on this tree, one run each, in fresh
# processes with empty caches. Results: $OUT/compare_before.json, compare_after.json,
# compare.txt.
stage_compare() {
  local base=$ROOT/build/base_src
  [ -f "$base/scripts/gpu.sh" ] || { log "compare: no tree in build/base_src"; return 1; }
  mkdir -p "$base/build" && ln -sfn "$CARRY" "$base/build/carry"
  OUT=$BUILD.base_out bash "$base/scripts/gpu.sh" build >/dev/null 2>&1 ||
    { log "compare: the base tree did not build"; return 1; }
  local args=${COMPARE:-suite --device cuda --no-stock}
  for side in before after; do
    local root=$ROOT
    [ "$side" = before ] && root=$base
    log "compare: $side ($args)"
    # shellcheck disable=SC2086  # COMPARE is a subcommand and its arguments
    (cd "$root" && ROOT=$root setup_carry && export INDUCTOR_CPP_CACHE_DIR=$BUILD.compare_cache_$side &&
       rm -rf "$INDUCTOR_CPP_CACHE_DIR" && timeout "${COMPARE_SECONDS:-280}" "$PY" -m inductor_cpp.bench \
       $args --json "$OUT/compare_$side.json" >>"$OUT/compare.txt" 2>&1)
  done
  tail -80 "$OUT/compare.txt"
}

main() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$OUT/summary.txt" 2>&1
  local stages=("$@")
  [ ${#stages[@]} -eq 0 ] && stages=(build)
  [ "${stages[0]}" = all ] && stages=(build test opinfo bench)
  stage_build || exit 1
  for s in "${stages[@]}"; do
    [ "$s" = build ] && continue
    "stage_$s" || log "stage $s exited with $?"
  done
}

main "$@"

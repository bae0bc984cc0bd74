/// \file
/// Every INDUCTOR_CPP_* environment variable ("knob"), declared once. This list generates the
/// Knob enum and the registry's table (knobs.h), from which Python reads its knobs
/// (python/inductor_cpp/knobs.py), options.py its torch.compile options, and docs/knobs.md is
/// written (`python -m inductor_cpp.knobs --markdown > docs/knobs.md`).
///
/// X(Id, "NAME", Type, "default", codegen, Scope, "option", "doc")
///  - Type: Bool ("0", "false", "off", "no" in any case are false, anything else true),
///    Count (a decimal integer >= 0), Float, Text, Path. An empty value is the same as unset.
///  - default: the value when unset, in the variable's own spelling ("" = none: the reader
///    decides, as the doc says).
///  - codegen: true when the value can change what a graph compiles to (its generated code or
///    plan). Such knobs enter the cache key (codegen_values(), knobs.h).
///  - Scope: who reads it. Compiler / Runtime / Cache / Logging: the library; MatrixTuning: the
///    matrix library's tuning and testing overrides, read once per process; Bench, Tests,
///    Scripts: the benchmark CLI, the test suites, the shell scripts.
///  - option: the torch.compile option (`options={...}`) it backs, which wins over it, or "".
#pragma once

// clang-format off
#define INDUCTOR_CPP_KNOBS(X)                                                                     \
  /* torch.compile options (options.py) */                                                        \
  X(Strict, "INDUCTOR_CPP_STRICT", Bool, "0", false, Compiler, "strict",                          \
    "1: a graph that would run eagerly, or fail to compile, raises instead, naming the op and "   \
    "the user's source line; all: every op that would run as an ATen fallback raises too")        \
  X(Cache, "INDUCTOR_CPP_CACHE", Bool, "1", false, Cache, "cache",                                \
    "0: neither read nor write the on-disk cache")                                                \
  X(MatrixKernels, "INDUCTOR_CPP_MATRIX_KERNELS", Bool, "1", true, Compiler, "matrix_kernels",    \
    "0: float32 CPU mm/addmm/bmm and channels-last conv2d stay ATen calls (MKL/oneDNN) with "     \
    "generated kernels around them; 1: they run on our xbyak GEMM / convolution kernels with "    \
    "the following activation/residual chain fused (docs/matrix/gemm.md, "                        \
    "`python -m inductor_cpp.bench matrix`)")                                                     \
  X(Freezing, "INDUCTOR_CPP_FREEZING", Bool, "0", true, Compiler, "freezing",                     \
    "1: treat parameters as constants, as stock Inductor's freezing does: a matrix step reuses "  \
    "its packed copy of a weight while the weight's version counter is unchanged, without "       \
    "re-reading the weight each call (faster for small batches; writes through .data or numpy "   \
    "are then not seen); on a CPU with AMX, bf16 mm/addmm (Linear) also run on our AMX GEMM")     \
  X(MatrixTileEpilogues, "INDUCTOR_CPP_MATRIX_TILE_EPILOGUES", Bool, "1", true, Compiler,         \
    "matrix_tile_epilogues",                                                                      \
    "with matrix_kernels, 0: a pointwise kernel after an mm/addmm/conv2d that the fused "         \
    "activation/residual chain cannot express stays a kernel of its own; 1: the GEMM runs it on " \
    "each output tile it finishes (docs/matrix/in_graphs.md)")                                    \
  X(LayoutOpt, "INDUCTOR_CPP_LAYOUT_OPT", Bool, "1", true, Compiler, "layout_optimization",       \
    "0: keep convolution graphs in the layouts they come in; 1: inference graphs with 2-D "       \
    "convolutions run channels-last (layout_opt.py)")                                             \
  X(ShapeSpecializations, "INDUCTOR_CPP_SHAPE_SPECIALIZATIONS", Count, "8", false, Compiler,      \
    "shape_specializations",                                                                      \
    "how many concrete shapes a graph with symbolic sizes (Dynamo's dynamic shapes) is compiled " \
    "for, each as a static graph with generated kernels; 0: none, every shape runs the symbolic " \
    "graph's plan of ATen calls (specialize.py)")                                                 \
  X(Cudagraphs, "INDUCTOR_CPP_CUDAGRAPHS", Bool, "0", false, Runtime, "cudagraphs",               \
    "1: record each compiled CUDA graph's whole plan into CUDA graphs and replay them (what "     \
    "mode=\"reduce-overhead\" turns on; docs/cuda_graphs.md)")                                    \
  X(CudagraphRecords, "INDUCTOR_CPP_CUDAGRAPH_RECORDS", Count, "8", false, Runtime,               \
    "cudagraph_records",                                                                          \
    "how many CUDA graphs one compiled graph records (new input shapes or addresses, outputs "    \
    "still held); past it, calls that fit none run as plain launches (docs/cuda_graphs.md)")       \
  X(GpuTuning, "INDUCTOR_CPP_GPU_TUNING", Text, "", true, Compiler, "gpu_tuning",                 \
    "GPU graphs: \"name=value,...\" overriding launch-shape limits of the GPU schedule and "      \
    "emitter switches, for measuring alternatives without a rebuild: max_threads, min_threads, "  \
    "persistent_chunks, vector_bytes, column_threads, max_column_rows, min_rows_per_thread "      \
    "(schedule); read_once_hints (0-4), row_unroll, column_unroll, max_column_block, "            \
    "min_column_grid (emitter); docs/gpu.md")                                                     \
  X(DebugDir, "INDUCTOR_CPP_DEBUG_DIR", Path, "", false, Logging, "debug_dir",                    \
    "a directory: dump each compiled graph there (FX graph, IR after every pass, C++ source, "    \
    "compile command, timings, a standalone repro.py); docs/observability.md")                    \
  /* compiler */                                                                                  \
  X(GpuCodegen, "INDUCTOR_CPP_GPU_CODEGEN", Bool, "1", true, Compiler, "",                        \
    "0: CUDA graphs run as ATen calls (no NVPTX code generation), without the decompositions "    \
    "meant for generated GPU kernels (docs/gpu.md)")                                              \
  X(PtxasCubin, "INDUCTOR_CPP_PTXAS_CUBIN", Bool, "1", true, Compiler, "",                        \
    "0: a GPU graph's cache entry holds PTX only (the driver JIT-compiles it at load); 1: also "  \
    "a cubin from ptxas when ptxas is found")                                                     \
  X(Ptxas, "INDUCTOR_CPP_PTXAS", Path, "", true, Compiler, "",                                    \
    "the ptxas that assembles cubins (unset: $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas, "   \
    "then PATH)")                                                                                 \
  X(CompileThreads, "INDUCTOR_CPP_COMPILE_THREADS", Count, "", false, Compiler, "",               \
    "threads that compile one GPU graph's kernels in parallel, each a module of its own (LLVM, "  \
    "then ptxas); unset: the CPUs this process may run on; 1: one module (docs/gpu.md)")          \
  /* runtime */                                                                                   \
  X(DirectInference, "INDUCTOR_CPP_DIRECT_INFERENCE", Bool, "1", false, Runtime, "",              \
    "0: inference graphs always keep AOT autograd's runtime wrappers (direct_call.py)")           \
  X(CpuPoolBytes, "INDUCTOR_CPP_CPU_POOL_BYTES", Count, "", false, Runtime, "",                   \
    "cap in bytes on the free blocks the CPU block pool keeps (unset: a quarter of physical "     \
    "memory, at most 4 GiB; 0: keep none); a value that is not a byte count is an error")         \
  /* cache */                                                                                     \
  X(CacheDir, "INDUCTOR_CPP_CACHE_DIR", Path, "", false, Cache, "",                               \
    "cache root, made absolute (unset: $HOME/.cache/inductor_cpp); docs/cache.md")                \
  X(CacheMaxBytes, "INDUCTOR_CPP_CACHE_MAX_BYTES", Count, "1073741824", false, Cache, "",         \
    "size cap of the cache in bytes, least recently used entries evicted first (a value that "    \
    "is not a decimal integer is ignored)")                                                       \
  X(ToolTimeoutS, "INDUCTOR_CPP_TOOL_TIMEOUT_S", Count, "600", false, Compiler, "",               \
    "seconds a child tool (the C++ compiler, ptxas) may run; then it and its process group are "  \
    "killed, the graph runs as ATen calls and the cache lock is released (0: no limit)")          \
  X(CacheLockTimeoutMs, "INDUCTOR_CPP_CACHE_LOCK_TIMEOUT_MS", Count, "120000", false, Cache, "",  \
    "how long a compile waits for another process building the same graph before it builds too")  \
  /* logging */                                                                                   \
  X(Logs, "INDUCTOR_CPP_LOGS", Text, "", false, Logging, "",                                      \
    "log artifacts on stderr: names (cache,fallbacks,cudagraphs,perf,graph,fusion,schedule,output_code,ir), " \
    "a level 0-4, or all; docs/observability.md")                                                 \
  X(Progress, "INDUCTOR_CPP_PROGRESS", Float, "1", false, Logging, "",                            \
    "seconds a compile runs before a status line appears (only when stderr is a terminal); "      \
    "0: never")                                                                                   \
  /* matrix library tuning and testing (read once per process) */                                 \
  X(MatrixIsa, "INDUCTOR_CPP_MATRIX_ISA", Text, "", false, MatrixTuning, "",                      \
    "avx2: the AVX2 kernels (and the packers' scalar path) on an AVX-512 host; ctest runs the "   \
    "GEMM and convolution suites a second time with it")                                          \
  X(MatrixBlocking, "INDUCTOR_CPP_MATRIX_BLOCKING", Text, "", false, MatrixTuning, "",            \
    "\"mr,nr,kc,mc,nc[,plain_kc,pack_b_min_row_tiles]\": the float32 GEMM blocking")              \
  X(MatrixGridTm, "INDUCTOR_CPP_MATRIX_GRID_TM", Count, "", false, MatrixTuning, "",              \
    "tm > 0: a tm x (threads / tm) thread grid wherever tm divides the team")                     \
  X(MatrixPair, "INDUCTOR_CPP_MATRIX_PAIR", Text, "", false, MatrixTuning, "",                    \
    "\"min_rows[,mr,mc,kc]\": the wide tile over two B panels (min_rows 0: off)")                 \
  X(MatrixStream, "INDUCTOR_CPP_MATRIX_STREAM", Text, "", false, MatrixTuning, "",                \
    "\"max_rows[,kc,prefetch,max_b_floats]\": the streamed plain B (max_rows 0: off)")            \
  X(MatrixSplitK, "INDUCTOR_CPP_MATRIX_SPLIT_K", Count, "", false, MatrixTuning, "",              \
    "0: no balancing split-K (and a one-row K < N product splits over N only); n >= 2: n K "      \
    "ranges wherever allowed")                                                                    \
  X(MatrixFewRows, "INDUCTOR_CPP_MATRIX_FEW_ROWS", Count, "", false, MatrixTuning, "",            \
    "the most rows for which a product with W^T runs as dot products on W in place (library "     \
    "default 32; 1 sends every product of two or more rows to the tile kernels)")                 \
  X(MatrixSwapRows, "INDUCTOR_CPP_MATRIX_SWAP_ROWS", Count, "", false, MatrixTuning, "",          \
    "the most rows of a swapped few-row product (0: none)")                                       \
  X(MatrixPackA, "INDUCTOR_CPP_MATRIX_PACK_A", Text, "", false, MatrixTuning, "",                 \
    "always: pack A whenever it is reused")                                                       \
  X(MatrixConvTile, "INDUCTOR_CPP_MATRIX_CONV_TILE", Text, "", false, MatrixTuning, "",           \
    "\"mr[,panels]\": the direct convolution's register tile (ctest runs the conv suite with 6,2)") \
  X(ConvBwdWeight, "INDUCTOR_CPP_CONV_BWD_WEIGHT", Text, "", false, MatrixTuning, "",             \
    "im2col, direct, direct-by-oc or direct-by-columns: the convolution weight gradient's "       \
    "method (and the direct method's tiling); ctest runs the suite with each")                    \
  /* benchmarks, tests, scripts */                                                                \
  X(MachineDir, "INDUCTOR_CPP_MACHINE_DIR", Path, "", false, Bench, "",                           \
    "where `python -m inductor_cpp.bench` keeps its machine probe (unset: "                       \
    "~/.cache/inductor_cpp/machine)")                                                             \
  X(OpinfoDevice, "INDUCTOR_CPP_OPINFO_DEVICE", Text, "cpu", false, Tests, "",                    \
    "the device the OpInfo tests make their samples on (cpu or cuda; tests/opinfo/sweep.py "      \
    "--device sets it for its workers)")                                                          \
  X(Full, "INDUCTOR_CPP_FULL", Bool, "0", false, Scripts, "",                                     \
    "1: scripts/test.sh runs the slow tests too (the model zoo, the full OpInfo sweep)")          \
  X(DevHome, "INDUCTOR_CPP_DEV_HOME", Path, "", false, Scripts, "",                               \
    "where scripts/setup.sh keeps the venv and toolchain (unset: $HOME/.cache/inductor_cpp)")
// clang-format on

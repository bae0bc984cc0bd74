/// \file gemm.h
/// \brief Float32 GEMM on JIT micro-kernels: the public matrix API (bf16 inputs: gemm_bf16.h,
/// convolution: conv.h).
///
///     C = epilogue(alpha · op(A) · op(B) [+ C])      op(X) = X or Xᵀ
///
/// All matrices are row-major with explicit leading dimensions. The epilogue is a list applied
/// in order to each output element. Bias/scale/relu/clamp/residual run inside the JIT kernel on
/// registers; GELU (erf, as torch's default), GELU-tanh and SiLU — and every op after the first of
/// them — run in a vectorized C++ pass over each just-finished C tile while it is in L1.
///
/// Threading: each call opens its own `omp parallel num_threads(num_threads)` region (no global
/// thread state); small problems run on the calling thread. Every function is reentrant; the
/// one global is the JIT kernel cache (matrix/jit/microkernel.h, mutex-protected).
///
/// Denormals: with flush_denormals the MXCSR FTZ and DAZ bits are set inside each worker for the
/// call and restored afterwards: denormal inputs read as ±0 and denormal results become ±0
/// (relative change ≤ 2⁻¹²⁶ absolute per element). Off by default (bit-faithful IEEE).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace inductor_cpp::matrix {

enum class EpilogueKind {
  BiasRow,      ///< c[i][j] += data[i]           (bias per output row)
  BiasCol,      ///< c[i][j] += data[j]           (bias per output column: nn.Linear / addmm)
  Scale,        ///< c *= a
  ScaleCol,     ///< c[i][j] *= data[j]           (scale per output column: eval BatchNorm's
                ///< weight / sqrt(var + eps)); directly followed by a BiasCol the pair is one
                ///< fused multiply-add c·data[j] + bias[j] (a single rounding)
  Relu,         ///< max(c, 0)
  Gelu,         ///< 0.5·c·(1 + erf(c/√2))       (erf via a polynomial, |err| ≤ ~2e-7)
  GeluTanh,     ///< 0.5·c·(1 + tanh(√(2/π)(c + 0.044715c³)))
  Silu,         ///< c / (1 + exp(-c))
  Clamp,        ///< min(max(c, a), b)
  AddResidual,  ///< c[i][j] += data[i·ld + j]
  MulResidual,  ///< c[i][j] *= data[i·ld + j]   (a gate: silu(x·W1) · (x·W2))
  Sigmoid,      ///< 1 / (1 + exp(-c))
  Tanh,         ///< tanh(c)
  Tile          ///< a generated tile kernel (`tile`), called on each finished tile; last op only
};

/// Whether op reads a residual-shaped tensor (data[i·ld + j]).
inline bool is_residual_op(EpilogueKind kind) {
  return kind == EpilogueKind::AddResidual || kind == EpilogueKind::MulResidual;
}

/// A generated tile kernel (ir/passes/tile_epilogue.h): `fn(bufs, symbols, 1)` with symbols
/// {row0, rows, col0, cols}, the tile's absolute position in C. It reads C there (the ops before
/// it applied) and writes its own result over it, or somewhere else; it may run on many threads
/// at once, on different tiles. A nonzero return (an index out of bounds) is kept in `status`.
struct TileKernel {
  using Fn = int32_t (*)(char* const* bufs, const int64_t* symbols, int32_t num_threads);
  Fn fn = nullptr;
  char* const* bufs = nullptr;
  mutable std::atomic<int32_t> status{0};
};

struct EpilogueOp {
  EpilogueKind kind;
  const float* data = nullptr;       ///< Bias / residual base (indexed by absolute row/column).
  int64_t ld = 0;                    ///< Residual leading dimension.
  float a = 0, b = 0;                ///< Scale factor or clamp bounds.
  const TileKernel* tile = nullptr;  ///< EpilogueKind::Tile
};

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  ///< m×k (or k×m when trans_a).
  int64_t lda = 0;
  bool trans_a = false;
  const float* b = nullptr;  ///< k×n (or n×k when trans_b).
  int64_t ldb = 0;
  bool trans_b = false;
  float* c = nullptr;  ///< m×n.
  int64_t ldc = 0;
  float alpha = 1;
  bool accumulate = false;  ///< Add into the existing C (beta = 1) instead of overwriting.
  std::vector<EpilogueOp> epilogue;
  bool flush_denormals = false;  ///< See the file comment.
};

/// Where packed operands' storage comes from: storage(floats) returns memory for that many
/// floats, 64-byte aligned, valid while the returned pointer (or a copy) lives. Empty: the C
/// allocator. Compiled graphs pass the runtime's CPU block pool (runtime/cpu_pool.h), so that a
/// weight packed anew every training step reuses memory whose pages are mapped already (a fresh
/// 9 MiB block faulted in page by page took most of the 1.1 ms that packing resnet's 512-channel
/// 3×3 weight took at 16 threads).
using PackedStorage = std::function<std::shared_ptr<float>(size_t floats)>;

/// B packed once into the kernels' blocked layout: panels of panel_width() columns, each panel
/// k rows × panel_width floats, zero-padded. Move-only; read-only once packed, so one PackedB
/// may serve concurrent calls.
class PackedB {
 public:
  PackedB(int64_t k, int64_t n, int panel_width, const PackedStorage& storage = {});
  PackedB(PackedB&&) = default;
  PackedB& operator=(PackedB&&) = default;
  PackedB(const PackedB&) = delete;
  PackedB& operator=(const PackedB&) = delete;
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int panel_width() const { return nr_; }
  int64_t num_panels() const { return (n_ + nr_ - 1) / nr_; }
  const float* panel(int64_t p) const { return data_.get() + p * k_ * nr_; }
  float* mutable_panel(int64_t p) { return data_.get() + p * k_ * nr_; }

 private:
  int64_t k_, n_;
  int nr_;
  std::shared_ptr<float> data_;
};

/// Packs op(B) (k×n logical) for repeated use with gemm_f32_packed, on up to num_threads
/// OpenMP threads when B is large.
PackedB pack_b_f32(const float* b, int64_t k, int64_t n, int64_t ldb, bool trans_b,
                   int num_threads = 1, const PackedStorage& storage = {});

/// How the GEMMs read a rows × cols operand with these strides (elements): row-major (plain,
/// trans false) or as the transpose of a row-major matrix (trans true), with its leading
/// dimension; nullopt when it is neither (the caller copies it contiguous first).
struct OperandLayout {
  int64_t ld = 0;
  bool trans = false;
};
std::optional<OperandLayout> operand_layout(int64_t rows, int64_t cols, int64_t row_stride,
                                            int64_t col_stride);

/// True when the calling thread flushes denormals (MXCSR FTZ and DAZ set, as
/// torch.set_flush_denormal(True) does): compiled graphs pass it as flush_denormals, so the
/// workers follow the numerics the user chose for the thread.
bool caller_flushes_denormals();

/// C = epilogue(alpha·op(A)·op(B) [+ C]). Throws std::invalid_argument on bad arguments. On
/// AVX-512, 17-128 rows times a large transposed B run swapped, Cᵀ = W · op(A)ᵀ with W = op(B)ᵀ
/// (gemm_swapped.h); one-row and other few-row problems as matrix-vector products (gemv.h).
void gemm_f32(const GemmProblem& p, int num_threads);

/// Whether gemm_f32 reads op(B) in place, so that a pre-packed copy of B would go unused: one-
/// and few-row products (gemv.h, gemm_swapped.h), a plain B under few row tiles per thread, and
/// a streamed plain B (2-64 rows, 1-16 MiB of B: gemm_config.h "Streamed plain B").
/// Callers that keep packed weights (runtime/matmul_step.h) then keep none.
bool gemm_reads_b_in_place(const GemmProblem& p, int num_threads);

/// Whether a caller that keeps a packed copy of B across calls (a compiled graph's matmul step,
/// runtime/matmul_step.h) should still run p on gemm_f32 reading B in place (gemm_reads_b_in_place)
/// rather than on its packed copy, which costs one read of B per call for the content
/// fingerprint unless `frozen`. A plain B under few row tiles or streamed, and the swapped few-row
/// products (gemm_swapped.h, which read B once, as the fingerprint alone would): whenever not
/// frozen. One row, or few rows times Wᵀ (gemv.h): always, except a frozen copy on AVX-512 from two
/// rows on, where the packed kernels run 1.0-1.35x faster than the dot products and nothing checks
/// the copy (with a fingerprint, in place was as fast or faster:
/// docs/decisions/012-few-rows-read-the-weight-in-place.md).
bool in_place_beats_packed_copy(const GemmProblem& p, int num_threads, bool frozen);

/// Same with a pre-packed B (p.b, p.ldb, p.trans_b ignored; packed.k()/n() must match).
void gemm_f32_packed(const GemmProblem& p, const PackedB& packed, int num_threads);

/// batch independent GEMMs; matrix t uses a + t·stride_a, b + t·stride_b, c + t·stride_c (and
/// residual data + t·stride_c for AddResidual / MulResidual ops).
void bmm_f32(const GemmProblem& p, int64_t batch, int64_t stride_a, int64_t stride_b,
             int64_t stride_c, int num_threads);

}  // namespace inductor_cpp::matrix

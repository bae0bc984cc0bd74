/// \file
/// CPU emitter, memory: casts through the reduced float types, masked, indirect (bounds
/// checked), strided and repeating loads, rows of a concatenation, constant and non-affine
/// indices, and index comparisons as lane masks.
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/ir_text.h"
#include "tests/cpp/emit_cpp_test_util.h"

namespace inductor_cpp::codegen::emit_test {
namespace {

const char* const kKernels[] = {
    R"(kernel casts(%f: float32 in, %hin: float16 in, %h: float16 out, %hf: float32 out, %bf: bfloat16 out, %bff: float32 out, %i32: int32 out, %u8: uint8 out, %b: bool out, %bfl: float32 out, %h2: float16 out) symbols(s0) {
  for x0 in 0..s0 vector(16) {
    %h[x0] = cast(load(%f, [x0]), float16)
    %hf[x0] = cast(cast(load(%f, [x0]), float16), float32)
    %bf[x0] = cast(load(%f, [x0]), bfloat16)
    %bff[x0] = cast(cast(load(%f, [x0]), bfloat16), float32)
    %i32[x0] = cast(load(%f, [x0]), int32)
    %u8[x0] = cast(load(%f, [x0]), uint8)
    %b[x0] = cast(load(%f, [x0]), bool)
    %bfl[x0] = cast(cast(load(%f, [x0]), bool), float32)
    %h2[x0] = cast(mul(cast(load(%hin, [x0]), float32), 3.0:float32), float16)
  }
})",
    R"(kernel pad(%a: float32 in, %o: float32 out) symbols(s0) {
  for x0 in 0..s0 + 4 vector(16) {
    %o[x0] = add(load(%a, [x0 - 2], mask=(2 <= x0)*(x0 < s0 + 2)), 1.0:float32)
  }
})",
    R"(kernel gather(%src: float32 in, %idx: int64 in, %o: float32 out) symbols(s0, s1) {
  for x0 in 0..s0 vector(16) {
    %o[x0] = load(%src, [%ind0], indirect=[load(%idx, [x0])], bounds=[s1])
  }
})",
    R"(kernel embed(%w: float32 in, %idx: int32 in, %o: float32 out) symbols(s0, s1) {
  for x0 in 0..s0 parallel {
    for x1 in 0..8 vector(16) {
      %o[x0*8 + x1] = load(%w, [%ind0*8 + x1], indirect=[load(%idx, [x0])], bounds=[s1])
    }
  }
})",
    R"(kernel transpose(%a: float32 in, %o: float32 out, %o2: float32 out) symbols(s0) {
  for x1 in 0..37 parallel {
    for x0 in 0..29 vector(16) {
      %o[x0*37 + x1] = load(%a, [x0 + x1*29])
      %o2[x1*29 + x0] = load(%a, [x0*s0 + x1])
    }
  }
})",
    // A tiled transpose as schedule_cpu.cpp's transpose_tiles writes it: 37 x 29 in tiles of
    // 16 (partial tiles of 5 and 13 at the edges); %a and %b are tile reads (contiguous along
    // xi, 37 apart along yi), %c is written in the loops and stays a gather; %t is a tile write
    // (contiguous along xi, kept in a tile and transposed out after the xi loop).
    R"(kernel tiled_transpose(%a: float32 in, %b: int32 in, %d: float32 in, %e: bfloat16 in, %c: float32 out, %o: float32 out, %o2: int32 out, %t: float32 out, %o3: bfloat16 out) {
  for xb in 0..3 parallel {
    for yb in 0..2 {
      for xi in 0..min(16, 37 - xb*16) {
        for yi in 0..min(16, 29 - yb*16) vector(16) {
          %c[yb*592 + yi*37 + xb*16 + xi] = load(%a, [yb*592 + yi*37 + xb*16 + xi])
          %o[xb*464 + xi*29 + yb*16 + yi] = add(load(%a, [yb*592 + yi*37 + xb*16 + xi]), load(%c, [yb*592 + yi*37 + xb*16 + xi]))
          %o2[xb*464 + xi*29 + yb*16 + yi] = load(%b, [yb*592 + yi*37 + xb*16 + xi])
          %t[yb*592 + yi*37 + xb*16 + xi] = mul(load(%d, [xb*464 + xi*29 + yb*16 + yi]), 3.0:float32)
          %o3[xb*464 + xi*29 + yb*16 + yi] = load(%e, [yb*592 + yi*37 + xb*16 + xi])
        }
      }
    }
  }
})",
    // Loads through x1 // 2 and x1 // 4: each element repeated over lanes (ic::load_repeat),
    // with a tail (37 = 2 * 16 + 5).
    R"(kernel repeat_loads(%a: float32 in, %i: int64 in, %o: float32 out, %o2: int64 out) {
  for x0 in 0..7 parallel {
    for x1 in 0..37 vector(16) {
      %o[x0*37 + x1] = load(%a, [x0*19 + x1 // 2])
      %o2[x0*37 + x1] = load(%i, [x0*10 + x1 // 4])
    }
  }
})",
    R"(kernel mixed(%a: float32 in, %idx: int32 in, %sum: float32 out, %last: float32 out, %rows: float32 out, %nonaffine: float32 out, %iota: float32 out) symbols(s0) {
  acc = accumulator sum float32
  for r0 in 0..s0 vector(16) {
    acc += load(%a, [r0])
  }
  for r1 in 0..3 {
    acc += load(%a, [r1])
  }
  %sum[0] = local(acc, float32)
  for x0 in 0..s0 vector(16) {
    %last[0] = load(%a, [x0])
  }
  for x1 in 0..3 parallel(chunk=2) {
    for x0 in 0..s0 vector(16) {
      let t0 = where(lt(index(x1, int32), 2:int32), load(%a, [x0], mask=x1 < 1), 7.0:float32)
      %rows[x1*s0 + x0] = local(t0, float32)
    }
  }
  for x0 in 0..s0 vector(16) {
    %nonaffine[x0] = add(load(%a, [(x0 - 5) // 3 + 2], mask=2 <= x0), load(%a, [x0 % 5]))
    %iota[x0] = cast(index(x0*2 - 7, int32), float32)
    %last[1] = load(%a, [%ind0], indirect=[load(%idx, [x0])], bounds=[s0])
  }
})",
    // torch.cat of [10, 5] and [5, 5] on dim 0, and of [1, 2, 3] and [1, 2, 3] on dim -2, as
    // scheduled: rows of a masked copy.
    R"(kernel cat_rows_small(%a: float32 in, %b: float32 in, %o: float32 out) {
  for x0 in 0..4 {
    for x1 in 0..3 vector(16) {
      %o[x0*3 + x1] = where(ne(index(x0 < 2, int64), 0:int64), load(%a, [x0*3 + x1], mask=x0 < 2), load(%b, [x0*3 + x1 - 6], mask=2 <= x0))
    }
  }
})",
    R"(kernel cat_rows(%a: float32 in, %b: float32 in, %o: float32 out) {
  for x0 in 0..15 {
    for x1 in 0..5 vector(16) {
      %o[x0*5 + x1] = where(ne(index(x0 < 10, int64), 0:int64), load(%a, [x0*5 + x1], mask=x0 < 10), load(%b, [x0*5 + x1 - 50], mask=10 <= x0))
    }
  }
})",
    R"(kernel affine_cmp(%lt: bool out, %le: bool out, %gt: bool out, %ge: bool out, %eq: bool out, %ne: bool out, %rlt: bool out, %rge: bool out, %cat: float32 out) symbols(s0) {
  for x0 in 0..40 vector(16) {
    %lt[x0] = lt(index(x0*3 - 5, int64), index(s0, int64))
    %le[x0] = le(index(x0*3 - 5, int64), index(s0, int64))
    %gt[x0] = gt(index(x0*3 - 5, int64), index(s0, int64))
    %ge[x0] = ge(index(x0*3 - 5, int64), index(s0, int64))
    %eq[x0] = eq(index(x0*3 - 5, int64), index(s0, int64))
    %ne[x0] = ne(index(x0*3 - 5, int64), index(s0, int64))
    %rlt[x0] = lt(index(s0, int64), index(x0*-2 + 30, int64))
    %rge[x0] = ge(index(s0, int64), index(x0*-2 + 30, int64))
    %cat[x0] = where(lt(index(x0, int64), 7:int64), 1.0:float32, 2.0:float32)
  }
})",
};

TEST_F(EmitCppTest, CastsRoundTripThroughReducedFloats) {
  std::vector<float> f = random_floats(40, -300, 300, 3);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f + 1.0f / 2048,
                            1.0f + 3.0f / 2048,
                            65504.0f,
                            65520.0f,
                            1e-8f,
                            -2.5f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1.00390625f,
                            1.01171875f,
                            -1.5f,
                            255.9f,
                            3.4e38f};
  f.insert(f.end(), std::begin(specials), std::end(specials));
  const int64_t n = static_cast<int64_t>(f.size());
  std::vector<uint16_t> hin(n);
  for (int64_t i = 0; i < n; ++i) hin[i] = f16c_half(f[i] / 7);
  for (const Target& t : *targets_) {
    std::vector<uint16_t> h(n), bf(n), h2(n);
    std::vector<float> hf(n), bff(n), bfl(n);
    std::vector<int32_t> i32(n);
    std::vector<uint8_t> u8(n), b(n);
    ASSERT_EQ(run(t, "casts", {n}, 1, f, hin, h, hf, bf, bff, i32, u8, b, bfl, h2), 0);
    for (int64_t i = 0; i < n; ++i) {
      const std::string what =
          std::string(cpu_isa_name(t.target.isa)) + " x=" + std::to_string(f[i]);
      if (std::isnan(f[i])) {
        EXPECT_TRUE(std::isnan(f16c_float(h[i]))) << what;
        EXPECT_TRUE(std::isnan(hf[i])) << what;
        EXPECT_EQ(bf[i], 0x7FC0) << what;
        EXPECT_TRUE(std::isnan(bff[i])) << what;
      } else {
        EXPECT_EQ(h[i], f16c_half(f[i])) << what;
        EXPECT_EQ(hf[i], f16c_float(f16c_half(f[i]))) << what;
        EXPECT_EQ(bf[i], reference_bfloat16(f[i])) << what;
        uint32_t bits = static_cast<uint32_t>(reference_bfloat16(f[i])) << 16;
        float expect_bff;
        std::memcpy(&expect_bff, &bits, 4);
        EXPECT_EQ(bff[i], expect_bff) << what;
      }
      if (std::isfinite(f[i]) && std::fabs(f[i]) < 1e9f) {
        EXPECT_EQ(i32[i], static_cast<int32_t>(f[i])) << what;
        EXPECT_EQ(u8[i], static_cast<uint8_t>(static_cast<int64_t>(f[i]))) << what;
      }
      EXPECT_EQ(b[i], f[i] != 0 ? 1 : 0) << what;
      EXPECT_EQ(bfl[i], f[i] != 0 ? 1.0f : 0.0f) << what;
      EXPECT_EQ(h2[i], f16c_half(f16c_float(hin[i]) * 3)) << what;
    }
  }
}

TEST_F(EmitCppTest, MaskedLoadReadsOnlyInside) {
  for (const Target& t : *targets_) {
    for (int64_t n : {int64_t(1), int64_t(13), int64_t(30)}) {
      std::vector<float> a = random_floats(n, -1, 1, 4), o(n + 4);
      ASSERT_EQ(run(t, "pad", {n}, 1, a, o), 0);
      std::vector<double> want(n + 4, 1.0);
      for (int64_t i = 0; i < n; ++i) want[i + 2] = static_cast<float>(a[i] + 1.0f);
      expect_close(o, want, 0, 0, std::string("pad ") + cpu_isa_name(t.target.isa));
    }
  }
}

// GCC 12's loop vectorizer ran these row loops several rows wide and got them wrong on
// AVX2-only hosts (rows of the second input read 0); runtime/loader/cpp_compiler.h turns it off.
TEST_F(EmitCppTest, RowsFromTwoInputsOfAConcatenation) {
  const std::vector<float> a = random_floats(50, -1, 1, 8), b = random_floats(25, -1, 1, 9);
  for (const Target& t : *targets_) {
    std::vector<float> o(75, -777);
    ASSERT_EQ(run(t, "cat_rows", {}, 1, a, b, o), 0);
    for (int64_t i = 0; i < 75; ++i) {
      EXPECT_EQ(o[i], i < 50 ? a[i] : b[i - 50])
          << cpu_isa_name(t.target.isa) << " row " << i / 5 << " column " << i % 5;
    }
    std::vector<float> small(12, -777);
    ASSERT_EQ(run(t, "cat_rows_small", {}, 1, a, b, small), 0);
    for (int64_t i = 0; i < 12; ++i) {
      EXPECT_EQ(small[i], i < 6 ? a[i] : b[i - 6])
          << cpu_isa_name(t.target.isa) << " small, row " << i / 3 << " column " << i % 3;
    }
  }
}

TEST_F(EmitCppTest, IndirectLoadsCheckBounds) {
  for (const Target& t : *targets_) {
    const int64_t n = 21, src_n = 10;
    std::vector<float> src = random_floats(src_n, 0, 1, 5), o(n);
    std::vector<int64_t> idx(n);
    for (int64_t i = 0; i < n; ++i) idx[i] = (i * 7) % src_n;
    ASSERT_EQ(run(t, "gather", {n, src_n}, 1, src, idx, o), 0);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(o[i], src[idx[i]]);
    for (int64_t bad : {src_n, int64_t(-1), int64_t(1) << 40}) {
      idx[n - 1] = bad;  // in the tail
      EXPECT_EQ(run(t, "gather", {n, src_n}, 1, src, idx, o), ir::kKernelIndexOutOfBounds);
      idx[n - 1] = 0;
      idx[2] = bad;  // in a full vector
      EXPECT_EQ(run(t, "gather", {n, src_n}, 1, src, idx, o), ir::kKernelIndexOutOfBounds);
      idx[2] = 0;
    }
    // Scalar indices per row (embedding), int32, parallel rows.
    const int64_t rows = 6, vocab = 5;
    std::vector<float> w = random_floats(vocab * 8, -1, 1, 6), e(rows * 8);
    std::vector<int32_t> ids = {4, 0, 3, 3, 1, 2};
    ASSERT_EQ(run(t, "embed", {rows, vocab}, 2, w, ids, e), 0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(e[r * 8 + c], w[ids[r] * 8 + c]);
    }
    ids[5] = 5;
    EXPECT_EQ(run(t, "embed", {rows, vocab}, 2, w, ids, e), ir::kKernelIndexOutOfBounds);
  }
}

TEST_F(EmitCppTest, StridedLoadsAndStores) {
  const int64_t rows = 29, cols = 37;
  std::vector<float> a = random_floats(rows * cols, -1, 1, 7);
  for (const Target& t : *targets_) {
    std::vector<float> o(rows * cols), o2(rows * cols);
    ASSERT_EQ(run(t, "transpose", {cols}, 2, a, o, o2), 0);
    for (int64_t x0 = 0; x0 < rows; ++x0) {
      for (int64_t x1 = 0; x1 < cols; ++x1) {
        EXPECT_EQ(o[x0 * 37 + x1], a[x0 + x1 * 29]);
        EXPECT_EQ(o2[x1 * 29 + x0], a[x0 * cols + x1]);
      }
    }
  }
}

TEST_F(EmitCppTest, TiledTransposesReadTransposedTiles) {
  const int64_t rows = 29, cols = 37;  // %a and %b: rows x cols; the outputs: cols x rows
  std::vector<float> a = random_floats(rows * cols, -1, 1, 13);
  std::vector<int32_t> b(rows * cols);
  for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<int32_t>(k * 7919 % 100003);
  std::vector<float> d = random_floats(rows * cols, -1, 1, 17);
  std::vector<uint16_t> e(rows * cols);  // bf16 bits
  for (size_t k = 0; k < e.size(); ++k) e[k] = static_cast<uint16_t>(k * 40503u);
  for (const Target& t : *targets_) {
    std::vector<float> c(rows * cols), o(rows * cols), tw(rows * cols);
    std::vector<int32_t> o2(rows * cols);
    std::vector<uint16_t> o3(rows * cols);
    ASSERT_EQ(run(t, "tiled_transpose", {}, 2, a, b, d, e, c, o, o2, tw, o3), 0);
    for (int64_t y = 0; y < rows; ++y) {
      for (int64_t x = 0; x < cols; ++x) {
        EXPECT_EQ(c[y * cols + x], a[y * cols + x]);
        EXPECT_EQ(o[x * rows + y], a[y * cols + x] * 2) << t.dir << " " << x << "," << y;
        EXPECT_EQ(o2[x * rows + y], b[y * cols + x]) << t.dir << " " << x << "," << y;
        EXPECT_EQ(tw[y * cols + x], d[x * rows + y] * 3) << t.dir << " " << x << "," << y;
        EXPECT_EQ(o3[x * rows + y], e[y * cols + x]) << t.dir << " " << x << "," << y;
      }
    }
  }
}

TEST(EmitCppSourceTest, TileReadsComeFromTransposedTiles) {
  const std::string source = emit_cpp({test_kernel("tiled_transpose")}, CppTarget{});
  // %a and %b: one tile each, before the xi loop; %c (written in the loops) is gathered.
  EXPECT_NE(source.find("ic::transpose_tile<16, 16>(tile0, buf0 + "), std::string::npos) << source;
  EXPECT_NE(source.find("ic::transpose_tile<16, 16>(tile1, buf1 + "), std::string::npos) << source;
  EXPECT_NE(source.find("ic::loadu<16>(tile0 + ((xi * 16) + yi))"), std::string::npos) << source;
  EXPECT_NE(source.find("ic::gather_strided<16>(buf4 + "), std::string::npos) << source;
  // %t: stored into its tile, transposed out after the xi loop.
  EXPECT_NE(source.find("ic::storeu(tile2 + ((xi * 16) + yi), "), std::string::npos) << source;
  EXPECT_NE(source.find("ic::transpose_tile_out<16, 16>(buf7 + "), std::string::npos) << source;
  EXPECT_NE(source.find("ic::transpose_tile<16, 16>(tile3, buf3 + "), std::string::npos) << source;  // bf16
  EXPECT_EQ(source.find("tile4"), std::string::npos) << source;
}

TEST_F(EmitCppTest, LoadsThroughFloorDivisionRepeatElements) {
  std::vector<float> a = random_floats(7 * 19, -1, 1, 11);
  std::vector<int64_t> idx(7 * 10);
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = static_cast<int64_t>(k * 7919 % 1000);
  for (const Target& t : *targets_) {
    std::vector<float> o(7 * 37);
    std::vector<int64_t> o2(7 * 37);
    ASSERT_EQ(run(t, "repeat_loads", {}, 2, a, idx, o, o2), 0);
    for (int64_t x0 = 0; x0 < 7; ++x0) {
      for (int64_t x1 = 0; x1 < 37; ++x1) {
        EXPECT_EQ(o[x0 * 37 + x1], a[x0 * 19 + x1 / 2])
            << cpu_isa_name(t.target.isa) << " " << x0 << "," << x1;
        EXPECT_EQ(o2[x0 * 37 + x1], idx[x0 * 10 + x1 / 4])
            << cpu_isa_name(t.target.isa) << " " << x0 << "," << x1;
      }
    }
  }
  const std::string source =
      emit_cpp({test_kernel("repeat_loads")}, CppTarget{CpuIsa::Avx512, true});
  // 8 lanes: the kernel also moves int64 values.
  EXPECT_NE(source.find("ic::load_repeat<8, 2>"), std::string::npos) << source;
  EXPECT_NE(source.find("ic::load_repeat<8, 4>"), std::string::npos) << source;
}

TEST_F(EmitCppTest, MixedLoopStructures) {
  for (const Target& t : *targets_) {
    for (int64_t n : {int64_t(3), int64_t(17), int64_t(40)}) {
      const std::string what = std::string(cpu_isa_name(t.target.isa)) + " n=" + std::to_string(n);
      std::vector<float> a = random_floats(n, -1, 1, 12);
      std::vector<int32_t> idx(n);
      for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>((i * 5) % n);
      std::vector<float> sum(1), last(2), rows(3 * n), nonaffine(n), iota(n);
      ASSERT_EQ(run(t, "mixed", {n}, 2, a, idx, sum, last, rows, nonaffine, iota), 0) << what;
      double want_sum = a[0] + a[1] + a[2];
      for (float x : a) want_sum += x;
      expect_close(sum, {want_sum}, 1e-5, 1e-6, "vector then serial accumulation " + what);
      EXPECT_EQ(last[0], a[n - 1]) << "last lane wins " << what;
      EXPECT_EQ(last[1], a[idx[n - 1]]) << "indirect, last lane wins " << what;
      for (int64_t x1 = 0; x1 < 3; ++x1) {
        for (int64_t x0 = 0; x0 < n; ++x0) {
          EXPECT_EQ(rows[x1 * n + x0], x1 == 0 ? a[x0] : (x1 == 1 ? 0.0f : 7.0f)) << what;
        }
      }
      for (int64_t x0 = 0; x0 < n; ++x0) {
        const int64_t q = static_cast<int64_t>(std::floor((x0 - 5) / 3.0)) + 2;
        const float masked = x0 >= 2 ? a[q] : 0.0f;
        EXPECT_EQ(nonaffine[x0], masked + a[x0 % 5]) << what << " x0=" << x0;
        EXPECT_EQ(iota[x0], static_cast<float>(x0 * 2 - 7)) << what;
      }
    }
  }
}

TEST_F(EmitCppTest, IndexComparisonsAreLaneMasks) {
  const std::string source = emit_cpp({test_kernel("affine_cmp")}, CppTarget{});
  EXPECT_NE(source.find("ic::affine_lt<16>"), std::string::npos) << source;  // no int64 lanes
  EXPECT_EQ(source.find("ic::Vec<int64_t"), std::string::npos) << source;
  for (const Target& t : *targets_) {
    for (int64_t s0 : {int64_t(7), int64_t(10), int64_t(-3), int64_t(1) << 40}) {
      std::vector<std::vector<uint8_t>> out(8, std::vector<uint8_t>(40));
      std::vector<float> cat(40);
      ASSERT_EQ(run(t, "affine_cmp", {s0}, 1, out[0], out[1], out[2], out[3], out[4], out[5],
                    out[6], out[7], cat),
                0);
      for (int64_t x = 0; x < 40; ++x) {
        const int64_t i = x * 3 - 5, j = 30 - 2 * x;
        const bool want[8] = {i<s0, i <= s0, i> s0, i >= s0, i == s0, i != s0, s0 < j, s0 >= j};
        for (int k = 0; k < 8; ++k) {
          EXPECT_EQ(out[k][x], want[k])
              << cpu_isa_name(t.target.isa) << " s0=" << s0 << " x=" << x << " comparison " << k;
        }
        EXPECT_EQ(cat[x], x < 7 ? 1.0f : 2.0f);
      }
    }
  }
}

}  // namespace

std::vector<ir::Kernel> memory_kernels() {
  return parse_kernels(kKernels);
}

}  // namespace inductor_cpp::codegen::emit_test

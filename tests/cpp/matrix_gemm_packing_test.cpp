/// \file
/// GEMM driver, packing and scratch: the A and B packers' layouts, a power-of-two leading
/// dimension, B packed beforehand (also into caller storage), and the per-thread scratch
/// released on every worker and grown again.
#include <omp.h>

#include <cstdlib>
#include <memory>
#include <thread>

#include "matrix/gemm_config.h"
#include "matrix/pack.h"
#include "matrix/scratch.h"
#include "tests/cpp/matrix_gemm_test_util.h"

namespace inductor_cpp::matrix::gemm_test {
namespace {

TEST_F(GemmTest, PackersMatchTheirLayouts) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> src(80 * 90);
  for (float& x : src) x = dist(rng);
  const int64_t ld = 90;
  for (bool trans : {false, true})
    for (int64_t kc : {1, 16, 37})
      for (int64_t ncols : {1, 16, 33, 64}) {
        const int nr = 32;
        const int64_t panels = (ncols + nr - 1) / nr, stride = kc * nr + 5;
        std::vector<float> dst(panels * stride, kCanary);
        pack_b_panels(src.data(), ld, trans, 3, kc, 2, ncols, nr, stride, dst.data());
        for (int64_t p = 0; p < panels; ++p)
          for (int64_t kk = 0; kk < kc; ++kk)
            for (int64_t c = 0; c < nr; ++c) {
              const int64_t j = 2 + p * nr + c, k = 3 + kk;
              const float want = p * nr + c >= ncols ? 0.0f
                                 : trans             ? src[j * ld + k]
                                                     : src[k * ld + j];
              ASSERT_EQ(dst[p * stride + kk * nr + c], want)
                  << "B panel " << p << " k " << kk << " c " << c << " trans " << trans;
            }
        for (int64_t p = 0; p < panels; ++p)
          for (int64_t x = kc * nr; x < stride; ++x) ASSERT_EQ(dst[p * stride + x], kCanary);
      }
  for (bool trans : {false, true})
    for (int64_t rows : {1, 14, 20, 31})
      for (int64_t kc : {1, 17, 40}) {
        const int mr = 14;
        std::vector<float> dst(((rows + mr - 1) / mr) * kc * mr + 8, kCanary);
        pack_a_tiles(src.data(), ld, trans, 4, rows, 5, kc, mr, dst.data());
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t kk = 0; kk < kc; ++kk) {
            const int64_t r = 4 + i, k = 5 + kk;
            ASSERT_EQ(dst[(i / mr) * kc * mr + kk * mr + i % mr],
                      trans ? src[k * ld + r] : src[r * ld + k])
                << "A row " << i << " k " << kk << " trans " << trans;
          }
        const int64_t used = (rows / mr) * kc * mr + (rows % mr ? (kc - 1) * mr + rows % mr : 0);
        for (size_t x = used; x < dst.size(); ++x) ASSERT_EQ(dst[x], kCanary) << "past A tiles";
      }
}

TEST_F(GemmTest, PowerOfTwoLeadingDimensionPacksA) {
  Fixture f(64, 96, 512, false, false, rng, 512);  // lda = 1024
  ASSERT_EQ(f.p.lda % 256, 0);
  gemm_f32(f.p, 2);
  f.check();
}

TEST_F(GemmTest, PrepackedB) {
  for (bool tb : {false, true}) {
    Fixture f(77, 130, 300, false, tb, rng);
    const PackedB packed = pack_b_f32(f.p.b, f.p.k, f.p.n, f.p.ldb, tb);
    EXPECT_EQ(packed.k(), 300);
    EXPECT_EQ(packed.n(), 130);
    f.p.b = nullptr;  // must not be read
    gemm_f32_packed(f.p, packed, 2);
    f.check();
    Fixture g(3, 130, 300, false, tb, rng);  // skinny M with the same weights
    g.b = f.b;
    g.p.b = nullptr;
    gemm_f32_packed(g.p, packed, 2);
    g.p.b = g.b.data();
    g.check();
  }
}

// B packed into storage the caller provides (a compiled graph's block pool), on several
// threads (large enough for more than one packer): the same products; misaligned storage throws.
TEST_F(GemmTest, PrepackedBInCallerStorageOnThreads) {
  for (bool tb : {false, true}) {
    Fixture f(40, 300, 700, false, tb, rng);
    std::vector<std::shared_ptr<float>> given;
    const PackedStorage storage = [&](size_t floats) {
      float* data = static_cast<float*>(std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64));
      given.emplace_back(data, [](float* p) { std::free(p); });
      return given.back();
    };
    const PackedB packed = pack_b_f32(f.p.b, f.p.k, f.p.n, f.p.ldb, tb, 3, storage);
    ASSERT_EQ(given.size(), 1u);
    EXPECT_EQ(packed.panel(0), given[0].get());
    f.p.b = nullptr;
    gemm_f32_packed(f.p, packed, 2);
    f.check();
  }
  const PackedStorage misaligned = [](size_t floats) {
    auto block = std::shared_ptr<float>(new float[floats + 1], std::default_delete<float[]>());
    return std::shared_ptr<float>(block, block.get() + 1);
  };
  EXPECT_THROW(PackedB(8, 8, gemm_blocking().nr, misaligned), std::invalid_argument);
}

// The per-thread scratch (scratch.h) is freed on every thread of the team, nothing is left for
// a second release, and the next call allocates it again and computes the same.
TEST_F(GemmTest, ScratchIsReleasedOnEveryThreadAndRegrows) {
  Fixture f(300, 260, 700, false, false, rng);  // B packed per call into the team's ring
  gemm_f32(f.p, 2);
  f.check();
  // At least the team's ring of packed B blocks on the calling thread.
  EXPECT_GE(release_scratch(2), size_t(3 * 32 * 700 * sizeof(float)));
  EXPECT_EQ(release_scratch(2), 0u);
  gemm_f32(f.p, 2);
  f.check();
  EXPECT_GT(release_scratch(2), 0u);
}

// release_scratch frees each worker's own scratch, on that worker (every buffer of the team is
// empty afterwards); release_thread_scratch frees exactly the calling thread's.
ScratchVector<char>& thread_buffer() {
  thread_local ScratchVector<char> buffer;  // constructed on each thread that calls this
  return buffer;
}

TEST(ScratchTest, ReleaseVisitsEveryWorkerOfTheTeam) {
  ScratchVector<char>& mine = thread_buffer();
  release_scratch(4);
  std::vector<size_t> capacity(4, 0);
#pragma omp parallel num_threads(4)
  if (omp_get_num_threads() == 4) thread_buffer().get(1000 + size_t(omp_get_thread_num()));
  size_t outside = 0;
  std::thread other([&] {
    thread_buffer().get(5000);
    EXPECT_EQ(release_thread_scratch(), 5000u);  // its own, on its own thread
    outside = thread_buffer().vector().capacity();
  });
  other.join();
  EXPECT_GE(release_scratch(4), size_t(4 * 1000));
#pragma omp parallel num_threads(4)
  if (omp_get_num_threads() == 4)
    capacity[size_t(omp_get_thread_num())] = thread_buffer().vector().capacity();
  for (size_t c : capacity) EXPECT_EQ(c, 0u);
  EXPECT_EQ(outside, 0u);
  EXPECT_EQ(mine.vector().capacity(), 0u);
}

}  // namespace
}  // namespace inductor_cpp::matrix::gemm_test

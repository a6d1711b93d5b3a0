// ThreadPool: every index exactly once, contiguous aligned ranges, reuse across many regions.

#include <atomic>
#include <set>

#include <catch2/catch.hpp>

#include "cpu/thread_pool.hpp"

using llaisys::cpu::ThreadPool;

TEST_CASE("thread pool runs every thread index once per region", "[kernels][threads]") {
  ThreadPool pool(4);
  REQUIRE(pool.num_threads() == 4);
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> mask{0};
    pool.run([&](int t) { mask.fetch_or(1 << t); });
    REQUIRE(mask.load() == 0b1111);
  }
  CHECK(ThreadPool(0).num_threads() == ThreadPool::available_cpus());
}

TEST_CASE("parallel_for covers [0, n) with aligned, disjoint ranges", "[kernels][threads]") {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 15, 16, 17, 100, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    std::atomic<int> misaligned{0};
    pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
      if (begin % 16 != 0) ++misaligned;
      for (int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
    });
    CHECK(misaligned.load() == 0);
    for (const auto& h : hits) CHECK(h.load() == 1);
  }
}

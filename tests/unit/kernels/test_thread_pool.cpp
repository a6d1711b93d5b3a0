// ThreadPool: every index exactly once, contiguous aligned ranges, reuse across many regions.

#include <atomic>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>
#include <set>

#include <catch2/catch.hpp>

#include "cpu/thread_pool.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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

TEST_CASE("parallel_for covers every index below n with aligned, disjoint ranges", "[kernels][threads]") {
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

TEST_CASE("parallel_for keeps tiny regions on the calling thread", "[kernels][threads]") {
  ThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> calls{0}, elsewhere{0};
  // 100 items of 10 units of work: far below one thread's minimum.
  pool.parallel_for(100, 1, [&](int64_t begin, int64_t end) {
    ++calls;
    if (std::this_thread::get_id() != caller) ++elsewhere;
    CHECK(begin == 0);
    CHECK(end == 100);
  }, 10);
  CHECK(calls.load() == 1);
  CHECK(elsewhere.load() == 0);
}

TEST_CASE("dynamic regions cover every index once while run() regions interleave", "[kernels][threads]") {
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 300; ++round) {
      const int64_t n = 1 + (round * 37) % 1000;
      const int64_t align = 1 + round % 5;
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      std::atomic<int> misaligned{0};
      std::set<std::thread::id> ids;
      std::mutex ids_mutex;
      pool.parallel_for(n, align, [&](int64_t begin, int64_t end) {
        if (begin % align != 0 || begin >= end || end > n) ++misaligned;
        for (int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
        const std::lock_guard lock(ids_mutex);
        ids.insert(std::this_thread::get_id());
      }, ThreadPool::kMinWorkPerThread);
      INFO("threads " << threads << " n " << n << " align " << align);
      CHECK(misaligned.load() == 0);
      int wrong = 0;
      for (const auto& h : hits) wrong += h.load() != 1;
      CHECK(wrong == 0);
      CHECK(static_cast<int>(ids.size()) <= threads);
      // A run() region right after a dynamic one still reaches every index exactly once.
      std::atomic<int> mask{0}, repeats{0};
      pool.run([&](int t) {
        if (mask.fetch_or(1 << t) & (1 << t)) ++repeats;
      });
      CHECK(mask.load() == (1 << threads) - 1);
      CHECK(repeats.load() == 0);
    }
  }
}

TEST_CASE("a pool the OS refuses threads to throws instead of terminating", "[kernels][threads]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  WARN("sanitizer build: its shadow memory does not fit an address-space limit; not tested here");
#else
  // In a child: an address-space limit ~256 MiB above what the process maps now leaves room for a
  // few dozen 8 MiB thread stacks, so a pool of 4,000 threads fails part way.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (256u << 20);
    const rlimit rl{.rlim_cur = limit, .rlim_max = limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(4);
    try {
      ThreadPool pool(4000);
      _exit(2);  // not refused: the test proves nothing
    } catch (const std::system_error&) {
      _exit(0);
    } catch (...) {
      _exit(3);
    }
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  INFO("child status " << status << (WIFSIGNALED(status) ? " (killed by a signal: std::terminate)" : ""));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
#endif
}

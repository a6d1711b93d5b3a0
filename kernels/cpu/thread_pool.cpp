#include "thread_pool.hpp"

#include <sched.h>

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LLAISYS_CPU_RELAX() _mm_pause()
#else
#define LLAISYS_CPU_RELAX() ((void)0)
#endif

namespace llaisys::cpu {
namespace {
// About 10-50 microseconds of spinning before sleeping: long enough to bridge the gap between two
// kernels of one forward pass, short enough not to burn a core between requests.
constexpr int kSpinIterations = 20000;
}  // namespace

int ThreadPool::available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(int num_threads) {
  num_threads_ = std::min(num_threads > 0 ? num_threads : available_cpus(), kMaxThreads);
  workers_.reserve(static_cast<std::size_t>(num_threads_ - 1));
  try {
    for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (...) {
    // The OS refused a thread (a process or memory limit): stop and join the ones started, so the
    // caller gets the exception (the plugin boundary turns it into an error) instead of
    // std::terminate from destroying joinable threads.
    stop_workers();
    throw;
  }
}

void ThreadPool::stop_workers() {
  stopping_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::wait_for(std::atomic<int32_t>& counter, int32_t target) {
  for (int spin = 0;; ++spin) {
    const int32_t now = counter.load(std::memory_order_acquire);
    if (now == target) return;
    if (spin < kSpinIterations) {
      LLAISYS_CPU_RELAX();
    } else {
      counter.wait(now, std::memory_order_acquire);
    }
  }
}

void ThreadPool::start_region(int workers_wanted) {
  finished_.store(0, std::memory_order_relaxed);
  const uint64_t region = (ticket_.load(std::memory_order_relaxed) >> 32) + 1;
  ticket_.store((region << 32) | (static_cast<uint64_t>(workers_wanted) << 16), std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  if (num_threads_ == 1) {
    fn(0);
    return;
  }
  job_ = &fn;
  range_job_ = nullptr;
  start_region(num_threads_ - 1);
  fn(0);
  // Every index must run: wait for every worker (the region never closes early).
  wait_for(finished_, num_threads_ - 1);
  job_ = nullptr;
}

void ThreadPool::claim_chunks() {
  while (true) {
    const int64_t begin = next_unit_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= units_) return;
    (*range_job_)(begin, std::min(units_, begin + chunk_));
  }
}

void ThreadPool::run_dynamic(int64_t units, int64_t chunk, int threads,
                             const std::function<void(int64_t, int64_t)>& fn) {
  job_ = nullptr;
  range_job_ = &fn;
  units_ = units;
  chunk_ = chunk;
  next_unit_.store(0, std::memory_order_relaxed);
  start_region(threads - 1);
  claim_chunks();
  // Every chunk is claimed: close the region and wait only for the workers that joined it.
  const uint64_t joined = ticket_.fetch_or(kClosed, std::memory_order_acq_rel) & kCountMask;
  wait_for(finished_, static_cast<int32_t>(joined));
  range_job_ = nullptr;
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  uint64_t last_region = 0;
  while (true) {
    uint32_t now = generation_.load(std::memory_order_acquire);
    for (int spin = 0; now == seen; ++spin) {
      if (spin < kSpinIterations) {
        LLAISYS_CPU_RELAX();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
      now = generation_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stopping_.load(std::memory_order_acquire)) return;
    // Join the current region unless it is closed, full, or one this worker already ran.
    uint64_t ticket = ticket_.load(std::memory_order_acquire);
    bool joined = false;
    while ((ticket >> 32) != last_region && (ticket & kClosed) == 0 &&
           (ticket & kCountMask) < ((ticket >> 16) & kWantedMask)) {
      if (ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;
    last_region = ticket >> 32;
    if (job_ != nullptr) {
      (*job_)(static_cast<int>(ticket & kCountMask) + 1);
    } else {
      claim_chunks();
    }
    finished_.fetch_add(1, std::memory_order_acq_rel);
    finished_.notify_one();
  }
}

}  // namespace llaisys::cpu

#pragma once
// ThreadPool: a fixed set of threads that run one parallel region at a time.
//
// Contract: run(fn) calls fn(t) once for every t in [0, num_threads()) — t = 0 on the calling
// thread — and returns when all calls have returned. Work is split by the caller (static
// partitioning), so which thread computes an element never changes its value: kernels split over
// output rows or columns, never over a reduction. One caller at a time; fn must not throw or call
// run() itself. Idle workers spin briefly, then sleep on a futex (std::atomic::wait).

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace llaisys::cpu {

class ThreadPool {
 public:
  // num_threads <= 0: one per CPU this process may run on.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  void run(const std::function<void(int thread_index)>& fn);

  // Splits [0, n) into num_threads() contiguous ranges whose boundaries are multiples of `align`
  // and calls fn(begin, end) for the non-empty ones.
  template <class F>
  void parallel_for(int64_t n, int64_t align, F&& fn) {
    if (n <= 0) return;
    const int64_t units = (n + align - 1) / align;
    const int64_t threads = std::min<int64_t>(num_threads_, units);
    if (threads <= 1) {
      fn(int64_t{0}, n);
      return;
    }
    run([&](int t) {
      if (t >= threads) return;
      const int64_t begin = std::min(n, units * t / threads * align);
      const int64_t end = std::min(n, units * (t + 1) / threads * align);
      if (begin < end) fn(begin, end);
    });
  }

  static int available_cpus();

 private:
  void worker_loop(int index);

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int32_t> pending_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace llaisys::cpu

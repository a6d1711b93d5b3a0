#pragma once
// ThreadPool: a fixed set of threads that run one parallel region at a time.
//
// Two kinds of region:
//  - run(fn) calls fn(t) once for every t in [0, num_threads()) — t = 0 on the calling thread —
//    and returns when all calls have returned.
//  - parallel_for(n, align, fn, work) splits [0, n) into aligned chunks that the threads claim one
//    at a time (dynamic scheduling: a thread the OS delays simply takes fewer chunks). The calling
//    thread never waits for a worker that has not joined yet: once every chunk is claimed the
//    region closes, and a late worker finds nothing to do. Regions whose total work is too small to
//    pay for waking a thread run on the calling thread alone.
// Which thread computes an element never changes its value: kernels split over output rows or
// columns, never over a reduction. One caller at a time; fn must not throw or start a region
// itself. Idle workers spin briefly, then sleep on a futex (std::atomic::wait).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace llaisys::cpu {

class ThreadPool {
 public:
  // Below this much work per thread (in the caller's units: about one multiply-add or one byte
  // moved each) a region is not worth a thread wake-up (a few microseconds on a quiet machine,
  // far more on a loaded one).
  static constexpr int64_t kMinWorkPerThread = 48 * 1024;

  // num_threads <= 0: one per CPU this process may run on; at most 32,767. Throws std::system_error
  // (having joined the threads it started) when the OS refuses a thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  void run(const std::function<void(int thread_index)>& fn);

  // About this many chunks per thread by default: enough to rebalance around a delayed thread,
  // few enough that claiming costs nothing and tiles keep their operands warm.
  static constexpr int64_t kChunksPerThread = 4;

  // Calls fn(begin, end) over disjoint, non-empty ranges covering [0, n) whose boundaries are
  // multiples of `align` (except n itself). work_per_item estimates the cost of one element of
  // [0, n); the region uses only as many threads as get kMinWorkPerThread each (at least one).
  // chunks_per_thread: finer for work that streams (a thread finishing early waits for at most
  // one chunk of the other's), coarser for work that reuses what a chunk brought into cache.
  template <class F>
  void parallel_for(int64_t n, int64_t align, F&& fn, int64_t work_per_item = kMinWorkPerThread,
                    int64_t chunks_per_thread = kChunksPerThread) {
    if (n <= 0) return;
    align = std::max<int64_t>(1, align);
    const int64_t units = (n + align - 1) / align;
    const int64_t work = n * std::max<int64_t>(1, work_per_item);
    const int64_t threads = std::min<int64_t>({num_threads_, units, std::max<int64_t>(1, work / kMinWorkPerThread)});
    if (threads <= 1) {
      fn(int64_t{0}, n);
      return;
    }
    const int64_t chunk = std::max<int64_t>(1, units / (threads * std::max<int64_t>(1, chunks_per_thread)));
    const std::function<void(int64_t, int64_t)> range = [&](int64_t unit_begin, int64_t unit_end) {
      fn(unit_begin * align, std::min(n, unit_end * align));
    };
    run_dynamic(units, chunk, static_cast<int>(threads), range);
  }

  static int available_cpus();

 private:
  // ticket_: (region number << 32) | kClosed | (workers wanted << 16) | workers joined. A worker
  // joins a region by incrementing the count with one compare-exchange, so what it reads of the
  // region (job, chunking) was published before it joined, and the caller waits for it. The wanted
  // field has 15 bits (bit 31 is kClosed): at most kMaxThreads threads.
  static constexpr uint64_t kClosed = 1ull << 31;
  static constexpr uint64_t kCountMask = 0xFFFF;
  static constexpr uint64_t kWantedMask = 0x7FFF;
  static constexpr int kMaxThreads = static_cast<int>(kWantedMask);

  void worker_loop();
  void stop_workers();
  void start_region(int workers_wanted);
  void run_dynamic(int64_t units, int64_t chunk, int threads, const std::function<void(int64_t, int64_t)>& fn);
  void claim_chunks();
  void wait_for(std::atomic<int32_t>& counter, int32_t target);

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  // The region being run: one of the two jobs is set. Written only while no worker is in a region.
  const std::function<void(int)>* job_ = nullptr;
  const std::function<void(int64_t, int64_t)>* range_job_ = nullptr;
  int64_t units_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_unit_{0};
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int32_t> finished_{0};
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace llaisys::cpu

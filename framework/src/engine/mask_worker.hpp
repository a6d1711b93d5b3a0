#pragma once
// MaskWorker: one thread that runs a job while the engine thread runs the model's step, so grammar
// masks (CPU work) are made while the forward pass runs (internal to the engine). Started on first
// use; one job at a time.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace llaisys::engine_detail {

class MaskWorker {
 public:
  MaskWorker() = default;
  MaskWorker(const MaskWorker&) = delete;
  MaskWorker& operator=(const MaskWorker&) = delete;
  ~MaskWorker() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  // Runs `job` on the worker (after the previous one finished). The job must not throw.
  void start(std::function<void()> job) {
    wait();
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    {
      std::lock_guard lock(mutex_);
      job_ = std::move(job);
      busy_ = true;
    }
    wake_.notify_all();
  }

  // Returns once the started job (if any) has finished.
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return !busy_; });
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || job_ != nullptr; });
      if (job_ == nullptr) return;  // stopping with nothing to do
      std::function<void()> job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      job();
      lock.lock();
      busy_ = false;
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::function<void()> job_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace llaisys::engine_detail

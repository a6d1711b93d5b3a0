#pragma once
// The served models: loaded in the background (the server listens before they are ready), looked
// up by the request's "model", each with its AsyncEngine, text tools, admission counter and metrics.

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "llaisys/engine/async_engine.hpp"
#include "llaisys/model/registry.hpp"
#include "metrics.hpp"
#include "openai/request_parse.hpp"
#include "server_config.hpp"

namespace llaisys::server {

// Capacity = running + queued requests, reserved atomically before any work.
class Admission {
 public:
  explicit Admission(int32_t capacity) : capacity_(capacity) {}
  bool try_acquire() {
    int32_t used = used_.load();
    do {
      if (used >= capacity_) return false;
    } while (!used_.compare_exchange_weak(used, used + 1));
    return true;
  }
  void release() { used_.fetch_sub(1); }
  int32_t used() const { return used_.load(); }
  int32_t capacity() const { return capacity_; }

 private:
  const int32_t capacity_;
  std::atomic<int32_t> used_{0};
};

// Holds one admission slot until destroyed.
class Reservation {
 public:
  explicit Reservation(Admission* admission) : admission_(admission) {}
  ~Reservation() {
    if (admission_ != nullptr) admission_->release();
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;

 private:
  Admission* admission_;
};

struct ModelEntry {
  explicit ModelEntry(ModelSpec s)
      : spec(std::move(s)), admission(spec.max_running_requests + spec.max_queued_requests) {}

  ModelSpec spec;
  std::atomic<bool> ready{false};
  // Set once by the loader before ready becomes true; read-only afterwards.
  std::unique_ptr<AsyncEngine> engine;
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::optional<text::ChatTemplate> chat_template;
  std::string chat_template_source = "none";
  ModelTextContext text;
  int64_t created = 0;

  Admission admission;
  ModelMetrics metrics;
};

class ModelRouter {
 public:
  explicit ModelRouter(const std::vector<ModelSpec>& specs);
  ~ModelRouter();

  // Loads every model on a background thread; on_failure runs (on that thread) if one fails.
  void start_loading(std::string plugin_dir, std::string device, std::function<void(const Status&)> on_failure);
  bool all_ready() const;
  ModelEntry* find(std::string_view name) const;
  std::string available() const;  // "a, b"
  const std::vector<std::unique_ptr<ModelEntry>>& models() const { return models_; }
  // Aborts everything in flight and stops the engines.
  void shutdown();

 private:
  std::vector<std::unique_ptr<ModelEntry>> models_;
  std::thread loader_;
  std::atomic<bool> stopping_{false};
};

}  // namespace llaisys::server

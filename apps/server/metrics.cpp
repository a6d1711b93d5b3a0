#include "metrics.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

#include <fmt/format.h>

namespace llaisys::server {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  if (std::isnan(value)) return;
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);  // le: value <= bound
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  sum_ += value;
  ++count_;
}

void ModelMetrics::count_request(int status) {
  std::lock_guard lock(mutex_);
  ++data_.requests_by_status[status];
}

void ModelMetrics::add_tokens(int64_t prompt, int64_t generated, int64_t cached) {
  std::lock_guard lock(mutex_);
  data_.prompt_tokens += prompt;
  data_.generation_tokens += generated;
  data_.cached_prompt_tokens += cached;
}

void ModelMetrics::observe_ttft(double seconds) {
  std::lock_guard lock(mutex_);
  data_.ttft.observe(seconds);
}

void ModelMetrics::observe_itl(double seconds, int count) {
  std::lock_guard lock(mutex_);
  for (int i = 0; i < count; ++i) data_.itl.observe(seconds);
}

void ModelMetrics::observe_e2e(double seconds) {
  std::lock_guard lock(mutex_);
  data_.e2e.observe(seconds);
}

MetricsSnapshot ModelMetrics::snapshot() const {
  std::lock_guard lock(mutex_);
  return data_;
}

int TokenGapTracker::observe(const RequestOutput& out, ModelMetrics& metrics) {
  std::size_t tokens = 0;
  for (const ChoiceDelta& c : out.choices) tokens = std::max(tokens, c.token_ids.size());
  const RequestTimes::TimePoint at = out.times.last_token;
  if (tokens == 0 || at.time_since_epoch().count() == 0) return 0;
  int observed = 0;
  if (previous_.time_since_epoch().count() != 0 && at >= previous_) {
    const double gap = std::chrono::duration<double>(at - previous_).count();
    observed = static_cast<int>(tokens);
    metrics.observe_itl(gap / static_cast<double>(tokens), observed);
  }  // the first delta closes no gap: its time is the TTFT
  previous_ = at;
  return observed;
}

void HttpMetrics::count(int status) {
  std::lock_guard lock(mutex_);
  ++by_status_[status];
}

std::map<int, uint64_t> HttpMetrics::snapshot() const {
  std::lock_guard lock(mutex_);
  return by_status_;
}

std::string escape_label(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

using Getter = std::function<double(const ModelMetricsView&)>;

void simple(std::string& out, const std::vector<ModelMetricsView>& models, std::string_view name,
            std::string_view type, std::string_view help, const Getter& get) {
  header(out, name, type, help);
  for (const ModelMetricsView& m : models) {
    out += fmt::format("{}{{model=\"{}\"}} {}\n", name, escape_label(m.model), number(get(m)));
  }
}

void histogram(std::string& out, const std::vector<ModelMetricsView>& models, std::string_view name,
               std::string_view help, const std::function<const Histogram&(const MetricsSnapshot&)>& get) {
  header(out, name, "histogram", help);
  for (const ModelMetricsView& m : models) {
    const Histogram& h = get(m.metrics);
    const std::string label = escape_label(m.model);
    uint64_t cumulative = 0;
    for (std::size_t i = 0; i < h.bounds().size(); ++i) {
      cumulative += h.counts()[i];
      out += fmt::format("{}_bucket{{model=\"{}\",le=\"{}\"}} {}\n", name, label, number(h.bounds()[i]), cumulative);
    }
    cumulative += h.counts().back();
    out += fmt::format("{}_bucket{{model=\"{}\",le=\"+Inf\"}} {}\n", name, label, cumulative);
    out += fmt::format("{}_sum{{model=\"{}\"}} {}\n", name, label, number(h.sum()));
    out += fmt::format("{}_count{{model=\"{}\"}} {}\n", name, label, h.count());
  }
}

}  // namespace

std::string render_prometheus(const std::vector<ModelMetricsView>& models,
                              const std::map<int, uint64_t>& http_by_status) {
  std::string out;
  header(out, "llaisys_http_requests_total", "counter",
         "HTTP responses of the whole server by status code (also those refused before a model is known).");
  for (const auto& [status, count] : http_by_status) {
    out += fmt::format("llaisys_http_requests_total{{status=\"{}\"}} {}\n", status, count);
  }
  header(out, "llaisys_requests_total", "counter", "HTTP requests by model and status code.");
  for (const ModelMetricsView& m : models) {
    for (const auto& [status, count] : m.metrics.requests_by_status) {
      out += fmt::format("llaisys_requests_total{{model=\"{}\",status=\"{}\"}} {}\n", escape_label(m.model), status,
                         count);
    }
  }
  auto stat = [](auto field) {
    return [field](const ModelMetricsView& m) { return m.engine ? static_cast<double>(field(*m.engine)) : 0.0; };
  };
  simple(out, models, "llaisys_requests_running", "gauge", "Sequences being generated.",
         stat([](const EngineStats& s) { return s.num_running_seqs; }));
  simple(out, models, "llaisys_requests_waiting", "gauge", "Sequences admitted and waiting for a batch slot.",
         stat([](const EngineStats& s) { return s.num_waiting_seqs; }));
  simple(out, models, "llaisys_kv_blocks_used", "gauge", "KV cache blocks held by live requests.",
         stat([](const EngineStats& s) { return s.kv.num_used_blocks(); }));
  simple(out, models, "llaisys_kv_blocks_total", "gauge", "KV cache blocks in the pool.",
         stat([](const EngineStats& s) { return s.kv.num_blocks; }));
  simple(out, models, "llaisys_kv_cache_usage_ratio", "gauge", "Fraction of KV blocks held by live requests.",
         stat([](const EngineStats& s) { return s.kv.usage(); }));
  simple(out, models, "llaisys_prefix_cache_hit_ratio", "gauge",
         "Prompt tokens served from the prefix cache / prompt tokens looked up (lifetime).",
         stat([](const EngineStats& s) { return s.prefix_hit_rate(); }));
  simple(out, models, "llaisys_structured_output_mask_seconds_total", "counter",
         "Engine time spent computing structured output's allowed-token masks.",
         stat([](const EngineStats& s) { return static_cast<double>(s.times.mask_ns) * 1e-9; }));
  simple(out, models, "llaisys_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
         [](const ModelMetricsView& m) { return static_cast<double>(m.metrics.prompt_tokens); });
  simple(out, models, "llaisys_generation_tokens_total", "counter", "Generated tokens of finished requests.",
         [](const ModelMetricsView& m) { return static_cast<double>(m.metrics.generation_tokens); });
  simple(out, models, "llaisys_cached_prompt_tokens_total", "counter",
         "Prompt tokens served from the prefix cache.",
         [](const ModelMetricsView& m) { return static_cast<double>(m.metrics.cached_prompt_tokens); });
  histogram(out, models, "llaisys_time_to_first_token_seconds", "Time from arrival to the first token.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.ttft; });
  histogram(out, models, "llaisys_inter_token_latency_seconds", "Time between generated tokens.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.itl; });
  histogram(out, models, "llaisys_e2e_request_latency_seconds", "Time from arrival to the last output.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.e2e; });
  return out;
}

}  // namespace llaisys::server

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

// One series per model; `label` is the model's label name (ours: model, vLLM's: model_name).
void simple(std::string& out, const std::vector<ModelMetricsView>& models, std::string_view label,
            std::string_view name, std::string_view type, std::string_view help, const Getter& get) {
  header(out, name, type, help);
  for (const ModelMetricsView& m : models) {
    out += fmt::format("{}{{{}=\"{}\"}} {}\n", name, label, escape_label(m.model), number(get(m)));
  }
}

void histogram(std::string& out, const std::vector<ModelMetricsView>& models, std::string_view label_name,
               std::string_view name, std::string_view help,
               const std::function<const Histogram&(const MetricsSnapshot&)>& get) {
  header(out, name, "histogram", help);
  for (const ModelMetricsView& m : models) {
    const Histogram& h = get(m.metrics);
    const std::string label = fmt::format("{}=\"{}\"", label_name, escape_label(m.model));
    uint64_t cumulative = 0;
    for (std::size_t i = 0; i < h.bounds().size(); ++i) {
      cumulative += h.counts()[i];
      out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, label, number(h.bounds()[i]), cumulative);
    }
    cumulative += h.counts().back();
    out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, label, cumulative);
    out += fmt::format("{}_sum{{{}}} {}\n", name, label, number(h.sum()));
    out += fmt::format("{}_count{{{}}} {}\n", name, label, h.count());
  }
}

// A value of the engine's stats; 0 while the model loads.
template <class F>
Getter stat(F field) {
  return [field](const ModelMetricsView& m) { return m.engine ? static_cast<double>(field(*m.engine)) : 0.0; };
}

// Speculative decoding per model and method (ngram, draft): only models that speculate have samples.
void speculative_series(std::string& out, const std::vector<ModelMetricsView>& models) {
  struct Series {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const EngineStats&);
  };
  const Series series[] = {
      {"llaisys_spec_decode_draft_tokens_total", "counter", "Speculative decoding: draft tokens proposed and verified.",
       [](const EngineStats& s) { return static_cast<double>(s.num_draft_tokens); }},
      {"llaisys_spec_decode_accepted_tokens_total", "counter",
       "Speculative decoding: draft tokens accepted (each a token won without a model step).",
       [](const EngineStats& s) { return static_cast<double>(s.num_accepted_draft_tokens); }},
      {"llaisys_spec_decode_draft_kv_blocks_used", "gauge",
       "Speculative decoding: KV blocks of the draft model's own pool held for sequences (0 for n-gram).",
       [](const EngineStats& s) { return static_cast<double>(s.num_draft_kv_blocks_used); }},
      {"llaisys_spec_decode_acceptance_ratio", "gauge", "Speculative decoding: accepted / verified draft tokens (lifetime).",
       [](const EngineStats& s) {
         return s.num_draft_tokens > 0
                    ? static_cast<double>(s.num_accepted_draft_tokens) / static_cast<double>(s.num_draft_tokens)
                    : 0.0;
       }},
  };
  for (const Series& one : series) {
    header(out, one.name, one.type, one.help);
    for (const ModelMetricsView& m : models) {
      if (!m.engine || m.engine->speculative_method.empty()) continue;
      out += fmt::format("{}{{model=\"{}\",method=\"{}\"}} {}\n", one.name, escape_label(m.model),
                         m.engine->speculative_method, number(one.value(*m.engine)));
    }
  }
}

// The series routers and autoscalers read, under vLLM's names and label (model_name), so that
// dashboards, KEDA/HPA rules and the Kubernetes inference gateway's endpoint picker (its Model Server
// Protocol: TotalQueuedRequests, TotalRunningRequests, KVCacheUtilization, BlockSize, NumGPUBlocks)
// work unchanged. Same values as the llaisys_ series of the same meaning.
void vllm_series(std::string& out, const std::vector<ModelMetricsView>& models) {
  constexpr std::string_view kLabel = "model_name";
  simple(out, models, kLabel, "vllm:num_requests_running", "gauge", "Sequences being generated (a batch slot each).",
         stat([](const EngineStats& s) { return s.num_running_seqs; }));
  simple(out, models, kLabel, "vllm:num_requests_waiting", "gauge",
         "Sequences admitted and waiting for a batch slot (preempted ones included).",
         stat([](const EngineStats& s) { return s.num_waiting_seqs; }));
  const Getter usage = stat([](const EngineStats& s) { return s.kv.usage(); });
  simple(out, models, kLabel, "vllm:kv_cache_usage_perc", "gauge",
         "KV cache usage, 0-1: blocks pinned by live sequences / blocks in the pool.", usage);
  simple(out, models, kLabel, "vllm:gpu_cache_usage_perc", "gauge",
         "The same as vllm:kv_cache_usage_perc (its older name, still read by older gateways).", usage);
  header(out, "vllm:cache_config_info", "gauge", "The KV cache's configuration, as labels (value 1).");
  for (const ModelMetricsView& m : models) {
    if (!m.engine) continue;
    out += fmt::format("vllm:cache_config_info{{{}=\"{}\",block_size=\"{}\",num_gpu_blocks=\"{}\"}} 1\n", kLabel,
                       escape_label(m.model), m.engine->kv.block_size, m.engine->kv.num_blocks);
  }
  simple(out, models, kLabel, "vllm:prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache.",
         stat([](const EngineStats& s) { return s.prefix_query_tokens; }));
  simple(out, models, kLabel, "vllm:prefix_cache_hits_total", "counter",
         "Prompt tokens found in the prefix cache.", stat([](const EngineStats& s) { return s.prefix_hit_tokens; }));
  simple(out, models, kLabel, "vllm:num_preemptions_total", "counter", "Sequences preempted (KV pool full).",
         stat([](const EngineStats& s) { return s.num_preemptions; }));
  simple(out, models, kLabel, "vllm:spec_decode_num_draft_tokens_total", "counter",
         "Speculative decoding: draft tokens verified.", stat([](const EngineStats& s) { return s.num_draft_tokens; }));
  simple(out, models, kLabel, "vllm:spec_decode_num_accepted_tokens_total", "counter",
         "Speculative decoding: draft tokens accepted.",
         stat([](const EngineStats& s) { return s.num_accepted_draft_tokens; }));
  simple(out, models, kLabel, "vllm:prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
         [](const ModelMetricsView& m) { return static_cast<double>(m.metrics.prompt_tokens); });
  simple(out, models, kLabel, "vllm:generation_tokens_total", "counter", "Generated tokens of finished requests.",
         [](const ModelMetricsView& m) { return static_cast<double>(m.metrics.generation_tokens); });
  histogram(out, models, kLabel, "vllm:time_to_first_token_seconds", "Time from arrival to the first token.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.ttft; });
  histogram(out, models, kLabel, "vllm:inter_token_latency_seconds", "Time between generated tokens.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.itl; });
  histogram(out, models, kLabel, "vllm:e2e_request_latency_seconds", "Time from arrival to the last output.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.e2e; });
}

}  // namespace

std::string render_prometheus(const std::vector<ModelMetricsView>& models,
                              const std::map<int, uint64_t>& http_by_status, const ServerGauges& server) {
  std::string out;
  header(out, "llaisys_server_draining", "gauge",
         "1 from the first SIGTERM/SIGINT on: /ready is 503 and new requests are refused while in-flight ones finish.");
  out += fmt::format("llaisys_server_draining {}\n", server.draining ? 1 : 0);
  header(out, "llaisys_http_requests_in_flight", "gauge",
         "HTTP requests accepted whose response is not yet complete (what a drain waits for).");
  out += fmt::format("llaisys_http_requests_in_flight {}\n", server.requests_in_flight);
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
  simple(out, models, "model", "llaisys_requests_running", "gauge", "Sequences being generated.",
         stat([](const EngineStats& s) { return s.num_running_seqs; }));
  simple(out, models, "model", "llaisys_requests_waiting", "gauge", "Sequences admitted and waiting for a batch slot.",
         stat([](const EngineStats& s) { return s.num_waiting_seqs; }));
  simple(out, models, "model", "llaisys_kv_blocks_used", "gauge", "KV cache blocks held by live requests.",
         stat([](const EngineStats& s) { return s.kv.num_used_blocks(); }));
  simple(out, models, "model", "llaisys_kv_blocks_total", "gauge", "KV cache blocks in the pool.",
         stat([](const EngineStats& s) { return s.kv.num_blocks; }));
  simple(out, models, "model", "llaisys_kv_blocks_cached", "gauge",
         "KV cache blocks holding prefix-cache entries no live request pins (reclaimed, i.e. evicted, on demand).",
         stat([](const EngineStats& s) { return s.kv.num_evictable_blocks; }));
  simple(out, models, "model", "llaisys_kv_block_size", "gauge", "Tokens per KV cache block.",
         stat([](const EngineStats& s) { return s.kv.block_size; }));
  simple(out, models, "model", "llaisys_kv_cache_usage_ratio", "gauge",
         "Fraction of KV blocks held by live requests (0-1).", stat([](const EngineStats& s) { return s.kv.usage(); }));
  simple(out, models, "model", "llaisys_kv_evicted_blocks_total", "counter",
         "Prefix-cache blocks evicted to make room.", stat([](const EngineStats& s) { return s.kv.num_evicted_blocks; }));
  simple(out, models, "model", "llaisys_prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache at admission.",
         stat([](const EngineStats& s) { return s.prefix_query_tokens; }));
  simple(out, models, "model", "llaisys_prefix_cache_hits_total", "counter",
         "Prompt tokens of those found in the prefix cache.",
         stat([](const EngineStats& s) { return s.prefix_hit_tokens; }));
  simple(out, models, "model", "llaisys_preemptions_total", "counter",
         "Sequences preempted because the KV pool was full (their prompt is recomputed).",
         stat([](const EngineStats& s) { return s.num_preemptions; }));
  simple(out, models, "model", "llaisys_prefix_cache_hit_ratio", "gauge",
         "Prompt tokens served from the prefix cache / prompt tokens looked up (lifetime).",
         stat([](const EngineStats& s) { return s.prefix_hit_rate(); }));
  speculative_series(out, models);
  simple(out, models, "model", "llaisys_structured_output_mask_seconds_total", "counter",
         "Engine time spent computing structured output's allowed-token masks.",
         stat([](const EngineStats& s) { return static_cast<double>(s.times.mask_ns) * 1e-9; }));
  simple(out, models, "model", "llaisys_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
         [](const ModelMetricsView& m) { return static_cast<double>(m.metrics.prompt_tokens); });
  simple(out, models, "model", "llaisys_generation_tokens_total", "counter", "Generated tokens of finished requests.",
         [](const ModelMetricsView& m) { return static_cast<double>(m.metrics.generation_tokens); });
  simple(out, models, "model", "llaisys_cached_prompt_tokens_total", "counter",
         "Prompt tokens served from the prefix cache.",
         [](const ModelMetricsView& m) { return static_cast<double>(m.metrics.cached_prompt_tokens); });
  histogram(out, models, "model", "llaisys_time_to_first_token_seconds", "Time from arrival to the first token.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.ttft; });
  histogram(out, models, "model", "llaisys_inter_token_latency_seconds", "Time between generated tokens.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.itl; });
  histogram(out, models, "model", "llaisys_e2e_request_latency_seconds", "Time from arrival to the last output.",
            [](const MetricsSnapshot& s) -> const Histogram& { return s.e2e; });
  vllm_series(out, models);
  return out;
}

}  // namespace llaisys::server

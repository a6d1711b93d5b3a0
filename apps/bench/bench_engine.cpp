// `llaisys-bench engine`: what continuous batching and prefix caching buy, each judged against the
// same engine's own baseline measured in the same run.
//
//  throughput: aggregate generated tokens/s with 32 concurrent sequences (128-token prompts, 128 new
//              tokens each, greedy, EOS ignored) against one sequence alone. Target: >= 8x.
//  prefix:     16 different questions behind a shared 1,000-token system prompt, submitted together
//              after one earlier request with the same system prompt; mean time to first token with
//              the prefix cache against without it. Target: >= 5x lower.
// Without --model the qwen2-0.5b shape is generated (once) with llaisys-mkmodel's library.

#include <algorithm>
#include <chrono>
#include <fstream>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include <boost/json.hpp>

#include "commands.hpp"
#include "compute_peak.hpp"
#include "cpu/cpu_isa.hpp"
#include "cpu/linear_bf16.hpp"
#include "cpu/thread_pool.hpp"
#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/model/registry.hpp"

namespace llaisys::bench {
namespace fs = std::filesystem;
namespace json = boost::json;
namespace {

using Clock = std::chrono::steady_clock;

struct EngineBenchOptions {
  std::string shape = "qwen2-0.5b";
  std::string model_dir;
  std::string cache_dir = default_model_cache_dir();
  std::string plugin_dir;
  std::string options_json = "{}";
  std::string scenario = "all";  // throughput, prefix, all
  int32_t threads = 0;
  int32_t concurrency = 32;
  int32_t prompt_tokens = 128;
  int32_t new_tokens = 128;
  int32_t system_tokens = 1000;
  int32_t questions = 16;
  int32_t question_tokens = 24;
  int64_t kv_cache_mb = 2048;
};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// Deterministic token ids below 150,000, different for every `stream`.
std::vector<TokenId> synthetic_tokens(uint64_t stream, int32_t length) {
  std::vector<TokenId> tokens;
  uint64_t x = stream * 0x9E3779B97F4A7C15ull + 0xD1B54A32D192ED03ull;
  for (int32_t i = 0; i < length; ++i) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    tokens.push_back(static_cast<TokenId>(100 + x % 149000));
  }
  return tokens;
}

class Bench {
 public:
  Bench(const EngineBenchOptions& options, fs::path model_dir) : o_(options), model_dir_(std::move(model_dir)) {
    registry_.load_directory(o_.plugin_dir.empty() ? default_plugin_dir() : fs::path(o_.plugin_dir));
  }

  Result<std::unique_ptr<LLMEngine>> engine(bool prefix_cache) const {
    LLAISYS_ASSIGN_OR_RETURN(AnyModel model, registry_.open_model({.model_dir = model_dir_,
                                                                    .num_threads = o_.threads,
                                                                    .options_json = o_.options_json}));
    return LLMEngine::create(EngineModel(std::move(model)),
                             {.kv_cache_bytes = static_cast<uint64_t>(o_.kv_cache_mb) << 20,
                              .max_num_seqs = std::max(64, o_.concurrency),
                              .max_context = 4096,
                              .enable_prefix_cache = prefix_cache,
                              .seed = 0});
  }

  // Submits all requests at once and steps to the end; returns each request's final output.
  static std::vector<RequestOutput> run(LLMEngine& engine, const std::vector<GenerateRequest>& requests) {
    std::vector<RequestId> ids;
    for (const GenerateRequest& request : requests) ids.push_back(engine.submit(request).value());
    std::map<RequestId, RequestOutput> last;
    while (engine.has_unfinished()) {
      for (RequestOutput& output : engine.step()) {
        if (output.finished) last[output.id] = std::move(output);
      }
    }
    std::vector<RequestOutput> ordered;
    for (RequestId id : ids) ordered.push_back(std::move(last.at(id)));
    return ordered;
  }

  GenerateRequest request(std::vector<TokenId> prompt, int32_t max_tokens) const {
    GenerateRequest r{.prompt_ids = std::move(prompt)};
    r.sampling.temperature = 0.0f;
    r.stop.max_tokens = max_tokens;
    r.stop.ignore_eos = true;
    return r;
  }

  Status throughput() const {
    LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<LLMEngine> engine, this->engine(false));
    run(*engine, {request(synthetic_tokens(999, 16), 2)});  // touch every weight page first
    auto timed = [&](int32_t count) {
      std::vector<GenerateRequest> requests;
      for (int32_t i = 0; i < count; ++i) requests.push_back(request(synthetic_tokens(static_cast<uint64_t>(i), o_.prompt_tokens), o_.new_tokens));
      const EngineStats before = engine->stats();
      const auto start = Clock::now();
      const std::vector<RequestOutput> outputs = run(*engine, requests);
      const double wall = seconds(Clock::now() - start);
      print_step_times(count, before, engine->stats());
      int64_t generated = 0;
      Clock::time_point all_prefilled{};
      for (const RequestOutput& out : outputs) {
        generated += out.usage.completion_tokens;
        all_prefilled = std::max(all_prefilled, out.times.first_token);
      }
      // Decode phase: from the moment every sequence had its first token to the end.
      const double decode_wall = seconds(Clock::now() - all_prefilled);
      const int64_t decode_tokens = generated - count;
      return std::tuple{static_cast<double>(generated) / wall, wall, static_cast<double>(decode_tokens) / decode_wall};
    };
    const auto [single_tps, single_wall, single_decode_tps] = timed(1);
    const auto [batch_tps, batch_wall, batch_decode_tps] = timed(o_.concurrency);
    const double ratio = batch_tps / single_tps;
    fmt::print("throughput: {}-token prompts, {} new tokens each, greedy, EOS ignored\n", o_.prompt_tokens, o_.new_tokens);
    fmt::print("  1 sequence:    {:8.2f} generated tokens/s ({:.2f} s; decode phase {:.2f} tokens/s)\n", single_tps,
               single_wall, single_decode_tps);
    fmt::print("  {} sequences: {:8.2f} generated tokens/s ({:.2f} s; decode phase {:.2f} tokens/s)\n", o_.concurrency,
               batch_tps, batch_wall, batch_decode_tps);
    fmt::print("  ratio: {:.2f}x aggregate (target >= 8: {}), {:.2f}x in the decode phase\n", ratio,
               ratio >= 8 ? "MET" : "MISSED", batch_decode_tps / single_decode_tps);
    print_compute_bound(engine->model_info(), single_tps, batch_tps);
    return Status();
  }

  // Where a step's time went during one run (the engine's StepTimes, differences of two snapshots).
  static void print_step_times(int32_t count, const EngineStats& before, const EngineStats& after) {
    const int64_t steps = after.num_steps - before.num_steps;
    if (steps <= 0) return;
    auto per_step_ms = [&](uint64_t a, uint64_t b) { return static_cast<double>(a - b) / 1e6 / static_cast<double>(steps); };
    const StepTimes& t = after.times;
    const StepTimes& t0 = before.times;
    const double total = per_step_ms(t.total_ns(), t0.total_ns());
    const double forward = per_step_ms(t.forward_ns, t0.forward_ns);
    const double sample = per_step_ms(t.sample_ns, t0.sample_ns);
    const double other = per_step_ms(t.model_other_ns, t0.model_other_ns);
    const double schedule = per_step_ms(t.schedule_ns, t0.schedule_ns);
    const double prepare = per_step_ms(t.prepare_ns, t0.prepare_ns);
    const double output = per_step_ms(t.output_ns, t0.output_ns);
    const double host = schedule + prepare + output + other;
    auto pct = [&](double x) { return total > 0 ? 100.0 * x / total : 0.0; };
    fmt::print("  {:2} sequences, per step ({} steps, {:.3f} ms): model forward {:.3f} ms ({:.1f}%), sampling {:.3f} ms "
               "({:.1f}%), scheduling {:.3f} ms, sampling rows {:.3f} ms, output processing {:.3f} ms, model call "
               "overhead {:.3f} ms; host outside the model's step {:.2f}% (target <= 3%)\n",
               count, steps, total, forward, pct(forward), sample, pct(sample), schedule, prepare, output, other, pct(host));
  }

  // What the ratio could be at most on this CPU: the batch's multiply-adds (counted for bf16
  // weights, 2 bytes each, as the generated bench model has; attention left out, so the bound is
  // generous) at the vector peak measured now, against
  // the single sequence just measured. A single sequence is memory-bound and 32 are compute-bound,
  // so the bound is this machine's compute-to-bandwidth ratio, not the engine's.
  void print_compute_bound(const ModelInfo& info, double single_tps, double batch_tps) const {
    json::error_code ec;
    const json::value options = json::parse(o_.options_json, ec);
    const json::string* matmul = !ec && options.is_object() && options.as_object().contains("matmul")
                                     ? options.as_object().at("matmul").if_string()
                                     : nullptr;
    const json::string* isa = !ec && options.is_object() && options.as_object().contains("isa")
                                  ? options.as_object().at("isa").if_string()
                                  : nullptr;
    // The CPU context's rule (ops make_cpu_context): bf16 products need the AVX-512 path and AVX512-BF16,
    // and "auto" asks for them on AMD CPUs only. (The bench model's weights are bf16: the int8 mode
    // for quantized ones does not apply.)
    const bool bf16 = matmul != nullptr && (*matmul == "bf16" || (*matmul == "auto" && cpu::cpu_is_amd())) &&
                      cpu::bf16dot::supported() &&
                      (isa == nullptr || *isa == "auto" || *isa == "avx512");
    const int threads = o_.threads > 0 ? o_.threads : cpu::ThreadPool::available_cpus();
    const double peak = measure_peak_macs(threads, bf16);
    if (peak <= 0) return;
    const double decode_macs = static_cast<double>(info.weight_bytes) / 2;
    const double head_macs = static_cast<double>(info.vocab_size) * static_cast<double>(info.hidden_size);
    const double per_sequence = o_.prompt_tokens * (decode_macs - head_macs) + head_macs + (o_.new_tokens - 1) * decode_macs;
    const double bound_tps = peak / (per_sequence / o_.new_tokens);
    fmt::print("  bound: at this CPU's measured peak ({:.0f} GMAC/s: {} threads of {}) the batch's multiply-adds allow at "
               "most {:.1f} tokens/s = {:.2f}x the single sequence; the batch ran at {:.0f}% of that peak\n",
               peak / 1e9, threads, bf16 ? "vdpbf16ps" : "f32 FMA", bound_tps, bound_tps / single_tps,
               100.0 * batch_tps / bound_tps);
  }

  Status prefix() const {
    const std::vector<TokenId> system = synthetic_tokens(5000, o_.system_tokens);
    auto prompt_for = [&](uint64_t question) {
      std::vector<TokenId> prompt = system;
      const std::vector<TokenId> q = synthetic_tokens(6000 + question, o_.question_tokens);
      prompt.insert(prompt.end(), q.begin(), q.end());
      return prompt;
    };
    struct Ttft {
      double mean_ms = 0;
      double max_ms = 0;
      double mean_cached = 0;
    };
    auto measure = [&](bool prefix_cache) -> Result<Ttft> {
      LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<LLMEngine> engine, this->engine(prefix_cache));
      run(*engine, {request(prompt_for(999), 1)});  // an earlier conversation with the same system prompt
      std::vector<GenerateRequest> requests;
      for (int32_t q = 0; q < o_.questions; ++q) requests.push_back(request(prompt_for(static_cast<uint64_t>(q)), 4));
      Ttft result;
      for (const RequestOutput& out : run(*engine, requests)) {
        const double ms = 1e3 * seconds(out.times.first_token - out.times.arrival);
        result.mean_ms += ms / o_.questions;
        result.max_ms = std::max(result.max_ms, ms);
        result.mean_cached += static_cast<double>(out.usage.cached_tokens) / o_.questions;
      }
      return result;
    };
    LLAISYS_ASSIGN_OR_RETURN(Ttft without, measure(false));
    LLAISYS_ASSIGN_OR_RETURN(Ttft with, measure(true));
    const double ratio = without.mean_ms / with.mean_ms;
    fmt::print("prefix: {}-token system prompt, {} questions of {} tokens submitted together\n", o_.system_tokens,
               o_.questions, o_.question_tokens);
    fmt::print("  without prefix cache: mean TTFT {:9.1f} ms (max {:.1f} ms)\n", without.mean_ms, without.max_ms);
    fmt::print("  with prefix cache:    mean TTFT {:9.1f} ms (max {:.1f} ms), {:.0f} cached tokens per request\n",
               with.mean_ms, with.max_ms, with.mean_cached);
    fmt::print("  ratio: {:.2f}x lower with the cache (target >= 5: {})\n", ratio, ratio >= 5 ? "MET" : "MISSED");
    return Status();
  }

 private:
  const EngineBenchOptions& o_;
  fs::path model_dir_;
  PluginRegistry registry_;
};

int run_engine_bench(const EngineBenchOptions& o) {
  fs::path model_dir;
  if (auto code = resolve_bench_model(o.model_dir, o.shape, o.cache_dir, model_dir)) return *code;
  fmt::print("model: {}, {} compute threads (0: the plugin's choice)\n", model_dir.string(), o.threads);
  fmt::print("cpu:   {} ({} cpus available)\n", cpu_model_name(), std::thread::hardware_concurrency());
  Bench bench(o, model_dir);
  for (const char* scenario : {"throughput", "prefix"}) {
    if (o.scenario != "all" && o.scenario != scenario) continue;
    const Status status = std::string_view(scenario) == "throughput" ? bench.throughput() : bench.prefix();
    if (!status.ok()) {
      fmt::print(stderr, "error: {}\n", status.message());
      return 1;
    }
  }
  return 0;
}

}  // namespace

void add_engine_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<EngineBenchOptions>();
  CLI::App* cmd = app.add_subcommand("engine", "continuous batching (32 vs 1 sequences) and prefix caching (TTFT)");
  cmd->add_option("--shape", o->shape, "model shape to generate when --model is not given")->capture_default_str();
  cmd->add_option("--model", o->model_dir, "an existing model directory or GGUF file instead");
  cmd->add_option("--cache-dir", o->cache_dir, "where generated models are kept")->capture_default_str();
  cmd->add_option("--plugin-dir", o->plugin_dir, "directory of model plugins (default: next to the executable)");
  cmd->add_option("--options", o->options_json, "model options (JSON)")->capture_default_str();
  cmd->add_option("--scenario", o->scenario, "throughput, prefix or all")
      ->capture_default_str()->check(CLI::IsMember({"throughput", "prefix", "all"}));
  cmd->add_option("--threads", o->threads, "compute threads (0: the plugin's choice)")->capture_default_str()->check(CLI::Range(0, 1024));
  cmd->add_option("--concurrency", o->concurrency, "concurrent sequences in the throughput scenario")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt length in the throughput scenario")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--new-tokens", o->new_tokens, "generated tokens per sequence")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--system-tokens", o->system_tokens, "shared system prompt length")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--questions", o->questions, "questions behind the system prompt")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--kv-cache-mb", o->kv_cache_mb, "KV cache budget")->capture_default_str()->check(CLI::Range(1, 1 << 24));
  cmd->callback([o, &exit_code] { exit_code = run_engine_bench(*o); });
}

}  // namespace llaisys::bench

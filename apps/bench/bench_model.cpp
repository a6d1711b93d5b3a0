// `llaisys-bench model`: decode and prefill speed of a model through the whole plugin stack, judged
// against the memory copy bandwidth measured in the same run, plus peak memory against the weights.
//
// Reports, in one run: copy bandwidth (bytes read + written per second), single-sequence decode
// tokens/s and decode efficiency = weight bytes read per token x tokens/s / copy bandwidth, taken as
// the median of 8 rounds that each measure the copy bandwidth right before decoding, prefill
// tokens/s for one long prompt, and peak RSS / weight bytes. Without --model it generates the
// requested shape with llaisys-mkmodel's library into --cache-dir (once). Several models (--model
// given more than once, or --gguf TYPES: the shape also written as GGUF files of those types) are
// measured one after the other and compared with the first in a table: decode tokens/s, the same
// per unit of the copy bandwidth measured around each model's rounds, prefill, peak RSS / file.

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "cpu/cpu_isa.hpp"
#include "llaisys/model/registry.hpp"
#include "gguf_convert.hpp"

namespace llaisys::bench {
namespace fs = std::filesystem;
namespace {

struct ModelBenchOptions {
  std::string shape = "qwen2-0.5b";
  std::vector<std::string> models;  // empty: generate `shape` into cache_dir
  std::vector<std::string> gguf_types;  // also the shape written as GGUF files of these types
  std::string cache_dir = default_model_cache_dir();
  std::string plugin_dir;
  std::string options_json = "{}";
  int32_t threads = 2;
  int32_t prompt_tokens = 512;
  int32_t decode_tokens = 128;
  int32_t decode_prompt_tokens = 16;
  int32_t copy_mib = 512;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Peak resident set of this process in bytes (VmHWM), resettable through /proc/self/clear_refs.
uint64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  return static_cast<bool>(clear);
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// The 1-, 5- and 15-minute load averages: how busy the machine was around the timings.
std::string load_average() {
  std::ifstream loadavg("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  if (!(loadavg >> one >> five >> fifteen)) return "unknown";
  return fmt::format("{:.2f} {:.2f} {:.2f}", one, five, fifteen);
}

// The bytes of a model's weight files (a GGUF file's whole size).
uint64_t weight_file_bytes(const fs::path& model) {
  if (fs::is_regular_file(model)) return fs::file_size(model);
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(model)) {
    if (entry.path().extension() == ".safetensors") total += entry.file_size();
  }
  return total;
}

// What one model's run measured, for the comparison table.
struct ModelResult {
  std::string name;
  double decode_tps = 0;       // median round
  double efficiency = 0;       // median round
  double copy_bandwidth = 0;   // median of the rounds' copies
  double prefill_tps = 0;
  double weight_mb = 0;        // per decode step
  double rss_ratio = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One sequence's pass over `tokens` at positions [start, ...), logits of the last token into `logits`.
Status run_pass(AnyModel& model, std::span<const TokenId> tokens, int32_t start, std::span<const BlockId> table,
                std::vector<float>& logits) {
  std::vector<int32_t> positions(tokens.size()), seqs(tokens.size(), 0);
  std::iota(positions.begin(), positions.end(), start);
  const BlockId* tables[] = {table.data()};
  const int32_t lens[] = {static_cast<int32_t>(table.size())};
  const int32_t last[] = {static_cast<int32_t>(tokens.size()) - 1};
  return model.forward({.token_ids = tokens,
                        .positions = positions,
                        .seq_indices = seqs,
                        .block_tables = tables,
                        .block_table_lens = lens,
                        .output_token_indices = last,
                        .output_kind = OutputKind::logits},
                       logits);
}

// The models of a run: --model paths, or the shape generated once into the cache; then the shape's
// GGUF files of --gguf types (generated once, from the shape's directory).
Result<std::vector<fs::path>> models_of(const ModelBenchOptions& o) {
  std::vector<fs::path> models(o.models.begin(), o.models.end());
  fs::path generated;
  if (models.empty() || !o.gguf_types.empty()) {
    LLAISYS_ASSIGN_OR_RETURN(generated, cached_bench_model(o.shape, o.cache_dir));
  }
  if (models.empty()) models.push_back(generated);
  for (const std::string& type : o.gguf_types) {
    const fs::path file = fs::path(o.cache_dir) / fmt::format("bench-{}-{}.gguf", o.shape, type);
    if (!fs::exists(file)) {
      fmt::print(stderr, "writing {} ...\n", file.string());
      LLAISYS_ASSIGN_OR_RETURN(convert::ConvertReport report, convert::convert_to_gguf(generated, file, type, o.shape));
      for (const std::string& line : report.fallbacks) fmt::print(stderr, "  fallback: {}\n", line);
    }
    models.push_back(file);
  }
  return models;
}

Result<ModelResult> bench_one(const ModelBenchOptions& o, const fs::path& model_dir) {
  const std::string load_before = load_average();
  // The reference: copy bandwidth with the same number of threads, measured first.
  const double copy_bandwidth = measure_copy_bandwidth(static_cast<std::size_t>(o.copy_mib) << 20, 5, o.threads);

  PluginRegistry registry;
  registry.load_directory(o.plugin_dir.empty() ? default_plugin_dir() : fs::path(o.plugin_dir));
  auto opened = registry.open_model({.model_dir = model_dir, .num_threads = o.threads, .options_json = o.options_json});
  if (!opened.ok()) return opened.status();
  AnyModel& model = opened.value();
  const ModelInfo& info = model.info();
  constexpr int32_t kBlockSize = 16;
  const int32_t context = std::max(o.prompt_tokens, o.decode_prompt_tokens + o.decode_tokens) + kBlockSize;
  const int32_t num_blocks = (context + kBlockSize - 1) / kBlockSize;
  LLAISYS_RETURN_IF_ERROR(model.init_kv_cache({.num_blocks = num_blocks, .block_size = kBlockSize}));
  std::vector<BlockId> table(static_cast<std::size_t>(num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> logits(static_cast<std::size_t>(info.vocab_size));
  std::vector<TokenId> prompt(static_cast<std::size_t>(o.prompt_tokens));
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    prompt[i] = static_cast<TokenId>((i * 7919 + 13) % static_cast<std::size_t>(std::min(info.vocab_size, 150000)));
  }
  auto check = [](const Status& s) {
    if (!s.ok()) throw std::runtime_error(s.message());
  };

  // Warm-up: one pass touches every weight page (page faults stay out of the timings).
  check(run_pass(model, std::span(prompt).first(static_cast<std::size_t>(o.decode_prompt_tokens)), 0, table, logits));

  // Decode: a short prompt, then one token per pass, each chosen greedily.
  check(run_pass(model, std::span(prompt).first(static_cast<std::size_t>(o.decode_prompt_tokens)), 0, table, logits));
  // Rounds: the copy reference measured right before each stretch of decoding, so that each round's
  // ratio compares the two at the same moment (this VM's bandwidth moves by 30% from one second to
  // the next); the efficiency is the median round's.
  constexpr int32_t kRounds = 8;
  const int32_t per_round = std::max(1, o.decode_tokens / kRounds);
  const std::size_t copy_bytes = static_cast<std::size_t>(o.copy_mib) << 20;
  std::vector<double> ratios, round_tps, round_copy;
  double decode_seconds = 0.0;
  int32_t decoded = 0;
  for (int32_t round = 0; round < kRounds; ++round) {
    round_copy.push_back(measure_copy_bandwidth(copy_bytes, 2, o.threads));
    const auto start = Clock::now();
    for (int32_t i = 0; i < per_round; ++i, ++decoded) {
      const TokenId next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      const TokenId tokens[] = {next};
      check(run_pass(model, tokens, o.decode_prompt_tokens + decoded, table, logits));
    }
    const double elapsed = seconds_since(start);
    decode_seconds += elapsed;
    round_tps.push_back(per_round / elapsed);
    ratios.push_back(static_cast<double>(info.weight_bytes) * round_tps.back() / round_copy.back());
  }
  const double mean_tps = decoded / decode_seconds;
  const double efficiency = median(ratios);
  const auto [min_ratio, max_ratio] = std::minmax_element(ratios.begin(), ratios.end());
  // Peak memory from here on: the copy buffers are gone, every weight page has been touched.
  const bool peak_reset = reset_peak_rss();

  // Prefill: the whole prompt in one pass, best of two.
  double prefill_seconds = 1e30;
  for (int run = 0; run < 2; ++run) {
    const auto start = Clock::now();
    check(run_pass(model, prompt, 0, table, logits));
    prefill_seconds = std::min(prefill_seconds, seconds_since(start));
  }
  const double prefill_tps = o.prompt_tokens / prefill_seconds;

  const uint64_t weights = weight_file_bytes(model_dir);
  const uint64_t peak = peak_rss_bytes();
  const double rss_ratio = static_cast<double>(peak) / static_cast<double>(weights);

  fmt::print("model:      {} ({}), {} threads, isa {}, options {}\n", model_dir.string(), info.architecture, o.threads,
             cpu::to_string(cpu::detect_isa()), o.options_json);
  fmt::print("cpu:        {} ({} cpus available; avx512_bf16 {}, amx {})\n", cpu_model_name(),
             std::thread::hardware_concurrency(), cpu::cpu_has_avx512_bf16() ? "yes" : "no",
             cpu::cpu_has_amx() ? "yes" : "no");
  fmt::print("copy:       {:.2f} GB/s before loading (memcpy of {} MiB, {} threads, read + written, best of 5); "
             "{:.2f} GB/s median of the rounds\n",
             copy_bandwidth / 1e9, o.copy_mib, o.threads, median(round_copy) / 1e9);
  fmt::print("decode:     {:.2f} tokens/s ({} tokens after a {}-token prompt, in {} rounds; rounds {:.2f}-{:.2f}), "
             "{:.1f} MB of weights per token\n",
             mean_tps, decoded, o.decode_prompt_tokens, kRounds, *std::min_element(round_tps.begin(), round_tps.end()),
             *std::max_element(round_tps.begin(), round_tps.end()), static_cast<double>(info.weight_bytes) / 1e6);
  fmt::print("efficiency: {:.3f} (median over the rounds of weight bytes per token x tokens/s / the copy bandwidth measured "
             "just before; rounds {:.3f}-{:.3f})\n",
             efficiency, *min_ratio, *max_ratio);
  fmt::print("prefill:    {:.1f} tokens/s ({}-token prompt in {:.3f} s)\n", prefill_tps, o.prompt_tokens,
             prefill_seconds);
  fmt::print("memory:     peak RSS {:.1f} MB = {:.3f} x the {:.1f} MB of weights{}\n", static_cast<double>(peak) / 1e6,
             rss_ratio, static_cast<double>(weights) / 1e6, peak_reset ? "" : " (peak includes the copy benchmark)");
  fmt::print("load:       {} before, {} after (load average 1/5/15 min; on a busy machine every figure\n"
             "            drops, the bandwidth ratio least)\n",
             load_before, load_average());
  fmt::print("targets:    efficiency >= 0.9 {}, prefill >= 200 tokens/s {}, peak RSS <= 1.3 x weights {}\n",
             efficiency >= 0.9 ? "MET" : "MISSED", prefill_tps >= 200 ? "MET" : "MISSED",
             rss_ratio <= 1.3 ? "MET" : "MISSED");
  return ModelResult{.name = model_dir.filename().string(),
                     .decode_tps = median(round_tps),
                     .efficiency = efficiency,
                     .copy_bandwidth = median(round_copy),
                     .prefill_tps = prefill_tps,
                     .weight_mb = static_cast<double>(info.weight_bytes) / 1e6,
                     .rss_ratio = rss_ratio};
}

int run_model_bench(const ModelBenchOptions& o) {
  auto models = models_of(o);
  if (!models.ok()) {
    fmt::print(stderr, "error: {}\n", models.status().message());
    return 1;
  }
  std::vector<ModelResult> results;
  for (const fs::path& model : *models) {
    if (!results.empty()) {
      fmt::print("\n");
      // What the previous model freed goes back to the system, so that this model's peak RSS is its own.
      malloc_trim(0);
    }
    auto result = bench_one(o, model);
    if (!result.ok()) {
      fmt::print(stderr, "error: {}: {}\n", model.string(), result.status().message());
      return 1;
    }
    results.push_back(std::move(result).value());
  }
  if (results.size() < 2) return 0;
  // Against the first model, measured in this run: raw tokens/s, and tokens/s per unit of the copy
  // bandwidth measured around each model's rounds (the VM's bandwidth drifts between models).
  const ModelResult& base = results.front();
  fmt::print("\ncompared with {} (same run):\n", base.name);
  fmt::print("  {:<36} {:>9} {:>8} {:>12} {:>8} {:>10} {:>9} {:>9}\n", "model", "MB/token", "decode", "decode/copy",
             "eff.", "prefill", "(ratio)", "RSS/file");
  for (const ModelResult& r : results) {
    fmt::print("  {:<36} {:>9.1f} {:>7.2f}x {:>11.2f}x {:>8.3f} {:>10.1f} {:>8.2f}x {:>9.3f}\n", r.name, r.weight_mb,
               r.decode_tps / base.decode_tps,
               (r.decode_tps / r.copy_bandwidth) / (base.decode_tps / base.copy_bandwidth), r.efficiency, r.prefill_tps,
               r.prefill_tps / base.prefill_tps, r.rss_ratio);
  }
  return 0;
}

}  // namespace

void add_model_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ModelBenchOptions>();
  CLI::App* cmd = app.add_subcommand("model", "decode / prefill tokens/s, decode efficiency and peak memory of a model");
  cmd->add_option("--shape", o->shape, "model shape to generate when --model is not given")->capture_default_str();
  cmd->add_option("--model", o->models, "existing model directories or GGUF files instead (several: compared with the first)");
  cmd->add_option("--gguf", o->gguf_types, "also the shape as GGUF files of these types, compared with it (e.g. q8_0,q4_k_m,q4_0)")
      ->delimiter(',')
      ->check(CLI::IsMember(convert::gguf_type_names()));
  cmd->add_option("--cache-dir", o->cache_dir, "where generated models are kept")->capture_default_str();
  cmd->add_option("--plugin-dir", o->plugin_dir, "directory of model plugins (default: next to the executable)");
  cmd->add_option("--options", o->options_json, "model options (JSON)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "compute threads (also used for the copy reference)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  // The decode's own prompt is the first 16 of these tokens.
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prefill prompt length (at least 16)")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  cmd->add_option("--decode-tokens", o->decode_tokens, "decoded tokens timed")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--copy-mib", o->copy_mib, "memcpy buffer size for the bandwidth reference")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->callback([o, &exit_code] {
    try {
      exit_code = run_model_bench(*o);
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = 1;
    }
  });
}

}  // namespace llaisys::bench

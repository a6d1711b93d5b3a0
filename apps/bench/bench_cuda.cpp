// `llaisys-bench cuda`: the CUDA path ({"device": "cuda"}, docs/CUDA.md) against the device-to-device
// copy bandwidth measured in the same run, naming the device.
//
//  copy:       cudaMemcpyAsync D2D bandwidth (bytes read + written per second, best of 10).
//  decode:     single-sequence decode tokens/s of --shape (16-token prompt, then --decode-tokens
//              greedy steps, logits downloaded and argmax'd on the host as the engine does) and
//              efficiency = weight bytes per token x tokens/s / copy bandwidth. Targets (issue 8):
//              >= 0.75 on qwen2-7b, >= 0.5 on qwen2-0.5b.
//  throughput: nano-vllm's workload through the engine: --sequences (256) requests with input and
//              output lengths uniform in [100, 1024] (seeded splitmix64, the same draws as
//              apps/bench/hf_throughput.py), EOS ignored, all submitted at once; generated tokens/s
//              (target >= 25,000 on qwen2-0.5b). The KV pool takes --kv-fraction of the free device
//              memory left after the weights.
// Without --model the shape is generated (once) with llaisys-mkmodel's library into --cache-dir.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "commands.hpp"
#include "cuda/cuda_status.hpp"
#include "cuda/device_memory.hpp"
#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/model/registry.hpp"

namespace llaisys::bench {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct CudaBenchOptions {
  std::string scenario = "all";  // copy, decode, throughput, all
  std::string shape = "qwen2-0.5b";
  std::string model_dir;
  std::string cache_dir = default_model_cache_dir();
  std::string plugin_dir;
  std::string options_json = R"({"device": "cuda"})";
  int32_t copy_mib = 1024;
  int32_t decode_tokens = 256;
  int32_t decode_prompt_tokens = 16;
  int32_t sequences = 256;
  int32_t min_len = 100;
  int32_t max_len = 1024;
  uint64_t seed = 0;
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 16384;
  double kv_fraction = 0.9;
};

// splitmix64: the same stream in apps/bench/hf_throughput.py.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

Status check(cudaError_t e, const char* what) { return cuda::cuda_status(e, what); }

Result<double> measure_d2d_bandwidth(std::size_t bytes) {
  LLAISYS_ASSIGN_OR_RETURN(auto src, cuda::DeviceBuffer<std::byte>::allocate(bytes));
  LLAISYS_ASSIGN_OR_RETURN(auto dst, cuda::DeviceBuffer<std::byte>::allocate(bytes));
  LLAISYS_ASSIGN_OR_RETURN(cuda::Stream stream, cuda::Stream::create());
  LLAISYS_ASSIGN_OR_RETURN(cuda::Event start, cuda::Event::create(true));
  LLAISYS_ASSIGN_OR_RETURN(cuda::Event stop, cuda::Event::create(true));
  LLAISYS_RETURN_IF_ERROR(check(cudaMemsetAsync(src.data(), 1, bytes, stream.get()), "cudaMemsetAsync"));
  LLAISYS_RETURN_IF_ERROR(check(cudaMemsetAsync(dst.data(), 2, bytes, stream.get()), "cudaMemsetAsync"));
  double best = 0;
  for (int r = 0; r < 10; ++r) {
    LLAISYS_RETURN_IF_ERROR(start.record(stream.get()));
    LLAISYS_RETURN_IF_ERROR(
        check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream.get()), "D2D copy"));
    LLAISYS_RETURN_IF_ERROR(stop.record(stream.get()));
    LLAISYS_RETURN_IF_ERROR(stop.synchronize());
    float ms = 0;
    LLAISYS_RETURN_IF_ERROR(check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime"));
    if (r > 0) best = std::max(best, 2.0 * static_cast<double>(bytes) / (static_cast<double>(ms) * 1e-3));  // run 0 warms up
  }
  return best;
}

Result<fs::path> model_dir_for(const CudaBenchOptions& o) {
  if (!o.model_dir.empty()) return fs::path(o.model_dir);
  return cached_bench_model(o.shape, o.cache_dir);
}

Status decode(const CudaBenchOptions& o, const fs::path& model_dir, double bandwidth) {
  PluginRegistry registry;
  registry.load_directory(o.plugin_dir.empty() ? default_plugin_dir() : fs::path(o.plugin_dir));
  LLAISYS_ASSIGN_OR_RETURN(AnyModel model, registry.open_model({.model_dir = model_dir, .options_json = o.options_json}));
  const ModelInfo& info = model.info();
  constexpr int32_t kBlockSize = 16;
  const int32_t num_blocks = (o.decode_prompt_tokens + o.decode_tokens + 2 * kBlockSize) / kBlockSize;
  LLAISYS_RETURN_IF_ERROR(model.init_kv_cache({.num_blocks = num_blocks, .block_size = kBlockSize}));
  std::vector<BlockId> table(static_cast<std::size_t>(num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> logits(static_cast<std::size_t>(info.vocab_size));
  auto pass = [&](std::span<const TokenId> tokens, int32_t start) {
    std::vector<int32_t> positions(tokens.size()), seqs(tokens.size(), 0);
    std::iota(positions.begin(), positions.end(), start);
    const BlockId* tables[] = {table.data()};
    const int32_t lens[] = {num_blocks};
    const int32_t last[] = {static_cast<int32_t>(tokens.size()) - 1};
    return model.forward({.token_ids = tokens, .positions = positions, .seq_indices = seqs, .block_tables = tables,
                          .block_table_lens = lens, .output_token_indices = last, .output_kind = OutputKind::logits},
                         logits);
  };
  std::vector<TokenId> prompt(static_cast<std::size_t>(o.decode_prompt_tokens));
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<TokenId>(100 + i * 7919 % 149000);
  LLAISYS_RETURN_IF_ERROR(pass(prompt, 0));  // warm-up: cuBLASLt heuristics, allocations
  for (int32_t i = 0; i < 8; ++i) {
    const TokenId t[] = {static_cast<TokenId>(100 + i)};
    LLAISYS_RETURN_IF_ERROR(pass(t, o.decode_prompt_tokens + i));
  }
  LLAISYS_RETURN_IF_ERROR(pass(prompt, 0));
  const auto start = Clock::now();
  for (int32_t i = 0; i < o.decode_tokens; ++i) {
    const TokenId t[] = {static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin())};
    LLAISYS_RETURN_IF_ERROR(pass(t, o.decode_prompt_tokens + i));
  }
  const double tps = o.decode_tokens / seconds_since(start);
  const double efficiency = static_cast<double>(info.weight_bytes) * tps / bandwidth;
  const double target = o.shape == "qwen2-7b" ? 0.75 : 0.5;
  fmt::print("decode:     {} ({}), {:.1f} tokens/s single sequence ({} tokens after a {}-token prompt), {:.1f} MB "
             "of weights per token\n",
             model_dir.string(), info.architecture, tps, o.decode_tokens, o.decode_prompt_tokens,
             static_cast<double>(info.weight_bytes) / 1e6);
  fmt::print("efficiency: {:.3f} (= {:.1f} GB/s of weights / {:.1f} GB/s D2D copy; target for {} >= {}: {})\n",
             efficiency, static_cast<double>(info.weight_bytes) * tps / 1e9, bandwidth / 1e9, o.shape, target,
             efficiency >= target ? "MET" : "MISSED");
  return Status();
}

Status throughput(const CudaBenchOptions& o, const fs::path& model_dir) {
  PluginRegistry registry;
  registry.load_directory(o.plugin_dir.empty() ? default_plugin_dir() : fs::path(o.plugin_dir));
  LLAISYS_ASSIGN_OR_RETURN(AnyModel model, registry.open_model({.model_dir = model_dir, .options_json = o.options_json}));
  // The KV pool: a fraction of what the weights left free (the plugin shares this process's context).
  std::size_t free_bytes = 0, total_bytes = 0;
  LLAISYS_RETURN_IF_ERROR(check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  constexpr int32_t kBlockSize = 16;
  const ModelInfo info = model.info();
  const auto blocks = static_cast<int32_t>(std::min<double>(
      static_cast<double>(free_bytes) * o.kv_fraction / (static_cast<double>(info.kv_bytes_per_token) * kBlockSize),
      2e9));
  LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<LLMEngine> engine,
                           LLMEngine::create(EngineModel(std::move(model)),
                                             {.block_size = kBlockSize,
                                              .num_kv_blocks = blocks,
                                              .max_num_seqs = o.max_num_seqs,
                                              .max_num_batched_tokens = o.max_num_batched_tokens,
                                              .max_context = 4096,
                                              .enable_prefix_cache = false,
                                              .seed = o.seed}));
  SplitMix64 rng{o.seed};
  const auto span = static_cast<uint64_t>(o.max_len - o.min_len + 1);
  std::vector<GenerateRequest> requests;
  int64_t prompt_tokens = 0;
  for (int32_t i = 0; i < o.sequences; ++i) {
    const auto in_len = static_cast<int32_t>(o.min_len + rng.next() % span);
    const auto out_len = static_cast<int32_t>(o.min_len + rng.next() % span);
    GenerateRequest r;
    for (int32_t t = 0; t < in_len; ++t) r.prompt_ids.push_back(static_cast<TokenId>(rng.next() % 10000));
    r.sampling.temperature = 0.6f;  // nano-vllm's bench.py
    r.stop.max_tokens = out_len;
    r.stop.ignore_eos = true;
    prompt_tokens += in_len;
    requests.push_back(std::move(r));
  }
  {  // warm-up: one short request
    GenerateRequest warm{.prompt_ids = {1, 2, 3}};
    warm.stop.max_tokens = 4;
    LLAISYS_ASSIGN_OR_RETURN(RequestId id, engine->submit(warm));
    (void)id;
    while (engine->has_unfinished()) (void)engine->step();
  }
  const auto start = Clock::now();
  for (const GenerateRequest& r : requests) LLAISYS_RETURN_IF_ERROR(engine->submit(r).status());
  int64_t generated = 0;
  while (engine->has_unfinished()) {
    for (const RequestOutput& out : engine->step()) {
      if (out.finished) generated += out.usage.completion_tokens;
    }
  }
  const double wall = seconds_since(start);
  const double tps = static_cast<double>(generated) / wall;
  fmt::print("throughput: {} sequences, input/output lengths uniform in [{}, {}] (seed {}): {} prompt + {} generated "
             "tokens in {:.2f} s\n",
             o.sequences, o.min_len, o.max_len, o.seed, prompt_tokens, generated, wall);
  fmt::print("            {:.0f} generated tokens/s ({} KV blocks of {}, max {} sequences, {} tokens per step; "
             "target >= 25,000: {})\n",
             tps, blocks, kBlockSize, o.max_num_seqs, o.max_num_batched_tokens, tps >= 25000 ? "MET" : "MISSED");
  return Status();
}

int run_cuda_bench(const CudaBenchOptions& o) {
  if (cuda::device_count() == 0) {
    fmt::print(stderr, "error: no CUDA device visible\n");
    return 1;
  }
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    fmt::print(stderr, "error: cannot query the CUDA device\n");
    return 1;
  }
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  fmt::print("device:     cuda:{} {} (sm_{}{}, {} SMs, {:.1f} GiB; driver {}, runtime {})\n", device, prop.name,
             prop.major, prop.minor, prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1 << 30),
             driver, runtime);
  auto bandwidth = measure_d2d_bandwidth(static_cast<std::size_t>(o.copy_mib) << 20);
  if (!bandwidth.ok()) {
    fmt::print(stderr, "error: {}\n", bandwidth.status().message());
    return 1;
  }
  fmt::print("copy:       {:.1f} GB/s device-to-device (cudaMemcpyAsync of {} MiB, read + written, best of 9)\n",
             *bandwidth / 1e9, o.copy_mib);
  if (o.scenario == "copy") return 0;
  auto dir = model_dir_for(o);
  if (!dir.ok()) {
    fmt::print(stderr, "error: {}\n", dir.status().message());
    return 1;
  }
  for (const char* scenario : {"decode", "throughput"}) {
    if (o.scenario != "all" && o.scenario != scenario) continue;
    const Status s = std::string_view(scenario) == "decode" ? decode(o, *dir, *bandwidth) : throughput(o, *dir);
    if (!s.ok()) {
      fmt::print(stderr, "error: {}: {}\n", scenario, s.message());
      return 1;
    }
  }
  return 0;
}

}  // namespace

void add_cuda_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CudaBenchOptions>();
  CLI::App* cmd = app.add_subcommand("cuda", "CUDA path: D2D copy bandwidth, decode efficiency, 256-sequence throughput");
  cmd->add_option("--scenario", o->scenario, "copy, decode, throughput or all")
      ->capture_default_str()->check(CLI::IsMember({"copy", "decode", "throughput", "all"}));
  cmd->add_option("--shape", o->shape, "model shape to generate when --model is not given")->capture_default_str();
  cmd->add_option("--model", o->model_dir, "an existing model directory or GGUF file instead");
  cmd->add_option("--cache-dir", o->cache_dir, "where generated models are kept")->capture_default_str();
  cmd->add_option("--plugin-dir", o->plugin_dir, "directory of model plugins (default: next to the executable)");
  cmd->add_option("--options", o->options_json, "model options (JSON)")->capture_default_str();
  cmd->add_option("--copy-mib", o->copy_mib, "D2D copy size for the bandwidth reference")->capture_default_str();
  cmd->add_option("--decode-tokens", o->decode_tokens, "decoded tokens timed")->capture_default_str();
  cmd->add_option("--sequences", o->sequences, "sequences of the throughput workload")->capture_default_str();
  cmd->add_option("--min-len", o->min_len, "shortest input / output length")->capture_default_str();
  cmd->add_option("--max-len", o->max_len, "longest input / output length")->capture_default_str();
  cmd->add_option("--seed", o->seed, "workload seed (lengths, prompts, sampling)")->capture_default_str();
  cmd->add_option("--max-num-seqs", o->max_num_seqs, "engine: sequences decoding at once")->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", o->max_num_batched_tokens, "engine: tokens per step")
      ->capture_default_str();
  cmd->add_option("--kv-fraction", o->kv_fraction, "share of the free device memory for the KV pool")
      ->capture_default_str();
  cmd->callback([o, &exit_code] {
    try {
      exit_code = run_cuda_bench(*o);
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = 1;
    }
  });
}

}  // namespace llaisys::bench

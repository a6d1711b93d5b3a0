// `llaisys-offline generate`: JSONL prompts (token ids) -> JSONL greedy completions.
//
// Input line:  {"id": any, "prompt_ids": [int, ...], "max_tokens": int (default 16)}
// Output line: {"id", "prompt_ids", "output_ids", "finish_reason": "stop"|"length", "usage"}
// One sequence at a time over a contiguous block table; the engine issue replaces this with
// continuous batching.

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "jsonl.hpp"
#include "llaisys/core/log.hpp"
#include "llaisys/sampling/sampler.hpp"

namespace llaisys::offline {
namespace json = boost::json;
namespace {

constexpr int32_t kBlockSize = 16;

struct GenerateOptions {
  std::filesystem::path model_dir;
  std::string input = "-";
  int32_t default_max_tokens = 16;
  int32_t max_context = 4096;
};

struct Job {
  json::value id;
  std::vector<TokenId> prompt;
  int32_t max_tokens = 0;
};

Result<Job> parse_job(const json::value& line, const GenerateOptions& options, const ModelInfo& info) {
  const json::object* object = line.if_object();
  if (object == nullptr) return Status(ErrorCode::invalid_argument, "each line must be a JSON object");
  Job job;
  if (const json::value* id = object->if_contains("id")) job.id = *id;
  const json::value* ids = object->if_contains("prompt_ids");
  if (ids == nullptr || !ids->is_array() || ids->as_array().empty()) {
    return Status(ErrorCode::invalid_argument, "'prompt_ids' must be a non-empty array of token ids");
  }
  for (const json::value& v : ids->as_array()) {
    if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() >= info.vocab_size) {
      return make_error(ErrorCode::invalid_argument, "'prompt_ids' holds {} which is not a token id in [0, {})",
                        json::serialize(v), info.vocab_size);
    }
    job.prompt.push_back(static_cast<TokenId>(v.as_int64()));
  }
  job.max_tokens = options.default_max_tokens;
  if (const json::value* max = object->if_contains("max_tokens")) {
    if (!max->is_int64() || max->as_int64() < 0) {
      return Status(ErrorCode::invalid_argument, "'max_tokens' must be a non-negative integer");
    }
    job.max_tokens = static_cast<int32_t>(std::min<int64_t>(max->as_int64(), options.max_context));
  }
  return job;
}

// Greedy generation for one job over blocks [0, n).
Result<json::object> run_job(AnyModel& model, const Job& job, int32_t context_limit) {
  const ModelInfo& info = model.info();
  if (static_cast<int32_t>(job.prompt.size()) >= context_limit) {
    return make_error(ErrorCode::resource_exhausted, "prompt of {} tokens does not fit the context of {}",
                      job.prompt.size(), context_limit);
  }
  std::vector<BlockId> blocks(static_cast<std::size_t>((context_limit + kBlockSize - 1) / kBlockSize));
  std::iota(blocks.begin(), blocks.end(), 0);
  const BlockId* tables[] = {blocks.data()};
  const int32_t table_lens[] = {static_cast<int32_t>(blocks.size())};

  std::vector<TokenId> tokens = job.prompt;
  std::vector<TokenId> output;
  std::vector<float> logits(static_cast<std::size_t>(info.vocab_size));
  std::string finish_reason = "length";
  GreedySampler sampler;
  Rng rng(0);
  SamplingParams params{.temperature = 0.0f};
  std::size_t fed = 0;  // tokens already in the KV cache
  while (static_cast<int32_t>(output.size()) < job.max_tokens) {
    if (static_cast<int32_t>(tokens.size()) >= context_limit) break;
    const std::size_t n = tokens.size() - fed;
    std::vector<int32_t> positions(n);
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(fed));
    std::vector<int32_t> seq_indices(n, 0);
    const int32_t last[] = {static_cast<int32_t>(n - 1)};
    ForwardBatch batch{.token_ids = std::span(tokens).subspan(fed),
                       .positions = positions,
                       .seq_indices = seq_indices,
                       .block_tables = tables,
                       .block_table_lens = table_lens,
                       .output_token_indices = last,
                       .output_kind = OutputKind::logits};
    LLAISYS_RETURN_IF_ERROR(model.forward(batch, logits));
    fed = tokens.size();
    const TokenId next = sampler.sample(logits, tokens, params, rng);
    output.push_back(next);
    tokens.push_back(next);
    if (std::find(info.eos_token_ids.begin(), info.eos_token_ids.end(), next) != info.eos_token_ids.end()) {
      finish_reason = "stop";
      break;
    }
  }
  json::object result;
  result["id"] = job.id;
  result["prompt_ids"] = json::value_from(job.prompt);
  result["output_ids"] = json::value_from(output);
  result["finish_reason"] = finish_reason;
  json::object usage;
  usage["prompt_tokens"] = job.prompt.size();
  usage["completion_tokens"] = output.size();
  usage["total_tokens"] = job.prompt.size() + output.size();
  result["usage"] = std::move(usage);
  return result;
}

int run_generate(const CommonOptions& common, const GenerateOptions& options) {
  PluginRegistry registry = load_plugins(common);
  auto device = parse_device(common.device);
  if (!device.ok()) {
    fmt::print(stderr, "error: {}\n", device.status().message());
    return 2;
  }
  auto model = registry.open_model({.model_dir = options.model_dir,
                                    .device = device.value(),
                                    .num_threads = common.num_threads,
                                    .options_json = "{}"});
  if (!model.ok()) {
    fmt::print(stderr, "error: {}\n", model.status().message());
    return 1;
  }
  const int32_t context_limit = std::min(model->info().max_context, options.max_context);
  const int32_t num_blocks = (context_limit + kBlockSize - 1) / kBlockSize;
  if (Status s = model->init_kv_cache({.num_blocks = num_blocks, .block_size = kBlockSize}); !s.ok()) {
    fmt::print(stderr, "error: {}\n", s.message());
    return 1;
  }
  auto reader = app::JsonlReader::open(options.input);
  if (!reader.ok()) {
    fmt::print(stderr, "error: {}\n", reader.status().message());
    return 1;
  }
  std::size_t num_ok = 0, num_failed = 0, num_generated = 0;
  const auto start = std::chrono::steady_clock::now();
  while (auto line = reader->next()) {
    Result<json::object> result = [&]() -> Result<json::object> {
      if (!line->value.ok()) return line->value.status();
      LLAISYS_ASSIGN_OR_RETURN(Job job, parse_job(line->value.value(), options, model->info()));
      return run_job(model.value(), job, context_limit);
    }();
    if (result.ok()) {
      ++num_ok;
      num_generated += result->at("output_ids").as_array().size();
      app::write_json_line(stdout, result.value());
    } else {
      ++num_failed;
      app::write_json_line(stdout, app::error_object(result.status(), line->line_number));
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "{} requests ({} failed), {} generated tokens in {:.3f} s ({:.1f} tokens/s)\n",
             num_ok + num_failed, num_failed, num_generated, seconds,
             seconds > 0 ? static_cast<double>(num_generated) / seconds : 0.0);
  return num_failed == 0 ? 0 : 1;
}

}  // namespace

void add_generate_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "greedy generation for JSONL prompts");
  cmd->add_option("--model", options->model_dir, "Hugging Face model directory")->required();
  cmd->add_option("input", options->input, "JSONL input file (default: standard input)");
  cmd->add_option("--max-tokens", options->default_max_tokens, "default max_tokens per request")
      ->capture_default_str();
  cmd->add_option("--max-context", options->max_context, "context limit (tokens)")->capture_default_str();
  cmd->callback([&common, &exit_code, options] { exit_code = run_generate(common, *options); });
}

}  // namespace llaisys::offline

// `llaisys-offline generate`: a file of prompts -> the engine (continuous batching) -> JSONL results.
//
// Input (a file argument or standard input):
//  - JSON Lines (default, or a file not ending in .txt): one object per line with one prompt source,
//      "prompt_ids": [int, ...]   token ids
//      "prompt": "text"           encoded with the model's tokenizer
//      "messages": [{"role", "content"}, ...]   rendered with the model's chat template (with the
//                                               line's "chat_template_kwargs" object as variables)
//    and optional fields: "id" (echoed), "max_tokens" (default --max-tokens), "min_tokens", "n",
//    "temperature" (default --temperature), "top_p", "top_k", "min_p", "seed", "presence_penalty",
//    "frequency_penalty", "repetition_penalty", "stop" (string or list), "stop_token_ids",
//    "ignore_eos", "logprobs" (number of top alternatives per token, 0..20), "top_logits" (debugging:
//    the K largest raw logits of every generated step, default --top-logits); structured output as
//    the server takes it: "response_format", "guided_json", "guided_regex", "guided_choice",
//    "guided_grammar" (GBNF), "structured_outputs" (apps/common/structured_output.hpp).
//  - .txt (or --format txt): one prompt text per line (blank lines skipped), id = line number; with
//    --chat each line is one user message, rendered with the chat template.
// Chat prompts of a reasoning model (--reasoning-format, reasoning.hpp) get their answer's think
// block apart: "reasoning" beside "text" in the output.
// Output: see batch_runner.hpp. Progress and the summary go to standard error.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <limits>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "batch_runner.hpp"
#include "commands.hpp"
#include "jsonl.hpp"
#include "llaisys/core/log.hpp"
#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "progress.hpp"
#include "reasoning.hpp"
#include "request_fields.hpp"
#include "served_model.hpp"
#include "structured_output.hpp"

namespace llaisys::offline {
namespace json = boost::json;
namespace {

struct GenerateOptions {
  std::filesystem::path model_dir;
  std::string input = "-";
  std::string format = "auto";  // auto, jsonl, txt
  int32_t default_max_tokens = 16;
  float default_temperature = 0.0f;
  app::EngineOptions engine;
  std::string progress = "auto";  // auto, bar, lines, off
  bool chat = false;               // .txt lines are user messages
  int32_t top_logits = 0;          // debugging: print the K largest raw logits of each step
  std::string reasoning_format = "auto";
};

// Everything a line may need besides its own fields.
struct ParseContext {
  const GenerateOptions& options;
  const ModelInfo& info;
  const std::shared_ptr<const text::Tokenizer>& tokenizer;
  const std::optional<text::ChatTemplate>& chat_template;
  const Status& chat_template_status;  // why there is none
  grammar::GrammarCompiler* grammars;  // null without a tokenizer
  app::ReasoningFormat reasoning_format;
};

// Field readers shared with llaisys-server (apps/common/request_fields.hpp).
using app::bad_field;
using app::int_field;
using app::number_field;
using app::token_ids_field;

Result<std::vector<TokenId>> encode(const ParseContext& context, std::string_view text) {
  if (!context.tokenizer) {
    return Status(ErrorCode::invalid_argument, "text prompts need a model with a tokenizer (tokenizer.json, or a GGUF file's tokenizer.ggml.*)");
  }
  return context.tokenizer->encode(text, /*add_special_tokens=*/true);
}

// Chat messages through the model's chat template, then the tokenizer (the template writes the
// special tokens itself, so none are added). Sets `reasoning` for a reasoning model.
Result<std::vector<TokenId>> render_chat(const ParseContext& context, const json::value& messages,
                                         const json::value* template_kwargs,
                                         std::optional<app::ReasoningOptions>& reasoning) {
  if (!messages.is_array() || messages.as_array().empty()) return bad_field("messages", "a non-empty array");
  if (!context.chat_template) return context.chat_template_status;
  text::ChatRenderOptions options{.add_generation_prompt = true};
  if (template_kwargs != nullptr && !template_kwargs->is_null()) {
    if (!template_kwargs->is_object()) return bad_field("chat_template_kwargs", "an object of template variables");
    options.extra_context = template_kwargs->as_object();
  }
  LLAISYS_ASSIGN_OR_RETURN(std::string text, context.chat_template->render(messages, options));
  if (context.reasoning_format == app::ReasoningFormat::deepseek) {
    reasoning = app::reasoning_options(text, *context.tokenizer);
  }
  return context.tokenizer->encode(text, /*add_special_tokens=*/false);
}

Result<std::vector<TokenId>> parse_prompt(const json::object& object, const ParseContext& context,
                                          std::optional<app::ReasoningOptions>& reasoning) {
  const json::value* ids = object.if_contains("prompt_ids");
  const json::value* prompt = object.if_contains("prompt");
  const json::value* messages = object.if_contains("messages");
  if ((ids != nullptr) + (prompt != nullptr) + (messages != nullptr) != 1) {
    return Status(ErrorCode::invalid_argument, "give exactly one of 'prompt_ids', 'prompt' or 'messages'");
  }
  if (ids != nullptr) return token_ids_field(*ids, "prompt_ids", context.info.vocab_size);
  if (prompt != nullptr) {
    if (!prompt->is_string()) return bad_field("prompt", "a string");
    return encode(context, prompt->as_string());
  }
  return render_chat(context, *messages, object.if_contains("chat_template_kwargs"), reasoning);
}

Status parse_sampling(const json::object& object, SamplingParams& sampling) {
  auto set_float = [&](std::string_view key, float& out) -> Status {
    LLAISYS_ASSIGN_OR_RETURN(std::optional<double> value, number_field(object, key));
    if (value) out = static_cast<float>(*value);
    return Status();
  };
  LLAISYS_RETURN_IF_ERROR(set_float("temperature", sampling.temperature));
  LLAISYS_RETURN_IF_ERROR(set_float("top_p", sampling.top_p));
  LLAISYS_RETURN_IF_ERROR(set_float("min_p", sampling.min_p));
  LLAISYS_RETURN_IF_ERROR(set_float("presence_penalty", sampling.presence_penalty));
  LLAISYS_RETURN_IF_ERROR(set_float("frequency_penalty", sampling.frequency_penalty));
  LLAISYS_RETURN_IF_ERROR(set_float("repetition_penalty", sampling.repetition_penalty));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> top_k, int_field(object, "top_k"));
  if (top_k) sampling.top_k = static_cast<int32_t>(std::clamp<int64_t>(*top_k, -1, INT32_MAX));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> seed, int_field(object, "seed"));
  if (seed) sampling.seed = static_cast<uint64_t>(*seed);
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> logprobs, int_field(object, "logprobs"));
  if (logprobs) sampling.num_logprobs = static_cast<int32_t>(std::clamp<int64_t>(*logprobs, -1, 1000));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> top_logits, int_field(object, "top_logits"));
  if (top_logits) sampling.num_top_logits = static_cast<int32_t>(std::clamp<int64_t>(*top_logits, -1, 1001));
  return Status();
}

// An integer field within [lo, hi], refused with the value the line gave (the engine would check a
// narrowed copy, and its message would show that instead).
Status check_range(std::string_view key, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return Status();
  return make_error(ErrorCode::invalid_argument, "{} must be in [{}, {}], got {}", key, lo, hi, value);
}

Status parse_stop(const json::object& object, const ParseContext& context, StopConditions& stop) {
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> max_tokens, int_field(object, "max_tokens"));
  if (max_tokens) LLAISYS_RETURN_IF_ERROR(check_range("max_tokens", *max_tokens, 0, kInt32Max));
  stop.max_tokens = static_cast<int32_t>(std::clamp<int64_t>(max_tokens.value_or(context.options.default_max_tokens),
                                                            -1, kInt32Max));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> min_tokens, int_field(object, "min_tokens"));
  if (min_tokens) {
    LLAISYS_RETURN_IF_ERROR(check_range("min_tokens", *min_tokens, 0, kInt32Max));
    stop.min_tokens = static_cast<int32_t>(*min_tokens);
  }
  LLAISYS_ASSIGN_OR_RETURN(stop.stop, app::stop_strings_field(object, "stop"));
  if (const json::value* v = object.if_contains("stop_token_ids"); v != nullptr && !v->is_null()) {
    LLAISYS_ASSIGN_OR_RETURN(stop.stop_token_ids, token_ids_field(*v, "stop_token_ids", context.info.vocab_size));
  }
  if (const json::value* v = object.if_contains("ignore_eos"); v != nullptr && !v->is_null()) {
    if (!v->is_bool()) return bad_field("ignore_eos", "true or false");
    stop.ignore_eos = v->as_bool();
  }
  return Status();
}

Result<GenerateRequest> parse_job(const json::value& line, const ParseContext& context,
                                  std::optional<app::ReasoningOptions>& reasoning) {
  const json::object* object = line.if_object();
  if (object == nullptr) return Status(ErrorCode::invalid_argument, "each line must be a JSON object");
  GenerateRequest request;
  request.sampling.temperature = context.options.default_temperature;
  request.sampling.num_top_logits = context.options.top_logits;
  LLAISYS_ASSIGN_OR_RETURN(request.prompt_ids, parse_prompt(*object, context, reasoning));
  LLAISYS_RETURN_IF_ERROR(parse_sampling(*object, request.sampling));
  LLAISYS_RETURN_IF_ERROR(parse_stop(*object, context, request.stop));
  LLAISYS_ASSIGN_OR_RETURN(std::optional<int64_t> n, int_field(*object, "n"));
  if (n) {
    LLAISYS_RETURN_IF_ERROR(check_range("n", *n, 1, kMaxChoices));
    request.n = static_cast<int32_t>(*n);
  }
  LLAISYS_ASSIGN_OR_RETURN(std::optional<grammar::GrammarSpec> spec, app::structured_output_spec(*object));
  if (spec) {
    if (context.grammars == nullptr) {
      return Status(ErrorCode::invalid_argument, "structured output needs a model with a tokenizer");
    }
    LLAISYS_ASSIGN_OR_RETURN(request.grammar, context.grammars->compile(*spec));
  }
  return request;
}

Result<std::vector<BatchJob>> read_jsonl(const ParseContext& context) {
  LLAISYS_ASSIGN_OR_RETURN(app::JsonlReader reader, app::JsonlReader::open(context.options.input));
  std::vector<BatchJob> jobs;
  while (auto line = reader.next()) {
    BatchJob job{.line_number = line->line_number};
    if (!line->value.ok()) {
      job.request = line->value.status();
    } else {
      if (const json::object* object = line->value->if_object()) {
        if (const json::value* id = object->if_contains("id")) job.id = *id;
      }
      job.request = parse_job(line->value.value(), context, job.reasoning);
      if (!job.request.ok()) job.request = Status(job.request.status()).with_context(fmt::format("line {}", job.line_number));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<BatchJob>> read_txt(const ParseContext& context) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (context.options.input != "-" && !context.options.input.empty()) {
    file.open(context.options.input, std::ios::binary);
    if (!file) return make_error(ErrorCode::not_found, "cannot open input file '{}'", context.options.input);
    in = &file;
  }
  std::vector<BatchJob> jobs;
  std::string text;
  for (std::size_t number = 1; std::getline(*in, text); ++number) {
    if (number == 1) app::strip_utf8_bom(text);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    BatchJob job{.id = number, .line_number = number};
    GenerateRequest request;
    request.sampling.temperature = context.options.default_temperature;
  request.sampling.num_top_logits = context.options.top_logits;
    request.stop.max_tokens = context.options.default_max_tokens;
    Result<std::vector<TokenId>> ids =
        context.options.chat
            ? render_chat(context, json::array{json::object{{"role", "user"}, {"content", text}}}, nullptr,
                          job.reasoning)
            : encode(context, text);
    if (ids.ok()) {
      request.prompt_ids = std::move(ids).value();
      job.request = std::move(request);
    } else {
      job.request = Status(ids.status()).with_context(fmt::format("line {}", number));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

int fail(const Status& status) {
  fmt::print(stderr, "error: {}\n", status.message());
  return 1;
}

int run_generate(const CommonOptions& common, const GenerateOptions& options) {
  PluginRegistry registry = load_plugins(common);
  auto device = parse_device(common.device);
  if (!device.ok()) return fail(device.status());
  auto served = app::load_served_model(registry, {.model_dir = options.model_dir,
                                                  .device = device.value(),
                                                  .num_threads = common.num_threads,
                                                  .plugin_options_json = common.model_options,
                                                  .engine = options.engine});
  if (!served.ok()) return fail(served.status());
  const ModelInfo& info = served->info;
  const std::shared_ptr<const text::Tokenizer>& tokenizer = served->tokenizer;
  const std::optional<text::ChatTemplate>& chat_template = served->chat_template;
  const Status& chat_template_status = served->chat_template_status;
  auto& engine = served->engine;
  auto reasoning_format = app::resolve_reasoning_format(options.reasoning_format, "--reasoning-format",
                                                       chat_template ? &*chat_template : nullptr, tokenizer.get());
  if (!reasoning_format.ok()) return fail(reasoning_format.status());

  const ParseContext context{.options = options,
                             .info = info,
                             .tokenizer = tokenizer,
                             .chat_template = chat_template,
                             .chat_template_status = chat_template_status,
                             .grammars = served->grammars.get(),
                             .reasoning_format = *reasoning_format};
  const bool txt = options.format == "txt" ||
                   (options.format == "auto" && std::filesystem::path(options.input).extension() == ".txt");
  Result<std::vector<BatchJob>> jobs = txt ? read_txt(context) : read_jsonl(context);
  if (!jobs.ok()) return fail(jobs.status());

  ProgressStyle style = ProgressStyle::off;
  if (options.progress == "bar" || (options.progress == "auto" && isatty(fileno(stderr)) != 0)) {
    style = ProgressStyle::bar;
  } else if (options.progress != "off") {
    style = ProgressStyle::lines;
  }
  ProgressReporter progress(stderr, static_cast<int64_t>(jobs->size()), style);
  const auto start = std::chrono::steady_clock::now();
  const BatchTotals totals = run_batch(*engine, *jobs, stdout, progress);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "{}", format_summary(totals, engine->stats(), seconds));
  fmt::print(stderr, "  model: {} ({}), chat template: {}, reasoning: {}\n", options.model_dir.string(),
             info.architecture, served->chat_template_source, app::to_string(*reasoning_format));
  return totals.num_failed == 0 ? 0 : 1;
}

}  // namespace

void add_generate_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "generate for a file of prompts (JSONL or .txt), continuously batched");
  cmd->add_option("--model", options->model_dir, "Hugging Face model directory or GGUF file")->required();
  cmd->add_option("input", options->input, "input file: .jsonl, or .txt with one prompt per line (default: standard input, JSONL)");
  cmd->add_option("--format", options->format, "auto, jsonl or txt")->capture_default_str()->check(CLI::IsMember({"auto", "jsonl", "txt"}));
  cmd->add_option("--max-tokens", options->default_max_tokens, "default max_tokens per request")->capture_default_str();
  cmd->add_option("--temperature", options->default_temperature, "default temperature (0: greedy)")->capture_default_str();
  app::add_engine_options(*cmd, options->engine);
  app::add_speculative_options(*cmd, options->engine);
  cmd->add_option("--top-logits", options->top_logits,
                  "debugging: add the K largest raw logits of every generated step to each result ('top_logits')")
      ->check(CLI::Range(0, 1000));
  cmd->add_flag("--chat", options->chat, ".txt lines are user messages, rendered with the chat template");
  cmd->add_option("--reasoning-format", options->reasoning_format,
                  "chat prompts: auto (a model whose template or vocabulary has <think> reasons), deepseek (the "
                  "answer's leading think block goes to 'reasoning'), or none")
      ->capture_default_str();
  cmd->add_option("--progress", options->progress, "auto (bar on a terminal), bar, lines or off")
      ->capture_default_str()->check(CLI::IsMember({"auto", "bar", "lines", "off"}));
  cmd->callback([&common, &exit_code, options] { exit_code = run_generate(common, *options); });
}

}  // namespace llaisys::offline

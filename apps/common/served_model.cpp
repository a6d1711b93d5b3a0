#include "served_model.hpp"

#include "model_text.hpp"
#include "value_range.hpp"

#include <algorithm>

#include "llaisys/core/log.hpp"

namespace llaisys::app {

const char* const kFallbackChatTemplate =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n";

Result<text::ChatTemplate> fallback_chat_template(const text::Tokenizer& tokenizer) {
  // Like llama.cpp, start with BOS when the tokenizer adds one to plain text (base Llama models
  // expect it; a rendered chat is encoded without adding special tokens).
  const auto empty = tokenizer.encode("", /*add_special_tokens=*/true);
  const std::optional<TokenId> bos = tokenizer.bos_token_id();
  if (empty.ok() && bos && !empty->empty() && empty->front() == *bos) {
    return text::ChatTemplate::from_string(std::string("{{- bos_token -}}\n") + kFallbackChatTemplate,
                                           tokenizer.token_text(*bos).value_or(""));
  }
  return text::ChatTemplate::from_string(kFallbackChatTemplate);
}

namespace {

constexpr ValueRange kMaxContext{0, 1 << 24}, kMaxNumSeqs{1, 4096}, kBatchedTokens{1, 1 << 20}, kKvCacheMb{1, 1 << 24},
    kBlockSize{1, 1024};

}  // namespace

void add_engine_options(CLI::App& cmd, EngineOptions& options) {
  cmd.add_option("--max-context", options.max_context, "context limit in tokens (0: the model's)")
      ->capture_default_str()->check(CLI::Range(kMaxContext.lo, kMaxContext.hi));
  cmd.add_option("--max-num-seqs", options.max_num_seqs, "sequences decoding at once")
      ->capture_default_str()->check(CLI::Range(kMaxNumSeqs.lo, kMaxNumSeqs.hi));
  cmd.add_option("--max-batched-tokens", options.max_batched_tokens, "tokens per forward pass")
      ->capture_default_str()->check(CLI::Range(kBatchedTokens.lo, kBatchedTokens.hi));
  cmd.add_option("--kv-cache-mb", options.kv_cache_mb, "KV cache budget in MiB")
      ->capture_default_str()->check(CLI::Range(kKvCacheMb.lo, kKvCacheMb.hi));
  cmd.add_option("--block-size", options.block_size, "tokens per KV block")
      ->capture_default_str()->check(CLI::Range(kBlockSize.lo, kBlockSize.hi));
  cmd.add_flag("--no-prefix-cache", options.no_prefix_cache, "do not reuse KV across requests");
  cmd.add_option("--seed", options.seed, "seed for requests without their own seed");
}

namespace {

constexpr std::string_view kDraftPrefix = "draft:";

Status check_speculative(const std::string& value) {
  if (value.starts_with(kDraftPrefix)) {
    if (value.size() == kDraftPrefix.size()) {
      return Status(ErrorCode::invalid_argument, "speculative: 'draft:' needs the draft model's directory, e.g. draft:models/small");
    }
    return Status();
  }
  if (!parse_speculative_method(value).ok()) {
    return make_error(ErrorCode::invalid_argument, "unknown speculative method '{}' (none, ngram, or draft:MODEL_DIR)",
                      value);
  }
  return Status();
}

// Token ids name the same text in both models: the draft's drafts mean what the target reads.
Status check_same_vocabulary(const text::Tokenizer& target, const text::Tokenizer& draft) {
  const int32_t common = std::min(target.vocab_size(), draft.vocab_size());
  for (TokenId id = 0; id < common; ++id) {
    const std::optional<std::string> a = target.token_text(id);
    const std::optional<std::string> b = draft.token_text(id);
    if (a != b) {
      return make_error(ErrorCode::invalid_argument,
                        "the draft model's tokenizer differs from the target's: token {} is '{}' there, '{}' here", id,
                        b.value_or("(none)"), a.value_or("(none)"));
    }
  }
  return Status();
}

}  // namespace

void add_speculative_options(CLI::App& cmd, EngineOptions& options) {
  cmd.add_option("--speculative", options.speculative,
                 "speculative decoding: none, ngram (prompt lookup), or draft:MODEL_DIR (a smaller model with the same "
                 "tokenizer)")
      ->capture_default_str()
      ->check([](const std::string& value) {
        const Status status = check_speculative(value);
        return status.ok() ? std::string() : status.message();
      });
  cmd.add_option("--num-speculative-tokens", options.num_speculative_tokens, "draft tokens verified per decode step")
      ->capture_default_str()->check(CLI::Range(1, kMaxSpeculativeTokens));
}

std::filesystem::path draft_model_dir(const EngineOptions& options) {
  if (!options.speculative.starts_with(kDraftPrefix)) return {};
  return options.speculative.substr(kDraftPrefix.size());
}

Status validate_engine_options(const EngineOptions& o) {
  LLAISYS_RETURN_IF_ERROR(check_speculative(o.speculative));
  LLAISYS_RETURN_IF_ERROR(check_range("num_speculative_tokens", o.num_speculative_tokens, ValueRange{1, kMaxSpeculativeTokens}));
  LLAISYS_RETURN_IF_ERROR(check_range("max_context", o.max_context, kMaxContext));
  LLAISYS_RETURN_IF_ERROR(check_range("max_num_seqs", o.max_num_seqs, kMaxNumSeqs));
  LLAISYS_RETURN_IF_ERROR(check_range("max_batched_tokens", o.max_batched_tokens, kBatchedTokens));
  LLAISYS_RETURN_IF_ERROR(check_range("kv_cache_mb", o.kv_cache_mb, kKvCacheMb));
  return check_range("block_size", o.block_size, kBlockSize);
}

EngineConfig to_engine_config(const EngineOptions& options, std::string cache_namespace) {
  return {.block_size = options.block_size,
          .kv_cache_bytes = static_cast<uint64_t>(std::max<int64_t>(options.kv_cache_mb, 0)) << 20,
          .max_num_seqs = options.max_num_seqs,
          .max_num_batched_tokens = options.max_batched_tokens,
          .max_context = options.max_context,
          .enable_prefix_cache = !options.no_prefix_cache,
          .cache_namespace = std::move(cache_namespace),
          .seed = options.seed,
          .speculative = parse_speculative_method(options.speculative).value_or(SpeculativeMethod::none),
          .num_speculative_tokens = options.num_speculative_tokens};
}

Result<std::shared_ptr<DraftModelProposer>> load_draft_model(const PluginRegistry& registry,
                                                             const ModelLoadOptions& options, const ServedModel& target) {
  const std::filesystem::path dir = draft_model_dir(options.engine);
  // Same device and threads as the target; the draft's plugin options are its own defaults.
  auto model = registry.open_model({.model_dir = dir, .device = options.device, .num_threads = options.num_threads});
  if (!model.ok()) return model.status();
  if (target.tokenizer) {
    if (!has_tokenizer(dir)) return Status(ErrorCode::invalid_argument, "it has no tokenizer to compare with the target's");
    auto tokenizer = load_tokenizer(dir);
    if (!tokenizer.ok()) return Status(tokenizer.status()).with_context("its tokenizer");
    LLAISYS_RETURN_IF_ERROR(check_same_vocabulary(*target.tokenizer, **tokenizer));
  } else if (model->info().vocab_size != target.info.vocab_size) {
    return make_error(ErrorCode::invalid_argument, "its vocabulary has {} tokens, the target's {}",
                      model->info().vocab_size, target.info.vocab_size);
  }
  const EngineOptions& e = options.engine;
  const int32_t context = e.max_context > 0 ? e.max_context : model->info().max_context;
  // As many blocks as every running sequence can fill (their drafts included), within the KV budget.
  const int64_t blocks = int64_t{e.max_num_seqs} * ((int64_t{context} + e.num_speculative_tokens + e.block_size - 1) / e.block_size);
  auto proposer = DraftModelProposer::create(
      EngineModel(std::move(model).value()),
      {.block_size = e.block_size,
       .kv_cache_bytes = static_cast<uint64_t>(std::max<int64_t>(e.kv_cache_mb, 0)) << 20,
       .target_vocab_size = target.info.vocab_size,
       .max_num_blocks = static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX))});
  if (!proposer.ok()) return proposer.status();
  log::info("speculative decoding: draft model {} ({}), {} KV blocks", dir.string(), proposer.value()->info().architecture,
            proposer.value()->num_blocks());
  return proposer;
}

Result<ServedModel> load_served_model(const PluginRegistry& registry, const ModelLoadOptions& options) {
  auto model = registry.open_model({.model_dir = options.model_dir,
                                    .device = options.device,
                                    .num_threads = options.num_threads,
                                    .options_json = options.plugin_options_json});
  if (!model.ok()) return model.status();

  ServedModel served{.model_dir = options.model_dir,
                     .info = model->info(),
                     .chat_template_status = Status(ErrorCode::invalid_argument,
                                                    "chat messages need a model with a tokenizer")};
  if (has_tokenizer(options.model_dir)) {
    auto tokenizer = load_tokenizer(options.model_dir);
    if (!tokenizer.ok()) return Status(tokenizer.status()).with_context("the model's tokenizer");
    served.tokenizer = std::move(tokenizer).value();
  }
  if (served.tokenizer) {
    auto chat_template = options.chat_template_file.empty()
                             ? load_chat_template(options.model_dir)
                             : load_chat_template_file(options.model_dir, options.chat_template_file);
    if (chat_template.ok()) {
      served.chat_template = std::move(chat_template).value();
      served.chat_template_source = options.chat_template_file.empty() ? "model" : "file";
    } else if (!options.chat_template_file.empty()) {
      return Status(chat_template.status()).with_context("--chat-template");
    } else if (chat_template.status().code() == ErrorCode::not_found) {
      // No template at all: fall back to ChatML rather than refusing chat requests.
      log::info("{}: {}; chat requests use the fallback ChatML template", options.model_dir.string(),
                chat_template.status().message());
      auto fallback = fallback_chat_template(*served.tokenizer);
      if (!fallback.ok()) return Status(fallback.status()).with_context("the fallback chat template");
      served.chat_template = std::move(fallback).value();
      served.chat_template_source = "fallback: chatml";
    } else {
      served.chat_template_status = Status(chat_template.status()).with_context("the model's chat template");
    }
  }
  EngineConfig config = to_engine_config(options.engine, options.cache_namespace);
  if (const std::filesystem::path draft_dir = draft_model_dir(options.engine); !draft_dir.empty()) {
    auto draft = load_draft_model(registry, options, served);
    if (!draft.ok()) return Status(draft.status()).with_context(fmt::format("the draft model {}", draft_dir.string()));
    served.draft = std::move(draft).value();
    config.proposer = served.draft;
  }
  auto engine = LLMEngine::create(EngineModel(std::move(model).value()), config, served.tokenizer);
  if (!engine.ok()) return engine.status();
  served.engine = std::move(engine).value();
  if (served.tokenizer) {
    served.grammars = std::make_shared<grammar::GrammarCompiler>(
        [tokenizer = served.tokenizer, vocab_size = served.info.vocab_size, eos = served.info.eos_token_ids] {
          return grammar::TokenVocabulary::from_tokenizer(*tokenizer, vocab_size, eos);
        });
  }
  return served;
}

}  // namespace llaisys::app

#include "llaisys/grammar/grammar_compiler.hpp"

#include <chrono>

#include <fmt/format.h>

#include "llaisys/grammar/gbnf.hpp"
#include "llaisys/grammar/regex.hpp"

namespace llaisys::grammar {
namespace {

std::string cache_key(const GrammarSpec& spec) {
  std::string key = fmt::format("{}|{}|{}|", static_cast<int>(spec.kind), spec.any_whitespace ? 1 : 0, spec.strict ? 1 : 0);
  switch (spec.kind) {
    case GrammarSpec::Kind::json_schema: key += boost::json::serialize(spec.schema); break;
    case GrammarSpec::Kind::json_object: break;
    case GrammarSpec::Kind::regex:
    case GrammarSpec::Kind::gbnf: key += spec.text; break;
    case GrammarSpec::Kind::choice:
      for (const std::string& c : spec.choices) {
        key += std::to_string(c.size());
        key += ':';
        key += c;
      }
      break;
  }
  return key;
}

}  // namespace

Result<std::shared_ptr<const Grammar>> build_grammar(const GrammarSpec& spec) {
  const JsonSchemaOptions json_options{.any_whitespace = spec.any_whitespace, .strict = spec.strict};
  switch (spec.kind) {
    case GrammarSpec::Kind::json_schema: return json_schema_grammar(spec.schema, json_options);
    case GrammarSpec::Kind::json_object: return json_object_grammar(json_options);
    case GrammarSpec::Kind::regex: {
      LLAISYS_ASSIGN_OR_RETURN(ExprPtr expr, compile_regex(spec.text));
      GrammarBuilder b;
      return b.build(b.add_rule("regex", std::move(expr)));
    }
    case GrammarSpec::Kind::choice: {
      if (spec.choices.empty()) return Status(ErrorCode::invalid_argument, "the list of choices is empty");
      if (spec.choices.size() > kMaxChoices) {
        return make_error(ErrorCode::invalid_argument, "at most {} choices are allowed, got {}", kMaxChoices,
                          spec.choices.size());
      }
      std::vector<ExprPtr> alternatives;
      for (const std::string& c : spec.choices) {
        if (c.empty()) return Status(ErrorCode::invalid_argument, "a choice is empty");
        if (c.size() > kMaxChoiceBytes) {
          return make_error(ErrorCode::invalid_argument, "a choice is longer than {} bytes", kMaxChoiceBytes);
        }
        alternatives.push_back(literal(c));
      }
      GrammarBuilder b;
      return b.build(b.add_rule("choice", alt(std::move(alternatives))));
    }
    case GrammarSpec::Kind::gbnf: return gbnf_grammar(spec.text);
  }
  return Status(ErrorCode::invalid_argument, "unknown grammar kind");
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, std::size_t max_cached)
    : max_cached_(std::max<std::size_t>(max_cached, 1)) {
  std::call_once(vocab_once_, [&] { vocab_ = std::move(vocab); });
}

GrammarCompiler::GrammarCompiler(VocabularyFactory make_vocab, std::size_t max_cached)
    : make_vocab_(std::move(make_vocab)), max_cached_(std::max<std::size_t>(max_cached, 1)) {}

const std::shared_ptr<const TokenVocabulary>& GrammarCompiler::vocab() const {
  std::call_once(vocab_once_, [&] { vocab_ = make_vocab_(); });
  return vocab_;
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::compile(const GrammarSpec& spec) {
  return compile(cache_key(spec), [&] { return build_grammar(spec); });
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::compile(
    const std::string& key_in, const std::function<Result<std::shared_ptr<const Grammar>>()>& build) {
  std::string key = key_in;
  {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++stats_.num_cache_hits;
      return it->second->second;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  LLAISYS_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, build());
  std::shared_ptr<const CompiledGrammar> compiled = CompiledGrammar::create(std::move(grammar), vocab());
  // The root's start position is needed by the first mask of every request: compute it here, off
  // the engine's step.
  compiled->classes(compiled->grammar().root(), 0);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mutex_);
  ++stats_.num_compiled;
  stats_.compile_ns += static_cast<uint64_t>(ns);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;  // compiled twice at once
  lru_.emplace_front(key, compiled);
  index_.emplace(std::move(key), lru_.begin());
  while (lru_.size() > max_cached_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

GrammarCompiler::Stats GrammarCompiler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace llaisys::grammar

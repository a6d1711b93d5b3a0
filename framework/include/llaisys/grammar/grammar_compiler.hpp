#pragma once
// GrammarCompiler: what a request asks for (a JSON Schema, any JSON object, a regex, a list of
// choices, a GBNF grammar) -> a CompiledGrammar for one model's vocabulary. Compiled grammars are
// kept in a bounded LRU keyed by the spec, so the same schema sent again costs a lookup; their
// per-position token classes are shared through the vocabulary's cache.
//
// Thread-safe. Errors are invalid_argument with the front end's message (the keyword, the regex
// construct, the GBNF line), meant for an HTTP 400.

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/json_schema.hpp"
#include "llaisys/grammar/token_mask.hpp"

namespace llaisys::grammar {

struct GrammarSpec {
  enum class Kind : uint8_t { json_schema, json_object, regex, choice, gbnf };
  Kind kind = Kind::json_object;
  boost::json::value schema;          // json_schema
  std::string text;                   // regex, gbnf
  std::vector<std::string> choices;   // choice: the output is exactly one of them
  bool any_whitespace = false;        // json_*: JSON whitespace allowed between tokens (default compact)
  bool strict = false;                // json_schema: OpenAI strict mode
};

inline constexpr std::size_t kMaxChoices = 4096;
inline constexpr std::size_t kMaxChoiceBytes = 4096;

// The grammar of a spec, before any vocabulary.
Result<std::shared_ptr<const Grammar>> build_grammar(const GrammarSpec& spec);

class GrammarCompiler {
 public:
  using VocabularyFactory = std::function<std::shared_ptr<const TokenVocabulary>()>;
  explicit GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, std::size_t max_cached = 256);
  // The vocabulary is made on first use (a model's trie costs ~100 ms; most runs never need it).
  explicit GrammarCompiler(VocabularyFactory make_vocab, std::size_t max_cached = 256);

  Result<std::shared_ptr<const CompiledGrammar>> compile(const GrammarSpec& spec);
  // Any grammar, cached under `key` (callers that compose grammars themselves, e.g. forced tool calls).
  Result<std::shared_ptr<const CompiledGrammar>> compile(
      const std::string& key, const std::function<Result<std::shared_ptr<const Grammar>>()>& build);
  const std::shared_ptr<const TokenVocabulary>& vocab() const;

  struct Stats {
    int64_t num_compiled = 0;
    int64_t num_cache_hits = 0;
    uint64_t compile_ns = 0;
  };
  Stats stats() const;

 private:
  mutable std::once_flag vocab_once_;
  VocabularyFactory make_vocab_;
  mutable std::shared_ptr<const TokenVocabulary> vocab_;
  std::size_t max_cached_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const CompiledGrammar>>> lru_;  // most recent first
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
  Stats stats_;
};

}  // namespace llaisys::grammar

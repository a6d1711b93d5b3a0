// `llaisys-bench structured`: what structured output costs, on the Qwen2 vocabulary (151,936 tokens).
//
//  compile: a JSON schema of 30 properties (or --schema FILE) -> grammar -> compiled for the
//           vocabulary, with a fresh vocabulary (nothing cached from other schemas). Target <= 50 ms.
//  masks:   random walks through the schema (each step a token drawn from the allowed ones, tokens
//           that close structures favoured so walks finish), the time of every mask, first visits of
//           a position included. Targets: p50 <= 50 us, p99 <= 500 us per sequence-step.
//  engine:  32 sequences generating with the schema against 32 without, same model, same run
//           (qwen2-0.5b shape, random weights, sampled at temperature 1). Target >= 90 %.

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include <boost/json.hpp>

#include "commands.hpp"
#include "llaisys/engine/llm_engine.hpp"
#include "llaisys/grammar/grammar_compiler.hpp"
#include "llaisys/model/registry.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace llaisys::bench {
namespace fs = std::filesystem;
namespace json = boost::json;
namespace {

using Clock = std::chrono::steady_clock;

struct StructuredOptions {
  std::string tokenizer_dir = "tests/data/qwen2-tokenizer";
  std::string schema_file;
  std::string scenario = "all";  // compile, masks, engine, all
  int32_t walks = 20;
  int32_t max_steps = 400;
  std::string shape = "qwen2-0.5b";
  std::string model_dir;
  std::string cache_dir = default_model_cache_dir();
  std::string plugin_dir;
  int32_t sequences = 32;
  int32_t new_tokens = 64;
};

// A 30-property object such as an API would return: strings with formats and bounds, enums, numbers
// with ranges, booleans, nested objects and arrays.
const char* const kDefaultSchema = R"({
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "name": {"type": "string", "maxLength": 40},
    "email": {"type": "string", "format": "email"},
    "age": {"type": "integer", "minimum": 0, "maximum": 130},
    "score": {"type": "number", "minimum": 0, "maximum": 100},
    "active": {"type": "boolean"},
    "role": {"type": "string", "enum": ["admin", "editor", "viewer", "guest"]},
    "created": {"type": "string", "format": "date-time"},
    "birthday": {"type": "string", "format": "date"},
    "country": {"type": "string", "minLength": 2, "maxLength": 2},
    "city": {"type": "string"},
    "street": {"type": "string"},
    "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
    "phone": {"type": "string", "pattern": "^\\+?[0-9 ]{7,15}$"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 5},
    "rating": {"type": "integer", "minimum": 1, "maximum": 5},
    "verified": {"type": "boolean"},
    "balance": {"type": "number"},
    "currency": {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY", "CNY"]},
    "language": {"type": "string", "enum": ["en", "fr", "de", "zh", "ja", "es"]},
    "timezone": {"type": "string"},
    "bio": {"type": "string", "maxLength": 200},
    "website": {"type": "string"},
    "followers": {"type": "integer", "minimum": 0},
    "following": {"type": "integer", "minimum": 0},
    "ip": {"type": "string", "format": "ipv4"},
    "last_login": {"type": "string", "format": "date-time"},
    "preferences": {"type": "object", "properties": {
      "theme": {"type": "string", "enum": ["light", "dark"]},
      "notifications": {"type": "boolean"}}, "required": ["theme", "notifications"], "additionalProperties": false},
    "address_verified": {"type": ["boolean", "null"]},
    "notes": {"type": "array", "items": {"type": "object", "properties": {
      "text": {"type": "string"}, "at": {"type": "string", "format": "date"}}, "required": ["text"],
      "additionalProperties": false}, "maxItems": 3}
  },
  "required": ["id", "name", "email", "age", "active", "role", "created", "country", "tags", "rating",
               "currency", "language", "followers", "preferences"],
  "additionalProperties": false
})";

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

Result<json::value> load_schema(const StructuredOptions& o) {
  std::string text = kDefaultSchema;
  if (!o.schema_file.empty()) {
    std::ifstream in(o.schema_file);
    if (!in) return make_error(ErrorCode::not_found, "cannot open {}", o.schema_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return make_error(ErrorCode::parse_error, "schema: {}", ec.message());
  return v;
}

bool closes_structure(const std::string& piece) {
  return !piece.empty() && piece.find_first_of("\",}]") != std::string::npos &&
         std::none_of(piece.begin(), piece.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
}

Status run_compile_and_masks(const StructuredOptions& o, const text::Tokenizer& tokenizer, const json::value& schema) {
  const int32_t vocab_size = 151936;
  auto t0 = Clock::now();
  auto vocab = grammar::TokenVocabulary::from_tokenizer(tokenizer, vocab_size, {151643, 151645});
  const double vocab_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  grammar::GrammarCompiler compiler(vocab);
  t0 = Clock::now();
  LLAISYS_ASSIGN_OR_RETURN(auto compiled, compiler.compile({.kind = grammar::GrammarSpec::Kind::json_schema, .schema = schema}));
  const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  fmt::print("compile: vocabulary trie {:.1f} ms (once per model); schema -> compiled grammar {:.2f} ms "
             "({} automaton states) (target <= 50 ms)\n",
             vocab_ms, compile_ms, compiled->grammar().num_states());
  if (o.scenario == "compile") return Status();

  std::vector<double> first_pass;
  std::vector<double> second_pass;
  int64_t finished = 0;
  int64_t tokens = 0;
  std::vector<uint32_t> mask(vocab->mask_words());
  for (int pass = 0; pass < 2; ++pass) {
    std::mt19937_64 rng(7);
    for (int32_t w = 0; w < o.walks; ++w) {
      grammar::GrammarMatcher matcher(compiled);
      for (int32_t step = 0; step < o.max_steps; ++step) {
        const auto start = Clock::now();
        matcher.fill_mask(mask);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        (pass == 0 ? first_pass : second_pass).push_back(us);
        std::vector<TokenId> allowed;
        std::vector<TokenId> closing;
        for (std::size_t word = 0; word < mask.size(); ++word) {
          for (uint32_t bits = mask[word]; bits != 0; bits &= bits - 1) {
            const auto t = static_cast<TokenId>(word * 32 + static_cast<std::size_t>(std::countr_zero(bits)));
            allowed.push_back(t);
            if (closes_structure(vocab->piece(t))) closing.push_back(t);
          }
        }
        if (allowed.empty()) return Status(ErrorCode::internal, "a walk reached a state with no allowed token");
        const bool close = !closing.empty() && rng() % 4 == 0;
        const TokenId t = close ? closing[rng() % closing.size()] : allowed[rng() % allowed.size()];
        if (vocab->piece(t).empty()) {  // EOS
          if (pass == 0) ++finished;
          break;
        }
        if (!matcher.accept(t)) return Status(ErrorCode::internal, "an allowed token was refused");
        if (pass == 0) ++tokens;
        if (matcher.is_terminated()) {
          if (pass == 0) ++finished;
          break;
        }
      }
    }
  }
  fmt::print("masks: {} walks, {} tokens, {} finished the object\n", o.walks, tokens, finished);
  fmt::print("  first visits included: p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us over {} masks (targets p50 <= 50, p99 <= 500)\n",
             percentile(first_pass, 0.5), percentile(first_pass, 0.99), percentile(first_pass, 1.0), first_pass.size());
  const auto slow = std::count_if(first_pass.begin(), first_pass.end(), [](double us) { return us > 500.0; });
  const grammar::CompiledGrammar::ClassifyStats stats = compiled->classify_stats();
  fmt::print("  {} masks over 500 us in the first pass; {} positions classified, {} of them by class trie\n", slow,
             stats.positions, stats.class_walks);
  fmt::print("  warm (same walks again):  p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us\n", percentile(second_pass, 0.5),
             percentile(second_pass, 0.99), percentile(second_pass, 1.0));
  return Status();
}

Status run_engine(const StructuredOptions& o, std::shared_ptr<const text::Tokenizer> tokenizer, const json::value& schema) {
  fs::path model_dir = o.model_dir;
  if (model_dir.empty()) {
    LLAISYS_ASSIGN_OR_RETURN(model_dir, cached_bench_model(o.shape, o.cache_dir));
  }
  PluginRegistry registry;
  registry.load_directory(o.plugin_dir.empty() ? default_plugin_dir() : fs::path(o.plugin_dir));
  LLAISYS_ASSIGN_OR_RETURN(AnyModel model, registry.open_model({.model_dir = model_dir}));
  const int32_t vocab_size = model.info().vocab_size;
  std::vector<TokenId> eos = model.info().eos_token_ids;
  LLAISYS_ASSIGN_OR_RETURN(auto engine, LLMEngine::create(EngineModel(std::move(model)),
                                                          {.kv_cache_bytes = uint64_t{2048} << 20,
                                                           .max_num_seqs = std::max(64, o.sequences),
                                                           .max_context = 4096,
                                                           .enable_prefix_cache = false,
                                                           .seed = 0},
                                                          tokenizer));
  grammar::GrammarCompiler compiler(grammar::TokenVocabulary::from_tokenizer(*tokenizer, vocab_size, eos));
  LLAISYS_ASSIGN_OR_RETURN(auto compiled, compiler.compile({.kind = grammar::GrammarSpec::Kind::json_schema, .schema = schema}));
  LLAISYS_ASSIGN_OR_RETURN(std::vector<TokenId> prompt, tokenizer->encode("Return the user record as JSON:"));
  struct RunResult {
    double tokens_per_s;
    uint64_t mask_ns, mask_wait_ns;
  };
  auto run = [&](bool constrained) -> RunResult {
    const EngineStats before = engine->stats();
    for (int32_t s = 0; s < o.sequences; ++s) {
      GenerateRequest r{.prompt_ids = prompt};
      r.sampling = {.temperature = 1.0f, .seed = static_cast<uint64_t>(s)};
      r.stop.max_tokens = o.new_tokens;
      r.stop.ignore_eos = !constrained;  // unconstrained: every sequence runs the full length
      if (constrained) r.grammar = compiled;
      (void)engine->submit(std::move(r));
    }
    const auto start = Clock::now();
    int64_t generated = 0;
    while (engine->has_unfinished()) {
      for (const RequestOutput& out : engine->step()) {
        for (const ChoiceDelta& d : out.choices) generated += static_cast<int64_t>(d.token_ids.size());
      }
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    const EngineStats after = engine->stats();
    return {static_cast<double>(generated) / secs, after.times.mask_ns - before.times.mask_ns,
            after.times.mask_wait_ns - before.times.mask_wait_ns};
  };
  run(false);  // warm-up: weights paged in
  const RunResult unconstrained = run(false);
  const RunResult constrained = run(true);
  fmt::print("engine: {} sequences x up to {} tokens, {}: unconstrained {:.1f} tokens/s, with the schema {:.1f} tokens/s "
             "= {:.1f} % (target >= 90 %); masks took {:.1f} ms of the constrained run, made while the forward "
             "pass ran; the model waited {:.1f} ms for them\n",
             o.sequences, o.new_tokens, model_dir.filename().string(), unconstrained.tokens_per_s, constrained.tokens_per_s,
             100.0 * constrained.tokens_per_s / unconstrained.tokens_per_s, static_cast<double>(constrained.mask_ns) * 1e-6,
             static_cast<double>(constrained.mask_wait_ns) * 1e-6);
  return Status();
}

Status run_all(const StructuredOptions& o) {
  LLAISYS_ASSIGN_OR_RETURN(auto tokenizer, text::Tokenizer::from_model_dir(o.tokenizer_dir));
  LLAISYS_ASSIGN_OR_RETURN(json::value schema, load_schema(o));
  if (o.scenario != "engine") LLAISYS_RETURN_IF_ERROR(run_compile_and_masks(o, *tokenizer, schema));
  if (o.scenario == "engine" || o.scenario == "all") LLAISYS_RETURN_IF_ERROR(run_engine(o, tokenizer, schema));
  return Status();
}

}  // namespace

void add_structured_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StructuredOptions>();
  CLI::App* cmd = app.add_subcommand("structured", "structured output: schema compile time, mask time per token, engine throughput");
  cmd->add_option("--tokenizer", o->tokenizer_dir, "a Qwen2-vocabulary tokenizer directory")->capture_default_str();
  cmd->add_option("--schema", o->schema_file, "a JSON Schema file (default: a built-in 30-property object)");
  cmd->add_option("--scenario", o->scenario, "compile, masks, engine or all")
      ->capture_default_str()->check(CLI::IsMember({"compile", "masks", "engine", "all"}));
  cmd->add_option("--walks", o->walks, "random walks through the schema")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--max-steps", o->max_steps, "tokens per walk at most")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--shape", o->shape, "engine: model shape to generate when --model is not given")->capture_default_str();
  cmd->add_option("--model", o->model_dir, "engine: an existing model directory (Qwen2 vocabulary)");
  cmd->add_option("--cache-dir", o->cache_dir, "where generated models are kept")->capture_default_str();
  cmd->add_option("--plugin-dir", o->plugin_dir, "directory of model plugins (default: next to the executable)");
  cmd->add_option("--sequences", o->sequences, "engine: concurrent sequences")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--new-tokens", o->new_tokens, "engine: tokens per sequence at most")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->callback([o, &exit_code] {
    const Status s = run_all(*o);
    if (!s.ok()) {
      fmt::print(stderr, "error: {}\n", s.message());
      exit_code = 1;
    }
  });
}

}  // namespace llaisys::bench

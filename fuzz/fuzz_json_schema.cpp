// libFuzzer target: arbitrary bytes as a JSON Schema (Boost.JSON, depth-limited), compiled by
// json_schema_grammar under small GrammarLimits with options picked from the input's size. Every input
// gives a grammar or a clear Status, quickly; an accepted grammar's random complete strings (a walk of
// its automaton) are JSON that the tests' small validator accepts, and no walk meets a dead end.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string_view>

#include <boost/json.hpp>

#include "json_schema_test_support.hpp"
#include "llaisys/grammar/json_schema.hpp"

using namespace llaisys::grammar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > (1u << 16)) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::json::parse_options parse_options;
  parse_options.max_depth = 200;
  boost::system::error_code ec;
  const boost::json::value schema = boost::json::parse(text, ec, {}, parse_options);
  if (ec) return 0;
  JsonSchemaOptions options;
  options.any_whitespace = size % 2 == 1;
  options.strict = size % 3 == 0;
  options.unlisted_properties = size % 5 == 0;
  options.max_whitespace = 3;
  options.max_repeat_bound = 2000;
  options.limits = GrammarLimits{.max_nfa_states = 50'000, .max_dfa_states = 10'000, .max_edges = 200'000};
  auto grammar = json_schema_grammar(schema, options);
  if (!grammar.ok()) {
    if (grammar.status().message().empty()) std::abort();
    return 0;
  }
  json_schema_test::RandomWalker walker(**grammar);
  std::mt19937 rng(static_cast<uint32_t>(size));
  for (int i = 0; i < 4; ++i) {
    bool dead_end = false;
    const std::string out = walker.walk(rng, 64, dead_end);
    if (dead_end) std::abort();
    boost::system::error_code parse_ec;
    const boost::json::value instance = boost::json::parse(out, parse_ec);
    if (parse_ec) std::abort();
    // The test's independent validator agrees (for the keywords it knows).
    std::string why;
    try {
      why = json_schema_test::SchemaChecker(schema, true).check(instance);
    } catch (const std::exception&) {
      why.clear();  // a schema shape the small checker does not read
    }
    if (!why.empty()) {
      std::fprintf(stderr, "instance %s fails the schema: %s\n", out.c_str(), why.c_str());
      std::abort();
    }
  }
  return 0;
}

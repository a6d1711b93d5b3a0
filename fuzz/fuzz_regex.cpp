// libFuzzer target: arbitrary bytes as a regex pattern (regex.hpp). compile_regex gives an expression
// or an invalid_argument naming the construct; an expression is then built into a grammar under small
// limits, which either succeeds or is refused as too large. Neither may crash, hang or leak, whatever
// the nesting of groups and counts. A refusal must be an invalid_argument with a message; a built
// grammar must have a root rule with states.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "llaisys/grammar/grammar.hpp"
#include "llaisys/grammar/regex.hpp"

using namespace llaisys;
using namespace llaisys::grammar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view pattern(reinterpret_cast<const char*>(data), size);
  auto expr = compile_regex(pattern);
  if (!expr.ok()) {
    if (expr.status().code() != ErrorCode::invalid_argument || expr.status().message().empty()) std::abort();
    return 0;
  }
  if (!*expr) std::abort();
  GrammarBuilder builder;
  const int32_t root = builder.add_rule("root", *expr);
  // Small limits keep every input fast; what passes them is a grammar of at most a few thousand states.
  auto grammar = builder.build(root, GrammarLimits{.max_nfa_states = 20000, .max_dfa_states = 2000, .max_edges = 50000});
  if (grammar.ok() && (*grammar)->rule((*grammar)->root()).states.empty()) std::abort();
  return 0;
}

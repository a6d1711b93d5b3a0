#pragma once
// JSON Schema (draft 2020-12, with the older spellings OpenAI clients send) -> a grammar whose every
// complete string is JSON that validates against the schema. Output whitespace is compact by default
// (no spaces or newlines, like json.dumps(separators=(",", ":"))); `any_whitespace` allows JSON
// whitespace between tokens (bounded runs, so a model cannot loop on spaces).
//
// The guarantee is one-sided: everything generated validates (ajv, draft 2020-12 + ajv-formats), but
// not every valid document can be generated. Where exactness is impractical the grammar is stricter,
// never looser: properties come in the schema's order; numbers have at most 15 integer digits (and,
// when bounded, at most 9 integer + 6 fraction digits or plain integers, no exponent); formats use
// their canonical spelling; untyped schemas generate only the kinds of value their keywords describe;
// oneOf is accepted only when no generated value can match two branches (else refused, naming it).
//
// Coverage and refusals: json_schema.cpp lists every keyword. A keyword that constrains values and
// that we cannot enforce is an invalid_argument naming it ("'uniqueItems' is not supported ...");
// annotations (title, description, examples, default, $comment, "x-..." vendor keys, ...) are
// accepted and ignored; any other unknown keyword is refused, naming it.

#include <cstdint>
#include <memory>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/grammar.hpp"

namespace llaisys::grammar {

struct JsonSchemaOptions {
  // JSON whitespace ([ \t\n\r], at most `max_whitespace` bytes in a row) between tokens inside objects
  // and arrays; none before or after the document.
  bool any_whitespace = false;
  int32_t max_whitespace = 20;
  // OpenAI's strict mode: properties not in "properties" are never generated without an explicit
  // "additionalProperties" (true or a schema), even in objects that list no properties.
  bool strict = false;
  // An object schema that lists "properties" but says nothing of "additionalProperties" allows others
  // in JSON Schema; by default (as xgrammar and llama.cpp do) only the listed ones are generated.
  // true: the model may add others after them (never under `strict`). An object schema without
  // "properties" allows any others unless `strict`.
  bool unlisted_properties = false;
  int32_t max_schema_depth = 64;     // nesting of subschemas
  int32_t max_enum_values = 4096;    // enum size
  // The largest minLength/maxLength/minItems/maxItems honoured; larger bounds are refused (a bound
  // cannot be dropped without making the grammar looser than the schema).
  int64_t max_repeat_bound = 100'000;
  GrammarLimits limits;
};

Result<std::shared_ptr<const Grammar>> json_schema_grammar(const boost::json::value& schema,
                                                          const JsonSchemaOptions& options = {});

// The schema's rules added to `builder`, for grammars that embed JSON (e.g. forced tool calls):
// returns the rule whose strings are the schema's instances. Same checks as json_schema_grammar
// except the automaton limits, which apply when the builder is built.
Result<int32_t> add_json_schema(GrammarBuilder& builder, const boost::json::value& schema,
                                const JsonSchemaOptions& options = {});

// Any JSON object (response_format json_object): objects, arrays and strings of any size and nesting
// (recursive rules), numbers as json_schema_grammar writes them.
Result<std::shared_ptr<const Grammar>> json_object_grammar(const JsonSchemaOptions& options = {});

}  // namespace llaisys::grammar

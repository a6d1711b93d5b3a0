#pragma once
// JSON Schema (draft 2020-12, with the older spellings OpenAI clients send) -> a grammar whose every
// complete string is JSON that validates against the schema. Output whitespace is compact by default
// (no spaces or newlines, like json.dumps(separators=(",", ":"))); `any_whitespace` allows JSON
// whitespace between tokens (bounded runs, so a model cannot loop on spaces).
//
// Coverage and refusals: json_schema.cpp lists every keyword. A keyword that constrains values and
// that we cannot enforce is an invalid_argument naming it ("'uniqueItems' is not supported ...");
// annotations (title, description, examples, default, $comment, ...) are accepted and ignored.

#include <memory>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/grammar.hpp"

namespace llaisys::grammar {

struct JsonSchemaOptions {
  bool any_whitespace = false;
  // OpenAI's strict mode: properties not in "properties" are refused even without
  // "additionalProperties": false (a schema without it allows none in strict mode).
  bool strict = false;
  int32_t max_schema_depth = 64;     // nesting of subschemas
  int32_t max_enum_values = 4096;    // enum size
  GrammarLimits limits;
};

Result<std::shared_ptr<const Grammar>> json_schema_grammar(const boost::json::value& schema,
                                                          const JsonSchemaOptions& options = {});

// Any JSON object (response_format json_object) / any JSON value.
Result<std::shared_ptr<const Grammar>> json_object_grammar(const JsonSchemaOptions& options = {});

}  // namespace llaisys::grammar

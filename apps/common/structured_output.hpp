#pragma once
// Structured-output fields of a generation request, shared by the server (chat and completions) and
// llaisys-offline's JSONL lines: OpenAI's `response_format` ({"type": "text" | "json_object" |
// "json_schema", "json_schema": {"name", "schema", "strict"}}), vLLM's `guided_json`, `guided_regex`,
// `guided_choice`, `guided_grammar` (GBNF here, llama.cpp's format) and its newer
// `structured_outputs` object ({"json" | "regex" | "choice" | "grammar": ...}). At most one may ask
// for a constraint. Fields we do not implement (guided_whitespace_pattern, a guided_decoding_backend
// other than "auto", structural tags) are refused by name, never ignored.

#include <optional>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/grammar_compiler.hpp"

namespace llaisys::app {

// nullopt when the request asks for no constraint. Errors are invalid_argument naming the field.
Result<std::optional<grammar::GrammarSpec>> structured_output_spec(const boost::json::object& body);

}  // namespace llaisys::app

#pragma once
// Qwen2.5-style tool calls in generated text: "<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>".
//
// ToolCallParser is fed the text deltas as they arrive (split anywhere, even inside the markers) and
// returns what is plain content and which tool calls completed. Text that might be the start of a
// "<tool_call>" marker is held back until it is decided. A block whose JSON is not an object with a
// string "name" is given back as content, unchanged. finish() flushes what is held back (an
// unterminated block is parsed if its JSON is complete, otherwise returned as content).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/grammar_compiler.hpp"

namespace llaisys::server {

inline constexpr std::string_view kToolCallOpen = "<tool_call>";
inline constexpr std::string_view kToolCallClose = "</tool_call>";

struct ToolCall {
  std::string id;         // "call_" + random hex
  std::string name;
  std::string arguments;  // JSON text (serialized "arguments", "{}" when absent)
};

struct ToolParseResult {
  std::string content;
  std::vector<ToolCall> calls;
  // Where each call came in the text: calls[i] followed content[0, call_offsets[i]) (the Responses
  // API keeps text and calls in the order the model wrote them).
  std::vector<std::size_t> call_offsets;
  // What the parser returned next, appended: its content after ours, its calls after ours.
  void append(ToolParseResult next);
};

class ToolCallParser {
 public:
  ToolParseResult feed(std::string_view text);
  ToolParseResult finish();
  bool saw_tool_call() const { return num_calls_ > 0; }

 private:
  void drain(ToolParseResult& out, bool at_end);
  bool emit_block(std::string_view block, ToolParseResult& out);

  std::string buffer_;
  bool inside_ = false;
  bool after_call_ = false;  // only whitespace since the last call so far
  int num_calls_ = 0;
};

// Parses one block's JSON (between the markers) into a call; false when it is not a tool call.
bool parse_tool_call_json(std::string_view json_text, ToolCall& call);

std::string random_call_id();

// tool_choice "required" (function empty: one or more calls of any tool, or exactly one when
// parallel_tool_calls is false) or a named function (exactly one call of it).
struct ForcedToolCalls {
  std::string function;
  bool parallel = true;
};

// The grammar of forced tool calls in the format ToolCallParser reads:
// "<tool_call>\n{"name":"NAME","arguments":ARGS}\n</tool_call>", calls separated by "\n", ARGS
// held to the function's "parameters" schema (any object when it has none). invalid_argument when
// the named function is not among `tools` or a parameters schema is refused (the keyword named).
Result<std::shared_ptr<const grammar::CompiledGrammar>> forced_tool_call_grammar(const boost::json::value& tools,
                                                                                 const ForcedToolCalls& forced,
                                                                                 grammar::GrammarCompiler& grammars);

}  // namespace llaisys::server

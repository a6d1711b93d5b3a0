#include "openai/tool_calls.hpp"

#include <boost/json.hpp>

#include "openai/response.hpp"

namespace llaisys::server {
namespace json = boost::json;

namespace {
// Length of the longest suffix of `text` that is a proper prefix of `marker`.
std::size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
  const std::size_t max = std::min(text.size(), marker.size() - 1);
  for (std::size_t len = max; len > 0; --len) {
    if (text.substr(text.size() - len) == marker.substr(0, len)) return len;
  }
  return 0;
}
}  // namespace

std::string random_call_id() { return "call_" + random_hex(24); }

bool parse_tool_call_json(std::string_view json_text, ToolCall& call) {
  boost::system::error_code ec;
  json::parse_options options;
  options.max_depth = 64;
  json::value value = json::parse(json_text, ec, {}, options);
  if (ec || !value.is_object()) return false;
  const json::object& object = value.as_object();
  const json::value* name = object.if_contains("name");
  if (name == nullptr || !name->is_string() || name->as_string().empty()) return false;
  call.name = std::string(name->as_string());
  const json::value* arguments = object.if_contains("arguments");
  if (arguments == nullptr) arguments = object.if_contains("parameters");
  if (arguments == nullptr || arguments->is_null()) {
    call.arguments = "{}";
  } else if (arguments->is_string()) {
    call.arguments = std::string(arguments->as_string());
  } else {
    call.arguments = json::serialize(*arguments);
  }
  call.id = random_call_id();
  return true;
}

void ToolParseResult::append(ToolParseResult next) {
  for (std::size_t offset : next.call_offsets) call_offsets.push_back(content.size() + offset);
  content += next.content;
  for (ToolCall& call : next.calls) calls.push_back(std::move(call));
}

bool ToolCallParser::emit_block(std::string_view block, ToolParseResult& out) {
  ToolCall call;
  if (!parse_tool_call_json(block, call)) return false;
  out.call_offsets.push_back(out.content.size());
  out.calls.push_back(std::move(call));
  ++num_calls_;
  return true;
}

void ToolCallParser::drain(ToolParseResult& out, bool at_end) {
  while (true) {
    if (!inside_) {
      if (after_call_) {
        // Whitespace between or after tool calls is not content.
        const std::size_t next = buffer_.find_first_not_of(" \t\r\n");
        if (next == std::string::npos) {
          if (at_end) buffer_.clear();
          return;
        }
        const std::string_view rest = std::string_view(buffer_).substr(next);
        if (rest.starts_with(kToolCallOpen)) {
          buffer_.erase(0, next);
        } else if (!at_end && kToolCallOpen.starts_with(rest)) {
          return;  // maybe the next marker
        } else {
          after_call_ = false;
        }
      }
      const std::size_t open = buffer_.find(kToolCallOpen);
      if (open == std::string::npos) {
        const std::size_t keep = at_end ? 0 : partial_marker_suffix(buffer_, kToolCallOpen);
        out.content += buffer_.substr(0, buffer_.size() - keep);
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      out.content += buffer_.substr(0, open);
      buffer_.erase(0, open);  // the buffer now starts with the marker
      inside_ = true;
    }
    const std::size_t close = buffer_.find(kToolCallClose, kToolCallOpen.size());
    if (close == std::string::npos) {
      if (at_end) {
        // The model stopped before the closing marker: take the call if its JSON is complete.
        if (!emit_block(std::string_view(buffer_).substr(kToolCallOpen.size()), out)) out.content += buffer_;
        buffer_.clear();
        inside_ = false;
      }
      return;
    }
    const std::string_view block = std::string_view(buffer_).substr(kToolCallOpen.size(), close - kToolCallOpen.size());
    const bool ok = emit_block(block, out);
    if (!ok) out.content += buffer_.substr(0, close + kToolCallClose.size());
    buffer_.erase(0, close + kToolCallClose.size());
    inside_ = false;
    if (!ok) continue;
    after_call_ = true;
  }
}

ToolParseResult ToolCallParser::feed(std::string_view text) {
  buffer_ += text;
  ToolParseResult out;
  drain(out, /*at_end=*/false);
  return out;
}

ToolParseResult ToolCallParser::finish() {
  ToolParseResult out;
  drain(out, /*at_end=*/true);
  return out;
}

}  // namespace llaisys::server

#pragma once
// JSON Lines input and output for the command-line tools.
//
// Input: one JSON value per line from a file or standard input; blank lines are skipped; a line that
// is not valid JSON yields an error for that line only (the caller writes an error result and goes
// on). Output: one compact JSON object per line, flushed per line.

#include <cstdio>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"

namespace llaisys::app {

struct JsonlLine {
  std::size_t line_number = 0;  // 1-based
  Result<boost::json::value> value = Status(ErrorCode::internal, "unset");
};

class JsonlReader {
 public:
  // "-" or empty: standard input.
  static Result<JsonlReader> open(const std::string& path);
  // The next non-blank line, or std::nullopt at the end.
  std::optional<JsonlLine> next();

 private:
  explicit JsonlReader(std::shared_ptr<std::istream> in) : in_(std::move(in)) {}
  std::shared_ptr<std::istream> in_;
  std::size_t line_number_ = 0;
};

// Removes a leading UTF-8 byte order mark (what some editors put at the start of a file).
void strip_utf8_bom(std::string& line);

// Writes `value` and a newline to `out` and flushes.
void write_json_line(std::FILE* out, const boost::json::value& value);

// {"error": {"message": ..., "type": ..., "line": N}} for a failed input line.
boost::json::object error_object(const Status& status, std::size_t line_number);

}  // namespace llaisys::app

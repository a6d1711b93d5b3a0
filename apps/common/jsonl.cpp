#include "jsonl.hpp"

#include <fstream>
#include <iostream>

namespace llaisys::app {

Result<JsonlReader> JsonlReader::open(const std::string& path) {
  if (path.empty() || path == "-") {
    return JsonlReader(std::shared_ptr<std::istream>(&std::cin, [](std::istream*) {}));
  }
  auto file = std::make_shared<std::ifstream>(path, std::ios::binary);
  if (!*file) return make_error(ErrorCode::not_found, "cannot open input file '{}'", path);
  return JsonlReader(std::move(file));
}

std::optional<JsonlLine> JsonlReader::next() {
  std::string line;
  while (std::getline(*in_, line)) {
    ++line_number_;
    if (line_number_ == 1) strip_utf8_bom(line);  // editors on Windows write one
    if (line.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    JsonlLine out;
    out.line_number = line_number_;
    boost::system::error_code ec;
    boost::json::value value = boost::json::parse(line, ec);
    if (ec) {
      out.value = make_error(ErrorCode::parse_error, "line {}: invalid JSON: {}", line_number_, ec.message());
    } else {
      out.value = std::move(value);
    }
    return out;
  }
  return std::nullopt;
}

void strip_utf8_bom(std::string& line) {
  if (line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
}

void write_json_line(std::FILE* out, const boost::json::value& value) {
  const std::string text = boost::json::serialize(value);
  std::fwrite(text.data(), 1, text.size(), out);
  std::fputc('\n', out);
  std::fflush(out);
}

boost::json::object error_object(const Status& status, std::size_t line_number) {
  boost::json::object error;
  error["message"] = status.message();
  error["type"] = std::string(to_string(status.code()));
  error["line"] = line_number;
  boost::json::object out;
  out["error"] = std::move(error);
  return out;
}

}  // namespace llaisys::app

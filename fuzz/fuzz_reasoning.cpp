// libFuzzer target: arbitrary model output through the think-block parser (apps/common/reasoning.hpp).
// Byte 0 picks where the output starts (detect, inside, content), byte 1 the cut points: the text is fed
// whole, byte by byte, and in pieces at those cuts. The three splits must be equal (the parser's
// promise that a split does not depend on how the text is cut), the reasoning and the content must be
// made of the input's bytes in order (nothing invented), and the content of an output that starts as
// content must be the input itself.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "reasoning.hpp"

using namespace llaisys;

namespace {

app::ReasoningSplit split(std::string_view text, app::ReasoningStart start, const std::vector<std::size_t>& cuts) {
  app::ReasoningParser parser({.start = start});
  app::ReasoningSplit out;
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    out.append(parser.feed(text.substr(at, cut - at)));
    at = cut;
  }
  out.append(parser.feed(text.substr(at)));
  out.append(parser.finish());
  return out;
}

// Whether `part` is a subsequence of `text`.
bool within(std::string_view part, std::string_view text) {
  std::size_t i = 0;
  for (char c : text) {
    if (i < part.size() && part[i] == c) ++i;
  }
  return i == part.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto start = static_cast<app::ReasoningStart>(data[0] % 3);
  const unsigned step = data[1] % 16 + 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  std::vector<std::size_t> every_byte, some;
  for (std::size_t i = 1; i < text.size(); ++i) {
    every_byte.push_back(i);
    if (i % step == 0) some.push_back(i);
  }
  const app::ReasoningSplit whole = split(text, start, {});
  const app::ReasoningSplit bytes = split(text, start, every_byte);
  const app::ReasoningSplit pieces = split(text, start, some);
  if (bytes.reasoning != whole.reasoning || bytes.content != whole.content) std::abort();
  if (pieces.reasoning != whole.reasoning || pieces.content != whole.content) std::abort();
  if (!within(whole.reasoning + whole.content, text)) std::abort();
  if (start == app::ReasoningStart::content && (whole.content != text || !whole.reasoning.empty())) std::abort();
  return 0;
}

// libFuzzer target: arbitrary bytes encoded by the real Qwen2 tokenizer (tests/data). Checks what
// must hold for every input: decode(encode(x)) succeeds, and streaming the ids through the
// detokenizer yields valid UTF-8 deltas whose concatenation equals that decode.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "llaisys/text/incremental_detokenizer.hpp"
#include "llaisys/text/tokenizer.hpp"

namespace {

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    std::size_t n = b < 0x80 ? 1 : (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const auto tokenizer = [] {
    auto loaded = llaisys::text::Tokenizer::from_model_dir(LLAISYS_QWEN2_TOKENIZER_DIR);
    if (!loaded.ok()) std::abort();
    return loaded.value();
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ids = tokenizer->encode(text);
  if (!ids.ok()) std::abort();  // encode accepts every input
  auto decoded = tokenizer->decode(ids.value(), false);
  if (!decoded.ok() || !valid_utf8(decoded.value())) std::abort();
  llaisys::text::IncrementalDetokenizer detokenizer(tokenizer, {.skip_special_tokens = false});
  std::string streamed;
  for (llaisys::TokenId id : ids.value()) {
    auto delta = detokenizer.add(id);
    if (!valid_utf8(delta.text)) std::abort();
    streamed += delta.text;
  }
  streamed += detokenizer.finish();
  if (streamed != decoded.value()) std::abort();
  return 0;
}

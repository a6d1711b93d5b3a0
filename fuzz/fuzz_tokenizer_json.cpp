// libFuzzer target: arbitrary bytes as tokenizer.json. Loading must give a tokenizer or a clear
// Status; a loaded tokenizer must encode and decode sample texts without crashing.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "llaisys/text/incremental_detokenizer.hpp"
#include "llaisys/text/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  auto tokenizer = llaisys::text::Tokenizer::from_json_text(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!tokenizer.ok()) return 0;
  for (std::string_view text : {"Hello world", " a  b\n\nc", "你好 🚀 café", "<s>x</s>", "\xff\xfe"}) {
    auto ids = tokenizer.value()->encode(text, true);
    if (!ids.ok()) continue;
    (void)tokenizer.value()->decode(ids.value(), false);
    llaisys::text::IncrementalDetokenizer detokenizer(tokenizer.value(), {.stop_strings = {"b"}});
    for (llaisys::TokenId id : ids.value()) detokenizer.add(id);
    (void)detokenizer.finish();
  }
  return 0;
}

// IncrementalDetokenizer: streamed deltas against full decodes (every reference case), a randomized
// test with a fixed seed (random ids, characters split across tokens, stop strings spanning deltas),
// and the windowed path of SentencePiece-style decoders.

#include <random>

#include <fmt/format.h>

#include "llaisys/text/incremental_detokenizer.hpp"
#include "text_test_support.hpp"

namespace llaisys::text::test {
namespace {

bool valid_utf8(std::string_view s) {
  // Independent of the library's helper: decode with the Table 3-7 ranges.
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    std::size_t n = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b < 0x80) n = 1;
    else if (b >= 0xC2 && b <= 0xDF) n = 2;
    else if (b == 0xE0) n = 3, lo = 0xA0;
    else if (b >= 0xE1 && b <= 0xEC) n = 3;
    else if (b == 0xED) n = 3, hi = 0x9F;
    else if (b >= 0xEE && b <= 0xEF) n = 3;
    else if (b == 0xF0) n = 4, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3) n = 4;
    else if (b == 0xF4) n = 4, hi = 0x8F;
    else return false;
    if (i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return false;
    }
    i += n;
  }
  return true;
}

struct Streamed {
  std::vector<std::string> deltas;
  std::string total;
  std::optional<std::size_t> stop_index;
};

Streamed stream(const std::shared_ptr<const Tokenizer>& tokenizer, std::span<const TokenId> ids,
                DetokenizerOptions options, std::span<const TokenId> prompt = {}) {
  IncrementalDetokenizer detokenizer(tokenizer, std::move(options), prompt);
  Streamed out;
  for (TokenId id : ids) {
    auto delta = detokenizer.add(id);
    out.deltas.push_back(delta.text);
    out.total += delta.text;
    if (delta.stop_index) {
      out.stop_index = delta.stop_index;
      break;
    }
  }
  std::string last = detokenizer.finish();
  out.deltas.push_back(last);
  out.total += last;
  CHECK(detokenizer.text() == out.total);
  return out;
}

TEST_CASE("streamed deltas of every reference case equal the full decode and are valid UTF-8") {
  auto tokenizer = qwen2();
  for (const TokenizerCase& c : tokenizer_cases()) {
    for (bool skip : {false, true}) {
      const Streamed s = stream(tokenizer, c.ids, {.skip_special_tokens = skip});
      INFO(c.text);
      CHECK(s.total == tokenizer->decode(c.ids, skip).value());
      if (!skip) CHECK(s.total == c.decoded);
      for (const std::string& delta : s.deltas) CHECK(valid_utf8(delta));
    }
  }
}

TEST_CASE("a character split across tokens is held back until complete") {
  auto tokenizer = qwen2();
  // " 🚀" = [11162 (20 F0 9F), 248 (9A), 222 (80)]
  IncrementalDetokenizer detokenizer(tokenizer, {});
  CHECK(detokenizer.add(11162).text == " ");
  CHECK(detokenizer.add(248).text.empty());
  CHECK(detokenizer.add(222).text == "🚀");
  CHECK(detokenizer.add(11162).text == " ");
  CHECK(detokenizer.finish() == "\xEF\xBF\xBD");  // F0 9F never completed
  CHECK(detokenizer.text() == " 🚀 \xEF\xBF\xBD");
}

TEST_CASE("a stop string spanning deltas is never emitted, and the text before it is") {
  auto tokenizer = qwen2();
  const std::vector<TokenId> ids = tokenizer->encode("Hello world, stop here please").value();
  const Streamed s = stream(tokenizer, ids, {.stop_strings = {"nothing", "o w"}});
  CHECK(s.stop_index == 1u);
  CHECK(s.total == "Hell");
  // An unfinished prefix of a stop string is released at the end.
  const Streamed partial = stream(tokenizer, tokenizer->encode("say STO").value(), {.stop_strings = {"STOP"}});
  CHECK_FALSE(partial.stop_index.has_value());
  CHECK(partial.total == "say STO");
  CHECK(partial.deltas.back() == "STO");
  // Special tokens are text too when not skipped, so they can be stop strings.
  const Streamed special = stream(tokenizer, tokenizer->encode("a<|im_end|>b").value(),
                                  {.skip_special_tokens = false, .stop_strings = {"<|im_end|>"}});
  CHECK(special.total == "a");
  CHECK(special.stop_index == 0u);
  // After a stop, add() returns nothing but the stop index.
  IncrementalDetokenizer detokenizer(tokenizer, {.stop_strings = {"x"}});
  const std::vector<TokenId> axb = tokenizer->encode("axb").value();
  for (TokenId id : axb) detokenizer.add(id);
  auto after = detokenizer.add(9707);
  CHECK(after.text.empty());
  CHECK(after.stop_index == 0u);
  CHECK(detokenizer.finish().empty());
  CHECK(detokenizer.text() == "a");
}

// Without a stop, the stream must equal the full decode; with one, the output must be a prefix of
// the full decode followed there by that stop string, and hold no stop string anywhere.
TEST_CASE("randomized streaming: valid UTF-8, never a stop string, consistent with the full decode") {
  auto tokenizer = qwen2();
  std::mt19937 rng(20260511);
  // Pieces that split characters across tokens: multilingual text encoded, plus raw random ids.
  const std::vector<std::string> sources = {"你好，世界！今天天气怎么样？", "emoji 🚀🔥👍🏽 and 👨‍👩‍👧‍👦 family",
                                            "Привет, мир! Ελληνικά مرحبا", "café naïve résumé ÅÄÖ",
                                            "def f(a, b):\n    return a + b\n", "<|im_start|>user\nhi<|im_end|>"};
  std::vector<std::vector<TokenId>> source_ids;
  for (const auto& s : sources) source_ids.push_back(tokenizer->encode(s).value());
  std::uniform_int_distribution<TokenId> any_id(0, tokenizer->vocab_size() - 1);
  int stops_hit = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<TokenId> ids;
    const int parts = 1 + static_cast<int>(rng() % 6);
    for (int p = 0; p < parts; ++p) {
      if (rng() % 3 == 0) {
        for (int k = 0; k < 4; ++k) ids.push_back(any_id(rng));
      } else {
        const auto& src = source_ids[rng() % source_ids.size()];
        ids.insert(ids.end(), src.begin(), src.end());
      }
    }
    const std::string full = tokenizer->decode(ids).value();
    // Stop strings: substrings of the full text (cut at character boundaries) and some absent ones.
    std::vector<std::string> stops = {"\x01never"};
    for (int k = 0; k < 2 && !full.empty(); ++k) {
      std::size_t begin = rng() % full.size();
      while (begin > 0 && (static_cast<uint8_t>(full[begin]) & 0xC0) == 0x80) --begin;
      std::size_t end = std::min(full.size(), begin + 1 + rng() % 8);
      while (end < full.size() && (static_cast<uint8_t>(full[end]) & 0xC0) == 0x80) ++end;
      stops.push_back(full.substr(begin, end - begin));
    }
    const Streamed s = stream(tokenizer, ids, {.stop_strings = stops});
    INFO("trial " << trial);
    for (const std::string& delta : s.deltas) {
      CHECK(valid_utf8(delta));
      for (const std::string& stop : stops) CHECK(delta.find(stop) == std::string::npos);
    }
    for (const std::string& stop : stops) CHECK(s.total.find(stop) == std::string::npos);
    if (s.stop_index) {
      ++stops_hit;
      // The text before the stop string is exactly what the full decode has before some occurrence.
      CHECK(full.starts_with(s.total));
      CHECK(full.compare(s.total.size(), stops[*s.stop_index].size(), stops[*s.stop_index]) == 0);
    } else {
      CHECK(s.total == full);
    }
  }
  CHECK(stops_hit > 200);  // the test exercises stops, not only plain streaming
}

// A SentencePiece-style tokenizer (Llama conventions: ▁ for spaces, byte fallback, leading-space
// strip) takes the windowed path, which needs the prompt as context for the first space.
TEST_CASE("windowed decoding for SentencePiece-style decoders, with prompt context") {
  const std::string json = R"({
    "added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null,
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
              "vocab": {"<unk>": 0, "<s>": 1, "▁": 2, "a": 3, "b": 4, "▁a": 5, "▁b": 6, "<0xC3>": 7, "<0xA9>": 8},
              "merges": ["▁ a", "▁ b"]}
  })";
  auto tokenizer = Tokenizer::from_json_text(json).value();
  REQUIRE_FALSE(tokenizer->decodes_per_token());
  const std::vector<TokenId> ids = tokenizer->encode("a b éb").value();
  CHECK(ids == std::vector<TokenId>{5, 6, 2, 7, 8, 4});
  CHECK(tokenizer->decode(ids).value() == "a b éb");
  const Streamed plain = stream(tokenizer, ids, {});
  CHECK(plain.total == "a b éb");
  for (const std::string& delta : plain.deltas) CHECK(valid_utf8(delta));
  // "é" arrives as two byte tokens: nothing is emitted for the first.
  CHECK(plain.deltas[3].empty());
  // With the prompt as context, the first generated token keeps its space.
  const std::vector<TokenId> prompt{1, 5};
  const std::vector<TokenId> generated{6, 2, 7, 8, 4};
  const Streamed continued = stream(tokenizer, generated, {}, prompt);
  CHECK(continued.total == " b éb");
}

}  // namespace
}  // namespace llaisys::text::test

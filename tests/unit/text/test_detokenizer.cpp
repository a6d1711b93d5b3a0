// IncrementalDetokenizer: streamed deltas against full decodes (every reference case), a randomized
// test with a fixed seed (random ids, characters split across tokens, stop strings spanning deltas),
// the windowed path of SentencePiece-style decoders, and invalid UTF-8 from byte tokens: every split
// of adversarial byte sequences into stories260K byte-fallback and Qwen2 byte-level tokens.

#include <functional>
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
  if (!out.stop_index) out.stop_index = detokenizer.stop_index();  // a stop string completed by the final flush
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

// ---- Byte-fallback (SentencePiece) and byte-level (Qwen2) tokens that do not form valid UTF-8 ----
//
// A ByteFallback decoder turns a run of adjacent <0xNN> tokens into its text when the bytes are
// valid UTF-8 and into one U+FFFD per byte otherwise (Hugging Face `tokenizers`), so a byte token can
// change how the earlier ones of its run decode: "very" <0x0F> decodes to "very\x0F", but "very"
// <0x0F> <0xBF> to "very\uFFFD\uFFFD". A ByteLevel decoder repairs the joined bytes with one U+FFFD
// per maximal ill-formed subpart. The streamed text must equal the one-shot decode either way.

// Byte strings that are not (or not only) valid UTF-8, cut into tokens in every possible way below.
const std::vector<std::string>& adversarial_bytes() {
  static const std::vector<std::string> cases = {
      "\xBF",                              // a lone continuation byte
      "a\x80\xBF" "b",                     // continuation bytes between ASCII
      "ry\x0F\xBFx",                       // the reported case: a valid byte run turned invalid by a later byte
      "\x0F\xBF",                          //
      "\xE4\xBD" "a",                      // a truncated 3-byte sequence followed by ASCII
      "\xE4\xBD\xA0\xBF",                  // a complete character followed by a stray continuation
      " \xE4\xBD\xA0 x",                   // a complete character between spaces
      "\xF0\x9F\x9A x",                    // a truncated 4-byte sequence followed by a space
      "\xF0\x9F\x9A\x80",                  // a 4-byte sequence (split across up to 4 tokens)
      "\xF0\x9F\x9A\x80\xF0\x9F",          // a complete 4-byte sequence and a truncated one
      "\xC3\xA9\xC3",                      // a complete 2-byte sequence and a truncated one
      "\xC0\x80",                          // overlong forms
      "\xC1\xBF" "a",                      //
      "\xE0\x80\x80",                      //
      "\xF0\x80\x80\x80",                  //
      "\xED\xA0\x80",                      // surrogates encoded as bytes
      "\xED\xA0\xBD\xED\xB8\x80",          // a surrogate pair (CESU-8)
      "\xED\xBF\xBF" "e",                  //
      "\xEF\xBF\xBD",                      // U+FFFD itself as bytes
      "\xEF\xBF\xBD\xBD",                  //
      "a\xEF\xBF",                         // U+FFFD truncated
      "\xF4\x90\x80\x80",                  // beyond U+10FFFF
      "\xF5\x80" "b",                      // bytes that never start a sequence
      "\xFE\xFF",                          //
  };
  return cases;
}

using PieceTokens = std::function<std::vector<TokenId>(std::string_view)>;

// Every way to cut `bytes` into pieces that are tokens: each piece becomes each id piece_tokens gives.
std::vector<std::vector<TokenId>> all_splits(std::string_view bytes, const PieceTokens& piece_tokens) {
  std::vector<std::vector<TokenId>> out;
  std::vector<TokenId> current;
  std::function<void(std::size_t)> extend = [&](std::size_t pos) {
    if (pos == bytes.size()) {
      out.push_back(current);
      return;
    }
    for (std::size_t length = 1; pos + length <= bytes.size(); ++length) {
      for (TokenId id : piece_tokens(bytes.substr(pos, length))) {
        current.push_back(id);
        extend(pos + length);
        current.pop_back();
      }
    }
  };
  extend(0);
  return out;
}

// stories260K: a single byte is its <0xNN> token; a piece with a vocabulary token ("a", "▁e") is
// that token too.
std::vector<TokenId> stories_piece_tokens(std::string_view piece) {
  std::vector<TokenId> ids;
  if (piece.size() == 1) {
    ids.push_back(stories260k()->token_id(fmt::format("<0x{:02X}>", static_cast<uint8_t>(piece[0]))).value());
  }
  std::string text;
  for (char c : piece) text += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
  if (auto id = stories260k()->token_id(text); id && !stories260k()->is_byte_fallback_token(*id)) ids.push_back(*id);
  return ids;
}

// Qwen2: the token whose byte-level string (GPT-2's bytes_to_unicode) spells the piece, if any; every
// single byte has one.
std::vector<TokenId> qwen2_piece_tokens(std::string_view piece) {
  std::string text;
  for (char c : piece) {
    const auto b = static_cast<uint8_t>(c);
    char32_t cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
      cp = 256;
      for (unsigned other = 0; other < b; ++other) {
        if (!((other >= 0x21 && other <= 0x7E) || (other >= 0xA1 && other <= 0xAC) || other >= 0xAE)) ++cp;
      }
    }
    if (cp < 0x80) {
      text += static_cast<char>(cp);
    } else {
      text += static_cast<char>(0xC0 | (cp >> 6));
      text += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  if (auto id = qwen2()->token_id(text)) return {*id};
  return {};
}

std::string hex_ids(std::span<const TokenId> ids) { return fmt::format("[{}]", fmt::join(ids, ", ")); }

// Streams `generated` (after `prompt`), finishing after every prefix of it: each delta is valid UTF-8
// and, for each prefix, all of them together are expected(prefix).
void check_every_prefix(const std::shared_ptr<const Tokenizer>& tokenizer, std::span<const TokenId> prompt,
                        std::span<const TokenId> generated, bool skip,
                        const std::function<std::string(std::span<const TokenId>)>& expected) {
  for (std::size_t end = 0; end <= generated.size(); ++end) {
    const std::span<const TokenId> ids = generated.first(end);
    const Streamed s = stream(tokenizer, ids, {.skip_special_tokens = skip}, prompt);
    INFO("prompt " << hex_ids(prompt) << ", generated " << hex_ids(ids) << ", skip_special_tokens " << skip);
    bool all_valid = true;
    for (const std::string& delta : s.deltas) all_valid = all_valid && valid_utf8(delta);
    CHECK(all_valid);
    CHECK(s.total == expected(ids));
  }
}

TEST_CASE("stories260K: streaming byte-fallback runs equals the one-shot decode, Hugging Face's rule") {
  auto tokenizer = stories260k();
  REQUIRE_FALSE(tokenizer->decodes_per_token());
  const auto byte = [&](uint8_t b) { return tokenizer->token_id(fmt::format("<0x{:02X}>", b)).value(); };
  // The reported case: "very" <0x0F> was emitted as "very\x0F", then <0xBF> turned the run into two
  // U+FFFD and the stream emitted the last two bytes of the first one ("\xBF\xBD").
  const std::vector<TokenId> very{399, byte(0x0F), byte(0xBF), 444};
  CHECK(tokenizer->decode(very).value() == "very\xEF\xBF\xBD\xEF\xBF\xBDx");
  const Streamed s = stream(tokenizer, very, {});
  CHECK(s.total == "very\xEF\xBF\xBD\xEF\xBF\xBDx");
  for (const std::string& delta : s.deltas) CHECK(valid_utf8(delta));
  // A run is one U+FFFD per byte when invalid, even its ASCII bytes and complete characters.
  CHECK(tokenizer->decode(std::vector<TokenId>{byte(0xE4), byte(0xBD), byte(0xA0), byte(0xBF)}).value() ==
        "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(stream(tokenizer, std::vector<TokenId>{byte(0xE4), byte(0xBD), byte(0xA0), 444, byte(0xBF)}, {}).total ==
        "\xE4\xBD\xA0x\xEF\xBF\xBD");
  // A skipped special token does not end a run (the decoder never sees it); a kept one does.
  const std::vector<TokenId> split_by_eos{byte(0xC3), 2, byte(0xA9)};
  CHECK(stream(tokenizer, split_by_eos, {.skip_special_tokens = true}).total == "\xC3\xA9");
  CHECK(stream(tokenizer, split_by_eos, {.skip_special_tokens = false}).total == "\xEF\xBF\xBD</s>\xEF\xBF\xBD");
}

TEST_CASE("stories260K: every split of adversarial byte sequences streams to the one-shot decode") {
  auto tokenizer = stories260k();
  const TokenId bos = 1, eos = 2, once = 403;  // "<s>", "</s>", "▁Once"
  std::size_t sequences = 0;
  for (const std::string& bytes : adversarial_bytes()) {
    for (const std::vector<TokenId>& ids : all_splits(bytes, stories_piece_tokens)) {
      ++sequences;
      // Without a prompt: the decode of the same ids, whichever prefix the sequence ends after.
      check_every_prefix(tokenizer, {}, ids, true, [&](auto prefix) { return tokenizer->decode(prefix).value(); });
      // After a prompt cut anywhere in the sequence: what the generated ids add after a word. Generated
      // byte tokens start a run of their own (the prompt's open run, if any, does not take them).
      for (std::size_t cut = 0; cut <= ids.size(); ++cut) {
        std::vector<TokenId> prompt{bos, once};
        prompt.insert(prompt.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(cut));
        const std::span<const TokenId> generated = std::span<const TokenId>(ids).subspan(cut);
        const Streamed s = stream(tokenizer, generated, {}, prompt);
        std::vector<TokenId> after_word{once};
        after_word.insert(after_word.end(), generated.begin(), generated.end());
        INFO("prompt " << hex_ids(prompt) << ", generated " << hex_ids(generated));
        CHECK(s.total == tokenizer->decode(after_word).value().substr(4));  // "Once"
        for (const std::string& delta : s.deltas) CHECK(valid_utf8(delta));
      }
    }
    // A special token anywhere: skipped, the run goes on across it; kept, it ends the run.
    const std::vector<TokenId> bytes_only = all_splits(bytes, [&](std::string_view piece) {
      return piece.size() == 1 ? stories_piece_tokens(piece) : std::vector<TokenId>{};
    }).front();
    for (std::size_t at = 0; at <= bytes_only.size(); ++at) {
      std::vector<TokenId> ids = bytes_only;
      ids.insert(ids.begin() + static_cast<std::ptrdiff_t>(at), eos);
      for (bool skip : {true, false}) {
        check_every_prefix(tokenizer, {}, ids, skip,
                           [&](auto prefix) { return tokenizer->decode(prefix, skip).value(); });
      }
    }
  }
  CHECK(sequences == 50);
}

TEST_CASE("stories260K: a prompt that ends in byte tokens gives context, but its run is not continued") {
  auto tokenizer = stories260k();
  const auto byte = [&](uint8_t b) { return tokenizer->token_id(fmt::format("<0x{:02X}>", b)).value(); };
  const std::vector<TokenId> prompt{1, 403, byte(0xE4), byte(0xBD)};  // "Once" + a truncated "你"
  // A word closes the prompt's run, and keeps its leading space.
  CHECK(stream(tokenizer, std::vector<TokenId>{407}, {}, prompt).total == " upon");
  // Generated bytes that would complete the prompt's character are a run of their own.
  CHECK(stream(tokenizer, std::vector<TokenId>{byte(0xA0), 407}, {}, prompt).total == "\xEF\xBF\xBD upon");
  CHECK(stream(tokenizer, std::vector<TokenId>{2, byte(0xE4), byte(0xBD), byte(0xA0)}, {}, prompt).total ==
        "\xE4\xBD\xA0");
}

TEST_CASE("stories260K: streamed Hugging Face decode cases (random ids, byte pieces and specials)") {
  auto tokenizer = stories260k();
  const boost::json::value cases = read_json(data_dir() / "tokenizer-vectors" / "stories260k-cases.json");
  for (const auto& c : cases.at("decode").as_array()) {
    std::vector<TokenId> ids;
    for (const auto& id : c.at("ids").as_array()) ids.push_back(static_cast<TokenId>(id.as_int64()));
    for (bool skip : {true, false}) {
      const std::string expected(c.at(skip ? "text" : "text_with_special").as_string());
      check_every_prefix(tokenizer, {}, ids, skip, [&](auto prefix) {
        return prefix.size() == ids.size() ? expected : tokenizer->decode(prefix, skip).value();
      });
    }
  }
}

TEST_CASE("Qwen2: every split of adversarial byte sequences into byte-level tokens streams to the one-shot decode") {
  auto tokenizer = qwen2();
  REQUIRE(tokenizer->decodes_per_token());
  // The one-shot decode repairs the joined bytes (one U+FFFD per maximal ill-formed subpart).
  const auto ids_of = [](std::string_view bytes) { return all_splits(bytes, qwen2_piece_tokens).back(); };
  CHECK(tokenizer->decode(ids_of("\xE4\xBD" "a")).value() == "\xEF\xBF\xBD" "a");
  CHECK(tokenizer->decode(ids_of("\xED\xA0\x80")).value() == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(tokenizer->decode(ids_of("\xF0\x9F\x9A x")).value() == "\xEF\xBF\xBD x");
  const std::vector<TokenId> prompt = tokenizer->encode("prompt \xE4\xBD").value();  // ends in a truncated character
  std::size_t sequences = 0;
  for (const std::string& bytes : adversarial_bytes()) {
    for (const std::vector<TokenId>& ids : all_splits(bytes, qwen2_piece_tokens)) {
      ++sequences;
      // Byte-level decoding needs no context: with or without a prompt, the decode of the same ids.
      for (std::span<const TokenId> context : {std::span<const TokenId>(), std::span<const TokenId>(prompt)}) {
        check_every_prefix(tokenizer, context, ids, true,
                           [&](auto prefix) { return tokenizer->decode(prefix).value(); });
      }
    }
  }
  CHECK(sequences == 55);
}

// Random ids of stories260K (half of them byte tokens, some special), random prompts and stop strings.
TEST_CASE("stories260K: randomized streaming: valid UTF-8, never a stop string, consistent with the decode") {
  auto tokenizer = stories260k();
  std::mt19937 rng(20261125);
  const auto random_id = [&] {
    const unsigned pick = rng() % 16;
    if (pick == 0) return static_cast<TokenId>(rng() % 3);                 // <unk> <s> </s>
    if (pick < 9) return static_cast<TokenId>(3 + rng() % 256);            // byte tokens
    return static_cast<TokenId>(259 + rng() % (tokenizer->vocab_size() - 259));  // words and pieces
  };
  int stops_hit = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::vector<TokenId> prompt{1, 403};
    const int prompt_extra = static_cast<int>(rng() % 4);
    for (int k = 0; k < prompt_extra; ++k) prompt.push_back(random_id());
    std::vector<TokenId> ids;
    const int length = 1 + static_cast<int>(rng() % 24);
    for (int k = 0; k < length; ++k) ids.push_back(random_id());
    const bool skip = rng() % 4 != 0;
    // The reference for a prompt that ends in byte tokens: the generated ids after a word.
    std::vector<TokenId> after_word{403};
    after_word.insert(after_word.end(), ids.begin(), ids.end());
    const std::string full = tokenizer->decode(after_word, skip).value().substr(4);
    std::vector<std::string> stops = {"\x01never"};
    if (rng() % 3 != 0 && !full.empty()) {
      std::size_t begin = rng() % full.size();
      while (begin > 0 && (static_cast<uint8_t>(full[begin]) & 0xC0) == 0x80) --begin;
      std::size_t end = std::min(full.size(), begin + 1 + rng() % 6);
      while (end < full.size() && (static_cast<uint8_t>(full[end]) & 0xC0) == 0x80) ++end;
      stops.push_back(full.substr(begin, end - begin));
    }
    const Streamed s = stream(tokenizer, ids, {.skip_special_tokens = skip, .stop_strings = stops}, prompt);
    INFO("trial " << trial << ", prompt " << hex_ids(prompt) << ", ids " << hex_ids(ids));
    for (const std::string& delta : s.deltas) {
      CHECK(valid_utf8(delta));
      for (const std::string& stop : stops) CHECK(delta.find(stop) == std::string::npos);
    }
    if (s.stop_index) {
      ++stops_hit;
      CHECK(full.starts_with(s.total));
      CHECK(full.compare(s.total.size(), stops[*s.stop_index].size(), stops[*s.stop_index]) == 0);
    } else {
      CHECK(s.total == full);
    }
  }
  CHECK(stops_hit > 100);
}

}  // namespace
}  // namespace llaisys::text::test

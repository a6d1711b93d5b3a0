// The Qwen2 tokenizer against the reference vectors (llama.cpp's qwen2.inp/.out and transformers.js'
// qwen2-cases.json), plus loading errors and the general tokenizer.json features.

#include <thread>

#include <fmt/format.h>

#include "text_test_support.hpp"

namespace llaisys::text::test {
namespace {

TEST_CASE("every reference case encodes to the expected ids and decodes back") {
  auto tokenizer = qwen2();
  const auto cases = tokenizer_cases();
  REQUIRE(cases.size() == 56 + 46);
  std::size_t failures = 0;
  for (const TokenizerCase& c : cases) {
    auto ids = tokenizer->encode(c.text);
    REQUIRE(ids.ok());
    auto text = tokenizer->decode(c.ids, /*skip_special_tokens=*/false);
    REQUIRE(text.ok());
    if (ids.value() != c.ids || text.value() != c.decoded) {
      ++failures;
      UNSCOPED_INFO(fmt::format("text {:?}: ids [{}] expected [{}]; decoded {:?}", c.text, fmt::join(ids.value(), " "),
                                fmt::join(c.ids, " "), text.value()));
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("concurrent encodes through one tokenizer agree with the reference (shared word cache)") {
  auto tokenizer = qwen2();
  const auto cases = tokenizer_cases();
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (std::size_t i = static_cast<std::size_t>(t); i < cases.size(); i += 2) {
          auto ids = tokenizer->encode(cases[i].text);
          if (!ids.ok() || ids.value() != cases[i].ids) ++failures[static_cast<std::size_t>(t)];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == std::vector<int>(4, 0));
}

TEST_CASE("special tokens in text are recognised, and skip_special_tokens drops only special ones") {
  auto tokenizer = qwen2();
  auto ids = tokenizer->encode("<|im_start|>user\nhi<|im_end|><tool_call>");
  REQUIRE(ids.ok());
  CHECK(ids.value() == std::vector<TokenId>{151644, 872, 198, 6023, 151645, 151657});
  CHECK(tokenizer->decode(ids.value()).value() == "user\nhi<tool_call>");
  CHECK(tokenizer->decode(ids.value(), false).value() == "<|im_start|>user\nhi<|im_end|><tool_call>");
  CHECK(tokenizer->is_special(151644));
  CHECK_FALSE(tokenizer->is_special(151657));  // <tool_call> is added but not special
  CHECK_FALSE(tokenizer->is_special(9707));
}

TEST_CASE("vocabulary lookups and config tokens") {
  auto tokenizer = qwen2();
  CHECK(tokenizer->vocab_size() == 151665);
  CHECK(tokenizer->token_id("Ġthe") == 279);
  CHECK(tokenizer->token_id("<|im_end|>") == 151645);
  CHECK_FALSE(tokenizer->token_id("no such token").has_value());
  CHECK(tokenizer->token_text(279) == "Ġthe");
  CHECK(tokenizer->token_text(151643) == "<|endoftext|>");
  CHECK_FALSE(tokenizer->token_text(151665).has_value());
  CHECK_FALSE(tokenizer->token_text(-1).has_value());
  CHECK(tokenizer->eos_token_id() == 151645);  // tokenizer_config.json: eos_token <|im_end|>
  CHECK_FALSE(tokenizer->bos_token_id().has_value());  // bos_token null
}

TEST_CASE("decode rejects out-of-range ids and repairs invalid UTF-8") {
  auto tokenizer = qwen2();
  const std::vector<TokenId> bad{9707, 151665};
  auto result = tokenizer->decode(bad);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == ErrorCode::invalid_argument);
  CHECK_THAT(result.status().message(), Catch::Contains("151665"));
  const std::vector<TokenId> negative{-5};
  CHECK_FALSE(tokenizer->decode(negative).ok());
  // " 🚀" is 20 F0 9F 9A 80 = ids [11162, 248, 222] (" F0 9F", "9A", "80"). Dropping the middle id
  // leaves F0 9F 80 before "Hello": one maximal ill-formed subpart, so one U+FFFD (as Rust's lossy
  // conversion); a stray continuation byte alone is another one.
  const std::vector<TokenId> broken{11162, 222, 9707};
  CHECK(tokenizer->decode(broken).value() == " \xEF\xBF\xBDHello");
  const std::vector<TokenId> stray{222, 222};
  CHECK(tokenizer->decode(stray).value() == "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("invalid UTF-8 input is encoded as U+FFFD") {
  auto tokenizer = qwen2();
  auto repaired = tokenizer->encode("a\xFF" "b");
  auto expected = tokenizer->encode("a\xEF\xBF\xBD" "b");
  REQUIRE(repaired.ok());
  CHECK(repaired.value() == expected.value());
}

TEST_CASE("long inputs without spaces use the heap merge and agree with the array merge") {
  auto tokenizer = qwen2();
  // 300 CJK characters make one 900-byte pre-token (above the array-merge limit); the same text cut
  // by a special token into short words is an independent check through the other merge path.
  std::string word;
  for (int i = 0; i < 50; ++i) word += "今天天气怎么样";
  auto whole = tokenizer->encode(word);
  REQUIRE(whole.ok());
  std::string rebuilt = tokenizer->decode(whole.value()).value();
  CHECK(rebuilt == word);
  auto one = tokenizer->encode("今天天气怎么样");
  // The long word's ids repeat the short word's ids (no merge crosses the repetition boundary here).
  std::vector<TokenId> repeated;
  for (int i = 0; i < 50; ++i) repeated.insert(repeated.end(), one->begin(), one->end());
  CHECK(whole.value() == repeated);
}

TEST_CASE("malformed tokenizer.json files give clear errors") {
  struct Bad {
    std::string json;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {"", "not valid JSON"},
      {"[1, 2]", "must hold an object"},
      {R"({"model": 3})", "'model' must be an object"},
      {R"({"model": {"type": "WordPiece", "vocab": {}}})", "model type \"WordPiece\" is not supported"},
      {R"({"model": {"type": "BPE", "merges": []}})", "'vocab' must be an object"},
      {R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})", "must be a token id"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})", "id 0 is used by"},
      // found by fuzz_tokenizer_json: huge ids would allocate gigabytes of dense tables
      {R"({"model": {"type": "BPE", "vocab": {"a": 200000000}, "merges": []}})", "too sparse"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
           "added_tokens": [{"id": 200000000, "content": "x"}]})", "'id' must be a token id below"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})", "merged token 'ab' is not in"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}})", "not two tokens"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "zz"]]}})", "'zz' is not in the vocabulary"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Magic"}})",
       "normalizer type 'Magic' is not supported"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
           "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"}})",
       "invalid regular expression"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
           "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"}})",
       "unknown behavior 'Sideways'"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1}]})",
       "'content' must be a non-empty string"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}})",
       "unk_token '<unk>' is not in the vocabulary"},
  };
  for (const Bad& bad : cases) {
    auto tokenizer = Tokenizer::from_json_text(bad.json);
    INFO(bad.json);
    REQUIRE_FALSE(tokenizer.ok());
    CHECK_THAT(tokenizer.status().message(), Catch::Contains(bad.message));
  }
  auto missing = Tokenizer::from_model_dir(data_dir() / "no-such-dir");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::not_found);
}

// A tiny hand-made tokenizer exercising what Qwen2 does not use: merges as pairs, unk + fuse_unk,
// continuing-subword prefix, added-token flags, the template post-processor.
TEST_CASE("general BPE features of tokenizer.json") {
  const std::string json = R"({
    "added_tokens": [
      {"id": 10, "content": "<s>", "special": true, "normalized": false},
      {"id": 11, "content": "[X]", "special": false, "normalized": false, "lstrip": true, "rstrip": true},
      {"id": 12, "content": "cat", "special": false, "normalized": true, "single_word": true}
    ],
    "normalizer": null,
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed"},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [10], "tokens": ["<s>"]}}},
    "decoder": null,
    "model": {"type": "BPE", "unk_token": "?", "fuse_unk": true, "continuing_subword_prefix": "##",
      "vocab": {"?": 0, "a": 1, "##b": 2, "ab": 3, "##c": 4, "abc": 5, "c": 6, "##a": 7},
      "merges": [["a", "##b"], "ab ##c"]}
  })";
  auto loaded = Tokenizer::from_json_text(json);
  REQUIRE(loaded.ok());
  auto tokenizer = loaded.value();
  CHECK(tokenizer->encode("abc").value() == std::vector<TokenId>{5});
  CHECK(tokenizer->encode("ab ca").value() == std::vector<TokenId>{3, 6, 7});
  CHECK(tokenizer->encode("axyb").value() == std::vector<TokenId>{1, 0, 2});  // x, y fused into one unk
  CHECK(tokenizer->encode("abc", true).value() == std::vector<TokenId>{10, 5});
  // lstrip/rstrip swallow the spaces around [X]
  CHECK(tokenizer->encode("ab  [X]  c").value() == std::vector<TokenId>{3, 11, 6});
  // single_word: "cat" only as a whole word
  CHECK(tokenizer->encode("a cat").value() == std::vector<TokenId>{1, 12});
  CHECK(tokenizer->encode("acat").value() != std::vector<TokenId>{1, 12});
  // no decoder: tokens joined by spaces (Hugging Face's fallback)
  const std::vector<TokenId> ids{3, 6};
  CHECK(tokenizer->decode(ids).value() == "ab c");
}

}  // namespace
}  // namespace llaisys::text::test

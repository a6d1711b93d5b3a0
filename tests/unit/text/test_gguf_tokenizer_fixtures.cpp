// The tokenizers of real GGUF files against the Hugging Face files of the same vocabularies:
// tests/data/qwen2-vocab-gguf (Qwen2's byte-level BPE, the "qwen2" pre-tokenizer, its chat template)
// against tests/data/qwen2-tokenizer, and tests/data/tiny-llama-gguf (stories260K's SentencePiece
// vocabulary with scores) against the tokenizer.json beside it.

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "llaisys/model/gguf.hpp"
#include "llaisys/text/gguf_tokenizer.hpp"
#include "text_test_support.hpp"

namespace llaisys::text::test {
namespace {
namespace json = boost::json;

// The metadata of a GGUF file (its values own their strings; the file's bytes can go).
std::vector<gguf::KeyValue> read_metadata(const std::filesystem::path& path) {
  const std::string text = read_text(path);
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  auto file = gguf::File::parse(std::span<const std::byte>(begin, text.size()), path.string());
  if (!file.ok()) FAIL(file.status().to_string());
  return file->metadata();
}

const std::vector<gguf::KeyValue>& qwen2_metadata() {
  static const std::vector<gguf::KeyValue> metadata = read_metadata(data_dir() / "qwen2-vocab-gguf" / "qwen2-vocab.gguf");
  return metadata;
}

const std::vector<gguf::KeyValue>& tiny_llama_metadata() {
  static const std::vector<gguf::KeyValue> metadata =
      read_metadata(data_dir() / "tiny-llama-gguf" / "tiny-llama-F32.gguf");
  return metadata;
}

std::shared_ptr<const Tokenizer> from_gguf(const std::vector<gguf::KeyValue>& metadata) {
  auto tokenizer = tokenizer_from_gguf(metadata);
  if (!tokenizer.ok()) FAIL(tokenizer.status().to_string());
  return tokenizer.value();
}

std::vector<TokenId> ids_of(const json::value& array) {
  std::vector<TokenId> ids;
  for (const auto& id : array.as_array()) ids.push_back(static_cast<TokenId>(id.as_int64()));
  return ids;
}

TEST_CASE("qwen2-vocab.gguf: every reference case encodes and decodes as Qwen2's tokenizer.json", "[text][gguf]") {
  auto files = gguf_tokenizer_files(qwen2_metadata());
  REQUIRE(files.ok());
  CHECK(files->num_tokens == 151936);
  CHECK(files->bos_id == 151643);
  CHECK(files->eos_id == 151645);
  CHECK(files->pad_id == 151643);
  CHECK_FALSE(files->add_bos);
  CHECK(files->stop_ids == std::vector<TokenId>{151645});
  auto tokenizer = from_gguf(qwen2_metadata());
  const auto cases = tokenizer_cases();
  REQUIRE(cases.size() == 56 + 46);
  std::size_t failures = 0;
  for (const TokenizerCase& c : cases) {
    auto ids = tokenizer->encode(c.text);
    auto with_special = tokenizer->encode(c.text, true);
    auto text = tokenizer->decode(c.ids, /*skip_special_tokens=*/false);
    REQUIRE(ids.ok());
    REQUIRE(text.ok());
    if (ids.value() != c.ids || with_special.value() != c.ids || text.value() != c.decoded) {
      ++failures;
      UNSCOPED_INFO(fmt::format("text {:?}: ids [{}] expected [{}]; decoded {:?}", c.text, fmt::join(ids.value(), " "),
                                fmt::join(c.ids, " "), text.value()));
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("qwen2-vocab.gguf: the same vocabulary and special tokens as tokenizer.json, plus the padding rows",
          "[text][gguf]") {
  auto gguf_tokenizer = from_gguf(qwen2_metadata());
  auto hf = qwen2();
  CHECK(gguf_tokenizer->vocab_size() == 151936);  // the embedding rows; tokenizer.json stops at 151665
  std::size_t mismatches = 0;
  for (TokenId id = 0; id < hf->vocab_size(); ++id) mismatches += gguf_tokenizer->token_text(id) != hf->token_text(id);
  CHECK(mismatches == 0);
  CHECK(gguf_tokenizer->token_text(151665) == "[PAD151665]");
  CHECK(gguf_tokenizer->encode("[PAD151665]").value() == hf->encode("[PAD151665]").value());
  // Control tokens are special; the converter made the FIM tokens control, <tool_call> user-defined.
  CHECK(gguf_tokenizer->is_special(151645));
  CHECK(gguf_tokenizer->is_special(151659));
  CHECK_FALSE(gguf_tokenizer->is_special(151657));
  const std::string chat = "<|im_start|>user\nhi<|im_end|><tool_call>\n<|fim_prefix|>x";
  CHECK(gguf_tokenizer->encode(chat).value() == hf->encode(chat).value());
  CHECK(gguf_tokenizer->bos_token_id() == 151643);
  CHECK(gguf_tokenizer->eos_token_id() == 151645);
}

// As test_chat_template.cpp: expected.json was rendered with strftime_now fixed to 2026-11-22.
ChatRenderOptions options_for(const json::object& conversation) {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 22;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  ChatRenderOptions options;
  options.now = std::chrono::system_clock::from_time_t(std::mktime(&tm));
  if (const json::value* tools = conversation.if_contains("tools")) options.tools = *tools;
  if (const json::value* gen = conversation.if_contains("add_generation_prompt")) options.add_generation_prompt = gen->as_bool();
  return options;
}

TEST_CASE("qwen2-vocab.gguf: its chat template renders as tokenizer_config.json's", "[text][gguf]") {
  auto from_gguf_file = chat_template_from_gguf(qwen2_metadata());
  REQUIRE(from_gguf_file.ok());
  auto from_dir = ChatTemplate::from_model_dir(qwen2_dir());
  REQUIRE(from_dir.ok());
  CHECK(from_gguf_file->source() == from_dir->source());
  const json::value expected = read_json(data_dir() / "chat-templates" / "expected.json");
  const json::object& conversations = expected.at("conversations").as_object();
  const json::object& renderings = expected.at("expected").at("Qwen-Qwen2.5-7B-Instruct.jinja").as_object();
  REQUIRE(renderings.size() == 6);
  auto tokenizer = from_gguf(qwen2_metadata());
  for (const auto& [name, want] : renderings) {
    INFO(std::string(name));
    const json::object& conversation = conversations.at(name).as_object();
    auto got = from_gguf_file->render(conversation.at("messages"), options_for(conversation));
    REQUIRE(got.ok());
    CHECK(got.value() == std::string(want.at("text").as_string()));
    CHECK(got.value() == from_dir->render(conversation.at("messages"), options_for(conversation)).value());
    // And the rendered prompt tokenizes the same both ways.
    CHECK(tokenizer->encode(got.value()).value() == qwen2()->encode(got.value()).value());
  }
  // The file's tokenizer_config.json carries it too.
  auto files = gguf_tokenizer_files(qwen2_metadata());
  REQUIRE(files.ok());
  auto from_config = ChatTemplate::from_config_json(files->tokenizer_config_json);
  REQUIRE(from_config.ok());
  CHECK(from_config->source() == from_dir->source());
}

std::shared_ptr<const Tokenizer> tiny_llama_hf() {
  static const std::shared_ptr<const Tokenizer> tokenizer = [] {
    auto loaded = Tokenizer::from_model_dir(data_dir() / "tiny-llama-gguf");
    if (!loaded.ok()) FAIL(loaded.status().to_string());
    return loaded.value();
  }();
  return tokenizer;
}

TEST_CASE("tiny-llama-F32.gguf: the generated tokenizer.json has the vocabulary and merges of the HF one", "[text][gguf]") {
  auto files = gguf_tokenizer_files(tiny_llama_metadata());
  REQUIRE(files.ok());
  const json::value got = json::parse(files->tokenizer_json);
  const json::value want = read_json(data_dir() / "tiny-llama-gguf" / "tokenizer.json");
  CHECK(got.at("model").at("vocab") == want.at("model").at("vocab"));
  CHECK(got.at("model").at("merges") == want.at("model").at("merges"));  // same order: same ranks
  for (const char* key : {"unk_token", "fuse_unk", "byte_fallback"}) {
    CHECK(got.at("model").at(key) == want.at("model").at(key));
  }
  CHECK(got.at("normalizer") == want.at("normalizer"));
  CHECK(got.at("decoder") == want.at("decoder"));
  CHECK(got.at("pre_tokenizer").is_null());
  CHECK(got.at("added_tokens") == want.at("added_tokens"));
  CHECK(files->bos_id == 1);
  CHECK(files->eos_id == 2);
  CHECK(files->unk_id == 0);
  CHECK(files->add_bos);
  CHECK_FALSE(files->add_eos);
  CHECK(files->stop_ids == std::vector<TokenId>{2});
}

TEST_CASE("tiny-llama-F32.gguf: encodes and decodes as the HF tokenizer.json, reference prompts included", "[text][gguf]") {
  auto tokenizer = from_gguf(tiny_llama_metadata());
  auto hf = tiny_llama_hf();
  const std::vector<std::string> texts = {
      "", " ", "  ", "Once upon a time", " Once upon a time", "Once  upon\ta time ", "a\nb\n\nc\r\n",
      "\n\nThe end.\n", "Lily said, \"Mom, can I play?\"", "3 apples and 12 cookies: 15!",
      "café naïve résumé", "日本語のテキスト", "emoji 🦙🎉 and ☃", "mixed\u00A0nbsp and \u2028 separators",
      "<s>Once</s> upon<unk>", "< s >", "\xF0\x9F\x98\x80\xF0\x9F\x98\x80 tail", "▁already▁escaped",
  };
  std::size_t checked = 0;
  for (const std::string& text : texts) {
    INFO(fmt::format("text {:?}", text));
    for (const bool special : {false, true}) {
      const std::vector<TokenId> ids = tokenizer->encode(text, special).value();
      CHECK(ids == hf->encode(text, special).value());
      CHECK(tokenizer->decode(ids).value() == hf->decode(ids).value());
      CHECK(tokenizer->decode(ids, false).value() == hf->decode(ids, false).value());
      ++checked;
    }
    // SentencePiece round trip: what we encode decodes back (special tokens in the text, and "▁",
    // which decodes as a space, aside).
    if (text.find('<') == std::string::npos && text.find("▁") == std::string::npos) {
      CHECK(tokenizer->decode(tokenizer->encode(text).value()).value() == text);
    }
  }
  CHECK(checked == 2 * texts.size());
  // Characters outside the 512 pieces fall back to bytes.
  const std::vector<TokenId> ids = tokenizer->encode("日").value();
  REQUIRE(ids.size() >= 3);
  CHECK(std::vector<TokenId>(ids.end() - 3, ids.end()) == std::vector<TokenId>{3 + 0xE6, 3 + 0x97, 3 + 0xA5});

  // The prompts llama.cpp tokenized from this file's vocabulary (with BOS).
  const json::value reference = read_json(data_dir() / "tiny-llama-gguf" / "reference-F32.json");
  std::size_t prompts = 0;
  for (const auto& c : reference.at("cases").as_array()) {
    const std::string text(c.at("text").as_string());
    INFO(std::string(c.at("name").as_string()));
    CHECK(tokenizer->encode(text, true).value() == ids_of(c.at("prompt_ids")));
    CHECK(tokenizer->decode(ids_of(c.at("prompt_ids"))).value() == text);
    ++prompts;
  }
  CHECK(prompts == 5);
}

TEST_CASE("tiny-llama-F32.gguf: the stories260K cases of Hugging Face tokenizers", "[text][gguf]") {
  // The same 512-piece vocabulary as models/stories260K (stories260k-cases.json).
  auto tokenizer = from_gguf(tiny_llama_metadata());
  const json::value cases = read_json(data_dir() / "tokenizer-vectors" / "stories260k-cases.json");
  int checked = 0;
  for (const auto& c : cases.at("encode").as_array()) {
    const std::string text(c.at("text").as_string());
    INFO(fmt::format("text {:?}", text));
    CHECK(tokenizer->encode(text).value() == ids_of(c.at("ids")));
    const std::vector<TokenId> with_special = ids_of(c.at("ids_with_special"));
    CHECK(tokenizer->encode(text, true).value() == with_special);
    CHECK(tokenizer->decode(with_special).value() == std::string(c.at("decoded").as_string()));
    ++checked;
  }
  for (const auto& c : cases.at("decode").as_array()) {
    const std::vector<TokenId> ids = ids_of(c.at("ids"));
    INFO(fmt::format("ids {}", fmt::join(ids, ", ")));
    CHECK(tokenizer->decode(ids, true).value() == std::string(c.at("text").as_string()));
    CHECK(tokenizer->decode(ids, false).value() == std::string(c.at("text_with_special").as_string()));
    ++checked;
  }
  CHECK(checked == 240);
}

}  // namespace
}  // namespace llaisys::text::test

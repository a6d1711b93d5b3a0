// The tokenizer of a GGUF file's metadata (gguf_tokenizer.hpp) on hand-built metadata: a tiny
// byte-level BPE ("gpt2") and a tiny SentencePiece BPE ("llama") vocabulary encode and decode as
// their Hugging Face equivalents would, chat templates and stop ids come through, and every way the
// metadata can be wrong is a clear error. The real files are in test_gguf_tokenizer_fixtures.cpp.

#include <fmt/format.h>

#include "llaisys/text/gguf_tokenizer.hpp"
#include "text_test_support.hpp"

namespace llaisys::text::test {
namespace {

using gguf::Value;
using gguf::ValueType;

Value string_value(std::string s) {
  Value v;
  v.type = ValueType::string;
  v.s = std::move(s);
  return v;
}
Value u32_value(uint32_t x) {
  Value v;
  v.type = ValueType::u32;
  v.u = x;
  return v;
}
Value bool_value(bool b) {
  Value v;
  v.type = ValueType::boolean;
  v.b = b;
  return v;
}
Value array_value(ValueType element_type, std::vector<Value> items) {
  Value v;
  v.type = ValueType::array;
  v.array = std::make_shared<const gguf::Array>(gguf::Array{.element_type = element_type, .items = std::move(items)});
  return v;
}
Value strings_value(const std::vector<std::string>& strings) {
  std::vector<Value> items;
  for (const std::string& s : strings) items.push_back(string_value(s));
  return array_value(ValueType::string, std::move(items));
}
Value i32s_value(const std::vector<int32_t>& numbers) {
  std::vector<Value> items;
  for (const int32_t n : numbers) {
    Value v;
    v.type = ValueType::i32;
    v.i = n;
    items.push_back(v);
  }
  return array_value(ValueType::i32, std::move(items));
}
Value f32s_value(const std::vector<float>& numbers) {
  std::vector<Value> items;
  for (const float n : numbers) {
    Value v;
    v.type = ValueType::f32;
    v.f = n;
    items.push_back(v);
  }
  return array_value(ValueType::f32, std::move(items));
}

// GGUF metadata built by hand, keys in the order set.
struct Metadata {
  std::vector<gguf::KeyValue> entries;

  Metadata& set(std::string key, Value value) {
    for (gguf::KeyValue& kv : entries) {
      if (kv.key == key) {
        kv.value = std::move(value);
        return *this;
      }
    }
    entries.push_back({std::move(key), std::move(value)});
    return *this;
  }
  Metadata& erase(std::string_view key) {
    std::erase_if(entries, [&](const gguf::KeyValue& kv) { return kv.key == key; });
    return *this;
  }
  std::span<const gguf::KeyValue> span() const { return entries; }
};

// GPT-2's byte-level alphabet: the character standing for each byte.
std::vector<std::string> byte_alphabet() {
  std::vector<std::string> chars(256);
  unsigned next = 256;
  for (unsigned b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const unsigned cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    chars[b] = s;
  }
  return chars;
}

// Ids 0-255: the byte alphabet (id = byte); then merged tokens, special tokens and a pad.
constexpr TokenId kHello = 259, kWorld = 264, kTwelve = 265, kEndOfText = 266, kImStart = 267, kImEnd = 268,
                  kTool = 269, kPad = 270;

Metadata gpt2_metadata(std::string pre = "qwen2") {
  std::vector<std::string> tokens = byte_alphabet();
  for (const char* t : {"he", "ll", "hell", "hello", "Ġw", "or", "Ġwor", "ld", "Ġworld", "12", "<|endoftext|>",
                        "<|im_start|>", "<|im_end|>", "<tool>", "[PAD270]"}) {
    tokens.emplace_back(t);
  }
  std::vector<int32_t> types(tokens.size(), 1);
  types[kEndOfText] = types[kImStart] = types[kImEnd] = 3;
  types[kTool] = 4;
  types[kPad] = 5;
  Metadata m;
  m.set("general.architecture", string_value("qwen2"))
      .set("tokenizer.ggml.model", string_value("gpt2"))
      .set("tokenizer.ggml.pre", string_value(std::move(pre)))
      .set("tokenizer.ggml.tokens", strings_value(tokens))
      .set("tokenizer.ggml.token_type", i32s_value(types))
      .set("tokenizer.ggml.merges", strings_value({"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d",
                                                   "Ġwor ld", "1 2"}))
      .set("tokenizer.ggml.bos_token_id", u32_value(kEndOfText))
      .set("tokenizer.ggml.eos_token_id", u32_value(kImEnd));
  return m;
}

// The SentencePiece layout of Llama: <unk> <s> </s>, 256 byte pieces, then pieces with scores.
constexpr TokenId kFirstPiece = 259;
const std::vector<std::pair<std::string, float>> kPieces = {
    {"▁", -100}, {"h", -101}, {"e", -102}, {"l", -103}, {"o", -104}, {"w", -105}, {"r", -106}, {"d", -107},
    {"he", -10}, {"ll", -11}, {"▁he", -12}, {"llo", -13}, {"▁hello", -14}, {"▁w", -15}, {"or", -16},
    {"▁wor", -17}, {"ld", -18}, {"▁world", -19}, {"<tool>", 0}};
TokenId piece(std::string_view text) {
  for (std::size_t i = 0; i < kPieces.size(); ++i) {
    if (kPieces[i].first == text) return kFirstPiece + static_cast<TokenId>(i);
  }
  FAIL("no piece " << text);
  return -1;
}
TokenId byte_piece(uint8_t b) { return 3 + b; }

Metadata llama_metadata() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  for (unsigned b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);
    scores.push_back(0);
  }
  for (const auto& [text, score] : kPieces) {
    tokens.push_back(text);
    types.push_back(text == "<tool>" ? 4 : 1);
    scores.push_back(score);
  }
  Metadata m;
  m.set("tokenizer.ggml.model", string_value("llama"))
      .set("tokenizer.ggml.pre", string_value("default"))
      .set("tokenizer.ggml.tokens", strings_value(tokens))
      .set("tokenizer.ggml.scores", f32s_value(scores))
      .set("tokenizer.ggml.token_type", i32s_value(types));
  return m;
}

std::shared_ptr<const Tokenizer> load(const Metadata& m) {
  auto tokenizer = tokenizer_from_gguf(m.span());
  if (!tokenizer.ok()) FAIL(tokenizer.status().to_string());
  return tokenizer.value();
}

std::vector<TokenId> encode(const Tokenizer& tokenizer, std::string_view text, bool add_special = false) {
  auto ids = tokenizer.encode(text, add_special);
  if (!ids.ok()) FAIL(ids.status().to_string());
  return ids.value();
}

std::string decode(const Tokenizer& tokenizer, const std::vector<TokenId>& ids, bool skip_special = true) {
  auto text = tokenizer.decode(ids, skip_special);
  if (!text.ok()) FAIL(text.status().to_string());
  return text.value();
}

// The error a broken metadata set gives; FAILs when it loads.
Status load_error(const Metadata& m) {
  auto files = gguf_tokenizer_files(m.span());
  if (files.ok()) {
    auto tokenizer = Tokenizer::from_json_text(files->tokenizer_json, files->tokenizer_config_json);
    if (tokenizer.ok()) FAIL("loaded");
    FAIL("the generated JSON does not load: " << tokenizer.status().to_string());
  }
  return files.status();
}

void check_error(const Metadata& m, ErrorCode code, std::initializer_list<std::string_view> words) {
  const Status status = load_error(m);
  INFO(status.to_string());
  CHECK(status.code() == code);
  for (std::string_view word : words) CHECK(status.message().find(word) != std::string::npos);
}

TEST_CASE("gguf gpt2: byte-level BPE with the qwen2 pre-tokenizer", "[text][gguf]") {
  auto tokenizer = load(gpt2_metadata());
  CHECK(encode(*tokenizer, "hello world") == std::vector<TokenId>{kHello, kWorld});
  const std::vector<TokenId> chat = encode(*tokenizer, "<|im_start|>hello<tool> world<|im_end|>");
  CHECK(chat == std::vector<TokenId>{kImStart, kHello, kTool, kWorld, kImEnd});
  CHECK(decode(*tokenizer, chat) == "hello<tool> world");  // control tokens skipped, user-defined kept
  CHECK(decode(*tokenizer, chat, false) == "<|im_start|>hello<tool> world<|im_end|>");
  CHECK(tokenizer->is_special(kImEnd));
  CHECK_FALSE(tokenizer->is_special(kTool));
  // qwen2 splits digits one by one: "12" is never merged.
  CHECK(encode(*tokenizer, "12") == std::vector<TokenId>{'1', '2'});
  // Bytes outside the merges stay byte-level characters; NFC first (e + combining acute -> é).
  CHECK(encode(*tokenizer, "e\xCC\x81") == std::vector<TokenId>{0xC3, 0xA9});
  CHECK(decode(*tokenizer, {0xC3, 0xA9}) == "é");
  CHECK(encode(*tokenizer, " \n") == std::vector<TokenId>{' ', '\n'});
  // The pad is a valid id that nothing encodes to; vocab_size covers every row.
  CHECK(tokenizer->vocab_size() == kPad + 1);
  CHECK(tokenizer->is_valid_id(kPad));
  CHECK(encode(*tokenizer, "[PAD270]").size() > 1);
  // add_bos_token absent: qwen2 adds nothing.
  CHECK(encode(*tokenizer, "hello", true) == std::vector<TokenId>{kHello});
  CHECK(tokenizer->bos_token_id() == kEndOfText);
  CHECK(tokenizer->eos_token_id() == kImEnd);
}

TEST_CASE("gguf gpt2: the pre-tokenizer follows tokenizer.ggml.pre", "[text][gguf]") {
  // Llama 3: up to three digits in one piece, merges ignored for whole-token pieces, BOS added.
  auto llama3 = load(gpt2_metadata("llama-bpe"));
  CHECK(encode(*llama3, "12") == std::vector<TokenId>{kTwelve});
  CHECK(encode(*llama3, "hello world", true) == std::vector<TokenId>{kEndOfText, kHello, kWorld});
  auto gpt2 = load(gpt2_metadata("gpt-2"));
  CHECK(encode(*gpt2, "12 hello world") == std::vector<TokenId>{kTwelve, ' ', kHello, kWorld});
  CHECK(encode(*gpt2, "hello", true) == std::vector<TokenId>{kHello});
  auto digits = load(gpt2_metadata("starcoder"));
  CHECK(encode(*digits, "12") == std::vector<TokenId>{'1', '2'});
  // llama.cpp's "default": punctuation runs are their own pieces, then GPT-2's split.
  auto fallback = load(gpt2_metadata("default"));
  CHECK(encode(*fallback, "hello world!!") == std::vector<TokenId>{kHello, kWorld, '!', '!'});
  CHECK(encode(*fallback, "12") == std::vector<TokenId>{kTwelve});
  // add_bos_token in the file wins over the pre-tokenizer's default.
  auto no_bos = load(gpt2_metadata("llama-bpe").set("tokenizer.ggml.add_bos_token", bool_value(false)));
  CHECK(encode(*no_bos, "hello", true) == std::vector<TokenId>{kHello});
  auto with_eos = load(gpt2_metadata().set("tokenizer.ggml.add_eos_token", bool_value(true)));
  CHECK(encode(*with_eos, "hello", true) == std::vector<TokenId>{kHello, kImEnd});
  for (std::string_view name : {"qwen2", "llama-bpe", "gpt-2", "default"}) {
    CHECK(std::find(gguf_pre_tokenizer_names().begin(), gguf_pre_tokenizer_names().end(), name) !=
          gguf_pre_tokenizer_names().end());
  }
}

TEST_CASE("gguf gpt2: stop ids are eos, eot and eom, each once", "[text][gguf]") {
  auto files = gguf_tokenizer_files(gpt2_metadata().span());
  REQUIRE(files.ok());
  CHECK(files->stop_ids == std::vector<TokenId>{kImEnd});
  CHECK(files->num_tokens == kPad + 1);
  CHECK_FALSE(files->eot_id.has_value());
  auto with_eot = gguf_tokenizer_files(gpt2_metadata()
                                           .set("tokenizer.ggml.eot_token_id", u32_value(kEndOfText))
                                           .set("tokenizer.ggml.eom_token_id", u32_value(kImEnd))
                                           .span());
  REQUIRE(with_eot.ok());
  CHECK(with_eot->eot_id == kEndOfText);
  CHECK(with_eot->stop_ids == std::vector<TokenId>{kImEnd, kEndOfText});
  // The config names the tokens by their text, as a Hugging Face tokenizer_config.json does.
  const boost::json::value config = boost::json::parse(files->tokenizer_config_json);
  CHECK(config.at("bos_token").as_string() == "<|endoftext|>");
  CHECK(config.at("eos_token").as_string() == "<|im_end|>");
  CHECK(config.at("pad_token").is_null());
  CHECK(config.at("add_bos_token").as_bool() == false);
  CHECK_FALSE(config.as_object().contains("chat_template"));
}

TEST_CASE("gguf llama: SentencePiece BPE with scores, byte fallback and the legacy space handling", "[text][gguf]") {
  auto tokenizer = load(llama_metadata());
  CHECK(encode(*tokenizer, "hello world") == std::vector<TokenId>{piece("▁hello"), piece("▁world")});
  // llama.cpp's defaults: BOS 1 added, EOS 2, UNK 0.
  CHECK(encode(*tokenizer, "hello world", true) == std::vector<TokenId>{1, piece("▁hello"), piece("▁world")});
  CHECK(tokenizer->bos_token_id() == 1);
  CHECK(tokenizer->eos_token_id() == 2);
  // Characters outside the vocabulary fall back to their UTF-8 bytes.
  const std::vector<TokenId> accented = encode(*tokenizer, "héllo");
  CHECK(accented == std::vector<TokenId>{piece("▁"), piece("h"), byte_piece(0xC3), byte_piece(0xA9), piece("llo")});
  CHECK(decode(*tokenizer, accented) == "héllo");
  const std::vector<TokenId> lines = encode(*tokenizer, "hello\nworld");
  CHECK(lines == std::vector<TokenId>{piece("▁hello"), byte_piece('\n'), piece("w"), piece("or"), piece("ld")});
  CHECK(decode(*tokenizer, lines) == "hello\nworld");
  // Special and user-defined tokens in the text; the text after one gets its own "▁" (so " world"
  // becomes "▁▁world", as in transformers' legacy Llama tokenizer and llama.cpp).
  CHECK(encode(*tokenizer, "<s>hello<tool> world") ==
        std::vector<TokenId>{1, piece("▁hello"), piece("<tool>"), piece("▁"), piece("▁world")});
  CHECK(decode(*tokenizer, {1, piece("▁hello"), piece("▁world"), 2}) == "hello world");
  CHECK(decode(*tokenizer, {1, piece("▁hello"), 2}, false) == "<s> hello</s>");
  CHECK(tokenizer->is_special(0));
  CHECK_FALSE(tokenizer->is_special(piece("<tool>")));
  // Leading spaces survive the round trip (one is the prefix the decoder strips).
  CHECK(decode(*tokenizer, encode(*tokenizer, "  hello")) == "  hello");
  CHECK(tokenizer->is_byte_fallback_token(byte_piece(0x41)));
}

TEST_CASE("gguf llama: merges follow the merged token's score, and add_space_prefix false drops the prefix",
          "[text][gguf]") {
  auto files = gguf_tokenizer_files(llama_metadata().span());
  REQUIRE(files.ok());
  const boost::json::value json = boost::json::parse(files->tokenizer_json);
  const boost::json::array& merges = json.at("model").at("merges").as_array();
  // Highest score first: he (-10), ll, ▁he ("▁"+"he"), llo, ▁hello, ...
  REQUIRE(merges.size() >= 4);
  CHECK(merges[0] == boost::json::array{"h", "e"});
  CHECK(merges[1] == boost::json::array{"l", "l"});
  CHECK(merges[2] == boost::json::array{"▁", "he"});
  CHECK(json.at("model").at("byte_fallback").as_bool());
  CHECK(json.at("model").at("unk_token").as_string() == "<unk>");
  CHECK(files->stop_ids == std::vector<TokenId>{2});

  auto no_prefix = load(llama_metadata().set("tokenizer.ggml.add_space_prefix", bool_value(false)));
  CHECK(encode(*no_prefix, "hello") == std::vector<TokenId>{piece("he"), piece("llo")});
  CHECK(decode(*no_prefix, {piece("▁hello")}) == " hello");
}

TEST_CASE("gguf: the chat template goes into tokenizer_config.json, named ones as a list", "[text][gguf]") {
  const boost::json::value messages = boost::json::parse(R"([{"role": "user", "content": "x"}])");
  CHECK(chat_template_from_gguf(gpt2_metadata().span()).status().code() == ErrorCode::not_found);
  Metadata m = gpt2_metadata();
  m.set("tokenizer.chat_template", string_value("D{{ bos_token }}{{ messages|length }}"));
  auto plain = chat_template_from_gguf(m.span());
  REQUIRE(plain.ok());
  CHECK(plain->render(messages, {}).value() == "D<|endoftext|>1");
  m.set("tokenizer.chat_template.tool_use", string_value("T{{ tools|length }}{{ eos_token }}"));
  auto named = chat_template_from_gguf(m.span());
  REQUIRE(named.ok());
  CHECK(named->render(messages, {}).value() == "D<|endoftext|>1");
  ChatRenderOptions with_tools;
  with_tools.tools = boost::json::parse(R"([{"type": "function"}])");
  CHECK(named->render(messages, with_tools).value() == "T1<|im_end|>");
  auto by_name = chat_template_from_gguf(m.span(), "tool_use");
  REQUIRE(by_name.ok());
  CHECK(by_name->render(messages, {}).value() == "T0<|im_end|>");
  // The same through the generated tokenizer_config.json.
  auto files = gguf_tokenizer_files(m.span());
  REQUIRE(files.ok());
  auto from_config = ChatTemplate::from_config_json(files->tokenizer_config_json);
  REQUIRE(from_config.ok());
  CHECK(from_config->render(messages, {}).value() == "D<|endoftext|>1");
  m.set("tokenizer.chat_template.bad", u32_value(3));
  check_error(m, ErrorCode::parse_error, {"tokenizer.chat_template.bad", "string"});
}

TEST_CASE("gguf: unsupported tokenizer models and pre-tokenizers are named", "[text][gguf]") {
  for (const char* model : {"bert", "t5", "rwkv", "no_vocab"}) {
    check_error(gpt2_metadata().set("tokenizer.ggml.model", string_value(model)), ErrorCode::unsupported,
                {model, "gpt2", "llama"});
  }
  check_error(gpt2_metadata("deepseek-coder"), ErrorCode::unsupported, {"'deepseek-coder'", "qwen2", "llama-bpe", "gpt-2"});
  CHECK(load_error(gpt2_metadata("deepseek-coder")).message() ==
        "GGUF tokenizer: pre-tokenizer 'deepseek-coder' is not supported (supported: qwen2, llama-bpe, llama3, "
        "llama-v3, gpt-2, starcoder, smollm, default)");
  CHECK(load_error(gpt2_metadata().set("tokenizer.ggml.model", string_value("bert"))).message() ==
        "GGUF tokenizer: tokenizer model 'bert' is not supported (supported: gpt2, llama)");
  check_error(gpt2_metadata().erase("tokenizer.ggml.pre"), ErrorCode::parse_error, {"tokenizer.ggml.pre", "missing"});
  check_error(gpt2_metadata().erase("tokenizer.ggml.model"), ErrorCode::parse_error, {"tokenizer.ggml.model", "missing"});
  CHECK(load_error(gpt2_metadata().set("tokenizer.ggml.model", u32_value(2))).message() ==
        "GGUF metadata: 'tokenizer.ggml.model' must be a string (it is u32)");
  // A "llama" vocabulary does not read the pre-tokenizer.
  CHECK(gguf_tokenizer_files(llama_metadata().set("tokenizer.ggml.pre", string_value("anything")).span()).ok());
}

TEST_CASE("gguf: malformed tokens, types, scores and ids are clear errors", "[text][gguf]") {
  const std::string tokens = "tokenizer.ggml.tokens";
  check_error(gpt2_metadata().erase(tokens), ErrorCode::parse_error, {tokens, "missing"});
  check_error(gpt2_metadata().set(tokens, u32_value(1)), ErrorCode::parse_error, {tokens, "array"});
  check_error(gpt2_metadata().set(tokens, i32s_value({1, 2})), ErrorCode::parse_error, {"tokenizer.ggml.tokens[0]", "string"});
  check_error(gpt2_metadata().set(tokens, strings_value({})), ErrorCode::parse_error, {tokens, "0 tokens"});
  check_error(gpt2_metadata().set(tokens, strings_value({"a", "b", "a"})), ErrorCode::parse_error, {"'a' twice", "0 and 2"});
  check_error(gpt2_metadata().set(tokens, strings_value({"a", "\xC3"})), ErrorCode::parse_error, {"tokens[1]", "UTF-8"});

  Metadata short_types = gpt2_metadata();
  short_types.set("tokenizer.ggml.token_type", i32s_value({1, 1, 1}));
  check_error(short_types, ErrorCode::parse_error, {"tokenizer.ggml.token_type", "3 entries", "271 tokens"});
  std::vector<int32_t> types(kPad + 1, 1);
  types[7] = 9;
  check_error(gpt2_metadata().set("tokenizer.ggml.token_type", i32s_value(types)), ErrorCode::parse_error,
              {"token_type[7]", "1..6"});
  types[7] = 1;
  // Without token types every token is normal (llama.cpp's reading): special tokens are plain text.
  auto untyped = load(gpt2_metadata().erase("tokenizer.ggml.token_type"));
  CHECK_FALSE(untyped->is_special(kImEnd));

  check_error(llama_metadata().set("tokenizer.ggml.scores", f32s_value({0, 1})), ErrorCode::parse_error,
              {"tokenizer.ggml.scores", "2 entries"});
  check_error(llama_metadata().set("tokenizer.ggml.scores", strings_value(std::vector<std::string>(278, "x"))),
              ErrorCode::parse_error, {"scores[0]", "number"});

  check_error(gpt2_metadata().set("tokenizer.ggml.bos_token_id", u32_value(kPad + 1)), ErrorCode::parse_error,
              {"tokenizer.ggml.bos_token_id", "271", "not a token id"});
  check_error(gpt2_metadata().set("tokenizer.ggml.eos_token_id", string_value("1")), ErrorCode::parse_error,
              {"tokenizer.ggml.eos_token_id", "integer"});
  check_error(gpt2_metadata().set("tokenizer.ggml.eot_token_id", u32_value(100000)), ErrorCode::parse_error,
              {"eot_token_id", "100000"});
  check_error(gpt2_metadata().set("tokenizer.ggml.add_bos_token", u32_value(1)), ErrorCode::parse_error,
              {"add_bos_token", "bool"});
  check_error(gpt2_metadata().erase("tokenizer.ggml.bos_token_id").set("tokenizer.ggml.add_bos_token", bool_value(true)),
              ErrorCode::parse_error, {"add_bos_token", "bos_token_id"});
  check_error(gpt2_metadata("llama-bpe").erase("tokenizer.ggml.bos_token_id"), ErrorCode::parse_error,
              {"add_bos_token", "bos_token_id"});
}

TEST_CASE("gguf gpt2: merges that do not parse or name unknown tokens are clear errors", "[text][gguf]") {
  const std::string merges = "tokenizer.ggml.merges";
  check_error(gpt2_metadata().erase(merges), ErrorCode::parse_error, {merges, "missing"});
  check_error(gpt2_metadata().set(merges, string_value("h e")), ErrorCode::parse_error, {merges, "array"});
  check_error(gpt2_metadata().set(merges, i32s_value({1})), ErrorCode::parse_error, {"merges[0]", "string"});
  for (const char* bad : {"he", " he", "he ", "h  e", "h e l"}) {
    check_error(gpt2_metadata().set(merges, strings_value({"h e", bad})), ErrorCode::parse_error,
                {"tokenizer.ggml.merges[1]", "one space"});
  }
  check_error(gpt2_metadata().set(merges, strings_value({"h q€"})), ErrorCode::parse_error, {"merges[0]", "'q€' is not a token"});
  CHECK(load_error(gpt2_metadata().set(merges, strings_value({"h e", "h o"}))).message() ==
        "GGUF metadata: 'tokenizer.ggml.merges[1]' = 'h o': 'ho' is not a token");
}

TEST_CASE("gguf: empty tokens get llama.cpp's [EMPTY_<id>] names", "[text][gguf]") {
  Metadata m = llama_metadata();
  const gguf::Array& tokens = *m.entries[2].value.array;
  REQUIRE(m.entries[2].key == "tokenizer.ggml.tokens");
  std::vector<std::string> texts;
  for (const Value& v : tokens.items) texts.push_back(v.s);
  texts[piece("d")] = "";
  auto tokenizer = load(m.set("tokenizer.ggml.tokens", strings_value(texts)));
  CHECK(tokenizer->token_text(piece("d")) == fmt::format("[EMPTY_{}]", piece("d")));
}

}  // namespace
}  // namespace llaisys::text::test

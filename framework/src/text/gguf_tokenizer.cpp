#include "llaisys/text/gguf_tokenizer.hpp"

#include <algorithm>
#include <array>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "gguf_vocab.hpp"
#include "utf8.hpp"

namespace llaisys::text {
namespace json = boost::json;
namespace {

using gguf::Value;
using gguf::ValueType;
using namespace gguf_vocab;

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁", SentencePiece's space

// ---- pre-tokenizers of the "gpt2" vocabularies --------------------------------------------------
// Each as the Hugging Face tokenizer.json of the model named by `tokenizer.ggml.pre` has it.

constexpr std::string_view kByteLevelNone = R"json({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false})json";

struct PreTokenizerSpec {
  std::string_view name;
  std::string_view normalizer;      // JSON
  std::string_view pre_tokenizer;   // JSON
  std::string_view post_processor;  // JSON
  std::string_view decoder;         // JSON
  bool ignore_merges = false;
  bool add_bos = false;  // llama.cpp's default when the file has no add_bos_token
};

// Qwen/Qwen2.5-7B-Instruct (tests/data/qwen2-tokenizer/tokenizer.json).
constexpr std::string_view kQwen2Pre =
    R"json({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},)json"
    R"json({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]})json";
// meta-llama/Meta-Llama-3-8B.
constexpr std::string_view kLlama3Pre =
    R"json({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},)json"
    R"json({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]})json";
constexpr std::string_view kLlama3Post = R"json({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true})json";
constexpr std::string_view kLlama3Decoder = R"json({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true})json";
// openai-community/gpt2: ByteLevel applies GPT-2's own regex (use_regex defaults to true).
constexpr std::string_view kGpt2Pre = R"json({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true})json";
constexpr std::string_view kGpt2Post = R"json({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true})json";
constexpr std::string_view kGpt2Decoder = R"json({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true})json";
// bigcode/starcoder2, HuggingFaceTB/SmolLM: single digits, then GPT-2's split.
constexpr std::string_view kDigitsPre =
    R"json({"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},)json"
    R"json({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]})json";
// No Hugging Face file: llama.cpp's own "default" BPE pre-tokenizer (llama-vocab.cpp), its four
// regexes applied one after the other, each keeping matches and the text between them.
constexpr std::string_view kDefaultPre =
    R"json({"type":"Sequence","pretokenizers":[)json"
    R"json({"type":"Split","pattern":{"Regex":"[\\p{P}\\$\\+<=>\\^~\\|]+"},"behavior":"Isolated","invert":false},)json"
    R"json({"type":"Split","pattern":{"Regex":"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"},"behavior":"Isolated","invert":false},)json"
    R"json({"type":"Split","pattern":{"Regex":"\\p{N}+"},"behavior":"Isolated","invert":false},)json"
    R"json({"type":"Split","pattern":{"Regex":"[0-9][0-9][0-9]"},"behavior":"Isolated","invert":false},)json"
    R"json({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]})json";

constexpr std::array kPreTokenizers = {
    PreTokenizerSpec{"qwen2", R"json({"type":"NFC"})json", kQwen2Pre, kByteLevelNone, kByteLevelNone},
    PreTokenizerSpec{"llama-bpe", "null", kLlama3Pre, kLlama3Post, kLlama3Decoder, true, true},
    PreTokenizerSpec{"llama3", "null", kLlama3Pre, kLlama3Post, kLlama3Decoder, true, true},
    PreTokenizerSpec{"llama-v3", "null", kLlama3Pre, kLlama3Post, kLlama3Decoder, true, true},
    PreTokenizerSpec{"gpt-2", "null", kGpt2Pre, kGpt2Post, kGpt2Decoder},
    PreTokenizerSpec{"starcoder", "null", kDigitsPre, kGpt2Post, kGpt2Decoder},
    PreTokenizerSpec{"smollm", "null", kDigitsPre, kGpt2Post, kGpt2Decoder},
    PreTokenizerSpec{"default", "null", kDefaultPre, kGpt2Post, kGpt2Decoder},
};

constexpr std::array<std::string_view, kPreTokenizers.size()> kPreTokenizerNames = [] {
  std::array<std::string_view, kPreTokenizers.size()> names{};
  for (std::size_t i = 0; i < kPreTokenizers.size(); ++i) names[i] = kPreTokenizers[i].name;
  return names;
}();

json::value parse_spec(std::string_view text) { return json::parse(text); }  // constant, known valid

// ---- tokenizer_config.json ----------------------------------------------------------------------

// chat_template: the default one as a string, or, with named ones, a list of {name, template}.
Result<json::value> chat_templates(const Metadata& metadata) {
  constexpr std::string_view kNamedPrefix = "tokenizer.chat_template.";
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string_view> primary, metadata.string(kTemplateKey));
  json::array named;
  for (const gguf::KeyValue& kv : metadata.entries()) {
    if (!kv.key.starts_with(kNamedPrefix) || kv.key.size() == kNamedPrefix.size()) continue;
    if (kv.value.type != ValueType::string) {
      return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' must be a string (it is {})", kv.key,
                        gguf::to_string(kv.value.type));
    }
    named.push_back(json::object{{"name", kv.key.substr(kNamedPrefix.size())}, {"template", kv.value.s}});
  }
  if (named.empty()) return primary ? json::value(*primary) : json::value(nullptr);
  if (primary) named.insert(named.begin(), json::object{{"name", "default"}, {"template", *primary}});
  return json::value(std::move(named));
}

json::value token_string(const std::vector<std::string_view>& tokens, std::optional<TokenId> id) {
  return id ? json::value(tokens[static_cast<std::size_t>(*id)]) : json::value(nullptr);
}

Result<std::string> tokenizer_config(const Metadata& metadata, const std::vector<std::string_view>& tokens,
                                     const SpecialTokens& special) {
  json::object config;
  config["bos_token"] = token_string(tokens, special.bos);
  config["eos_token"] = token_string(tokens, special.eos);
  config["unk_token"] = token_string(tokens, special.unk);
  config["pad_token"] = token_string(tokens, special.pad);
  config["add_bos_token"] = special.add_bos;
  config["add_eos_token"] = special.add_eos;
  config["clean_up_tokenization_spaces"] = false;
  LLAISYS_ASSIGN_OR_RETURN(json::value templates, chat_templates(metadata));
  if (!templates.is_null()) config["chat_template"] = std::move(templates);
  return json::serialize(config);
}

// ---- tokenizer.json -----------------------------------------------------------------------------

// [bos] $A [eos] (and the pair form), as transformers writes it for add_bos/add_eos_token.
json::value template_processing(const std::vector<std::string_view>& tokens, const SpecialTokens& special) {
  json::array single, pair;
  json::object special_tokens;
  auto add_special = [&](json::array& list, TokenId id, int type_id) {
    const std::string_view text = tokens[static_cast<std::size_t>(id)];
    list.push_back(json::object{{"SpecialToken", json::object{{"id", text}, {"type_id", type_id}}}});
    special_tokens[text] = json::object{{"id", text}, {"ids", json::array{id}}, {"tokens", json::array{text}}};
  };
  auto add_sequence = [](json::array& list, std::string_view name, int type_id) {
    list.push_back(json::object{{"Sequence", json::object{{"id", name}, {"type_id", type_id}}}});
  };
  for (int part = 0; part < 2; ++part) {
    if (special.add_bos) add_special(pair, *special.bos, part);
    add_sequence(pair, part == 0 ? "A" : "B", part);
    if (special.add_eos) add_special(pair, *special.eos, part);
    if (part == 0) single = pair;
  }
  return json::object{{"type", "TemplateProcessing"}, {"single", std::move(single)}, {"pair", std::move(pair)},
                      {"special_tokens", std::move(special_tokens)}};
}

// Unknown and control tokens are special added tokens, user-defined ones plain added tokens; all
// are matched in the raw text (normalized: false), as llama.cpp and transformers' converters do.
json::array added_tokens(const Vocabulary& vocab) {
  json::array added;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const int32_t type = vocab.types[static_cast<std::size_t>(id)];
    if (type != kUnknown && type != kControl && type != kUserDefined) continue;
    added.push_back(json::object{{"id", id},
                                 {"content", vocab.tokens[static_cast<std::size_t>(id)]},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", type != kUserDefined}});
  }
  return added;
}

json::object vocab_object(const Vocabulary& vocab) {
  json::object object;
  object.reserve(vocab.tokens.size());
  for (int32_t id = 0; id < vocab.size(); ++id) object.emplace(vocab.tokens[static_cast<std::size_t>(id)], id);
  return object;
}

// tokenizer.ggml.merges, checked: "left right" with both parts and their concatenation tokens.
Result<json::array> gpt2_merges(const Metadata& metadata, const Vocabulary& vocab) {
  LLAISYS_ASSIGN_OR_RETURN(const gguf::Array* merges, metadata.array(kMergesKey));
  if (merges == nullptr) return make_error(ErrorCode::parse_error, "GGUF metadata: '{}' is missing", kMergesKey);
  json::array out;
  out.reserve(merges->items.size());
  std::string merged;
  for (std::size_t i = 0; i < merges->items.size(); ++i) {
    const Value& item = merges->items[i];
    if (item.type != ValueType::string) {
      return make_error(ErrorCode::parse_error, "GGUF metadata: '{}[{}]' must be a string (it is {})", kMergesKey, i,
                        gguf::to_string(item.type));
    }
    const std::string_view merge = item.s;
    const std::size_t space = merge.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == merge.size() ||
        merge.find(' ', space + 1) != std::string_view::npos) {
      return make_error(ErrorCode::parse_error, "GGUF metadata: '{}[{}]' = '{}' is not two tokens separated by one space",
                        kMergesKey, i, merge);
    }
    const std::string_view left = merge.substr(0, space);
    const std::string_view right = merge.substr(space + 1);
    merged.assign(left).append(right);
    for (std::string_view part : {left, right, std::string_view(merged)}) {
      if (vocab.find(part) < 0) {
        return make_error(ErrorCode::parse_error, "GGUF metadata: '{}[{}]' = '{}': '{}' is not a token", kMergesKey, i,
                          merge, part);
      }
    }
    out.emplace_back(merge);
  }
  return out;
}

// The merges of a SentencePiece BPE vocabulary, as transformers' SentencePieceExtractor derives them
// for LlamaConverter: for each token in id order, every split into two tokens (at a character
// boundary), ordered by the ids of (left, right); then a stable sort by the merged token's score,
// highest first. (This is the ordering of tests/data/tiny-llama-gguf/tokenizer.json; newer
// transformers break score ties by longer left part first.)
json::array llama_merges(const Vocabulary& vocab) {
  struct Merge {
    int32_t left, right;
    float score;
  };
  std::vector<Merge> merges;
  std::vector<Merge> local;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const std::string_view token = vocab.tokens[static_cast<std::size_t>(id)];
    local.clear();
    for (std::size_t cut = utf8::valid_sequence_length(token, 0); cut > 0 && cut < token.size();) {
      const int32_t left = vocab.find(token.substr(0, cut));
      const int32_t right = left >= 0 ? vocab.find(token.substr(cut)) : -1;
      if (right >= 0) local.push_back({left, right, vocab.scores[static_cast<std::size_t>(id)]});
      const std::size_t step = utf8::valid_sequence_length(token, cut);
      cut = step == 0 ? 0 : cut + step;
    }
    std::sort(local.begin(), local.end(),
              [](const Merge& a, const Merge& b) { return a.left != b.left ? a.left < b.left : a.right < b.right; });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) { return a.score > b.score; });
  json::array out;
  out.reserve(merges.size());
  for (const Merge& m : merges) {
    out.push_back(json::array{vocab.tokens[static_cast<std::size_t>(m.left)], vocab.tokens[static_cast<std::size_t>(m.right)]});
  }
  return out;
}

json::object bpe_model(const Vocabulary& vocab, json::array merges, const SpecialTokens& special, bool byte_fallback,
                       bool ignore_merges) {
  json::object model;
  model["type"] = "BPE";
  model["dropout"] = nullptr;
  model["unk_token"] = token_string(vocab.tokens, special.unk);
  model["continuing_subword_prefix"] = nullptr;
  model["end_of_word_suffix"] = nullptr;
  model["fuse_unk"] = byte_fallback;
  model["byte_fallback"] = byte_fallback;
  model["ignore_merges"] = ignore_merges;
  model["vocab"] = vocab_object(vocab);
  model["merges"] = std::move(merges);
  return model;
}

json::object tokenizer_json(json::array added, json::value normalizer, json::value pre_tokenizer,
                            json::value post_processor, json::value decoder, json::object model) {
  json::object root;
  root["version"] = "1.0";
  root["truncation"] = nullptr;
  root["padding"] = nullptr;
  root["added_tokens"] = std::move(added);
  root["normalizer"] = std::move(normalizer);
  root["pre_tokenizer"] = std::move(pre_tokenizer);
  root["post_processor"] = std::move(post_processor);
  root["decoder"] = std::move(decoder);
  root["model"] = std::move(model);
  return root;
}

Result<const PreTokenizerSpec*> pre_tokenizer_spec(const Metadata& metadata) {
  LLAISYS_ASSIGN_OR_RETURN(std::optional<std::string_view> pre, metadata.string(kPreKey));
  if (!pre) {
    return make_error(ErrorCode::parse_error,
                      "GGUF metadata: '{}' is missing, so the byte-level BPE pre-tokenizer is unknown (supported: {})",
                      kPreKey, fmt::join(kPreTokenizerNames, ", "));
  }
  for (const PreTokenizerSpec& spec : kPreTokenizers) {
    if (spec.name == *pre) return &spec;
  }
  return make_error(ErrorCode::unsupported, "GGUF tokenizer: pre-tokenizer '{}' is not supported (supported: {})", *pre,
                    fmt::join(kPreTokenizerNames, ", "));
}

// What identifies a pre-tokenizer: its Split regexes in order, and whether ByteLevel applies GPT-2's
// regex or Digits splits numbers (the other fields vary between files that split identically).
std::vector<std::string> pre_tokenizer_signature(const json::value& pre) {
  std::vector<std::string> out;
  const json::object* o = pre.if_object();
  if (o == nullptr) return out;
  const json::value* type = o->if_contains("type");
  const std::string_view kind = type != nullptr && type->is_string() ? std::string_view(type->as_string()) : "";
  if (kind == "Sequence") {
    if (const json::value* list = o->if_contains("pretokenizers"); list != nullptr && list->is_array()) {
      for (const json::value& item : list->as_array()) {
        for (std::string& part : pre_tokenizer_signature(item)) out.push_back(std::move(part));
      }
    }
  } else if (kind == "Split") {
    const json::value* pattern = o->if_contains("pattern");
    const json::value* regex = pattern != nullptr && pattern->is_object() ? pattern->as_object().if_contains("Regex") : nullptr;
    out.push_back("split:" + (regex != nullptr ? json::serialize(*regex) : std::string("?")));
  } else if (kind == "ByteLevel") {
    const json::value* use_regex = o->if_contains("use_regex");
    out.push_back(use_regex == nullptr || (use_regex->is_bool() && use_regex->as_bool()) ? "bytelevel:regex" : "bytelevel");
  } else if (kind == "Digits") {
    out.push_back("digits");
  } else {
    out.push_back("other:" + std::string(kind));
  }
  return out;
}

}  // namespace

std::span<const std::string_view> gguf_pre_tokenizer_names() { return kPreTokenizerNames; }

std::optional<std::string_view> gguf_pre_tokenizer_name_of(std::string_view pre_tokenizer_json) {
  boost::system::error_code ec;
  const json::value given = json::parse(pre_tokenizer_json, ec);
  if (ec) return std::nullopt;
  const std::vector<std::string> signature = pre_tokenizer_signature(given);
  for (const PreTokenizerSpec& spec : kPreTokenizers) {
    if (pre_tokenizer_signature(json::parse(spec.pre_tokenizer)) == signature) return spec.name;
  }
  return std::nullopt;
}

Result<GgufTokenizerFiles> gguf_tokenizer_files(std::span<const gguf::KeyValue> entries) {
  const Metadata metadata(entries);
  LLAISYS_ASSIGN_OR_RETURN(const ModelKind kind, read_model_kind(metadata));
  const PreTokenizerSpec* spec = nullptr;
  if (kind == ModelKind::gpt2) {
    LLAISYS_ASSIGN_OR_RETURN(spec, pre_tokenizer_spec(metadata));
  }
  LLAISYS_ASSIGN_OR_RETURN(Vocabulary vocab, read_vocabulary(metadata, kind));
  LLAISYS_ASSIGN_OR_RETURN(const SpecialTokens special,
                           read_special_tokens(metadata, kind, kind == ModelKind::llama || spec->add_bos, vocab.size()));
  const bool adds_tokens = special.add_bos || special.add_eos;

  json::object root;
  if (kind == ModelKind::gpt2) {
    LLAISYS_ASSIGN_OR_RETURN(json::array merges, gpt2_merges(metadata, vocab));
    json::value post = parse_spec(spec->post_processor);
    if (adds_tokens) {
      post = json::object{{"type", "Sequence"}, {"processors", json::array{std::move(post), template_processing(vocab.tokens, special)}}};
    }
    root = tokenizer_json(added_tokens(vocab), parse_spec(spec->normalizer), parse_spec(spec->pre_tokenizer), std::move(post),
                          parse_spec(spec->decoder),
                          bpe_model(vocab, std::move(merges), special, /*byte_fallback=*/false, spec->ignore_merges));
  } else {
    // transformers' LlamaConverter (legacy): "▁" before the text unless the file turns the space
    // prefix off, spaces as "▁"; no pre-tokenizer; the decoder undoes both.
    LLAISYS_ASSIGN_OR_RETURN(std::optional<bool> add_space_prefix, metadata.boolean("tokenizer.ggml.add_space_prefix"));
    const bool prefix = add_space_prefix.value_or(true);
    json::array normalizers;
    if (prefix) normalizers.push_back(json::object{{"type", "Prepend"}, {"prepend", kSpace}});
    normalizers.push_back(json::object{{"type", "Replace"}, {"pattern", json::object{{"String", " "}}}, {"content", kSpace}});
    json::array decoders{json::object{{"type", "Replace"}, {"pattern", json::object{{"String", kSpace}}}, {"content", " "}},
                         json::object{{"type", "ByteFallback"}}, json::object{{"type", "Fuse"}}};
    if (prefix) decoders.push_back(json::object{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    root = tokenizer_json(added_tokens(vocab), json::object{{"type", "Sequence"}, {"normalizers", std::move(normalizers)}},
                          nullptr, adds_tokens ? template_processing(vocab.tokens, special) : json::value(nullptr),
                          json::object{{"type", "Sequence"}, {"decoders", std::move(decoders)}},
                          bpe_model(vocab, llama_merges(vocab), special, /*byte_fallback=*/true, false));
  }

  GgufTokenizerFiles files;
  files.tokenizer_json = json::serialize(root);
  LLAISYS_ASSIGN_OR_RETURN(files.tokenizer_config_json, tokenizer_config(metadata, vocab.tokens, special));
  files.num_tokens = vocab.size();
  files.bos_id = special.bos;
  files.eos_id = special.eos;
  files.eot_id = special.eot;
  files.eom_id = special.eom;
  files.unk_id = special.unk;
  files.pad_id = special.pad;
  files.add_bos = special.add_bos;
  files.add_eos = special.add_eos;
  for (const std::optional<TokenId>& id : {special.eos, special.eot, special.eom}) {
    if (id && std::find(files.stop_ids.begin(), files.stop_ids.end(), *id) == files.stop_ids.end()) {
      files.stop_ids.push_back(*id);
    }
  }
  return files;
}

Result<std::shared_ptr<const Tokenizer>> tokenizer_from_gguf(std::span<const gguf::KeyValue> metadata) {
  LLAISYS_ASSIGN_OR_RETURN(const GgufTokenizerFiles files, gguf_tokenizer_files(metadata));
  auto tokenizer = Tokenizer::from_json_text(files.tokenizer_json, files.tokenizer_config_json);
  if (!tokenizer.ok()) return std::move(tokenizer).take_status().with_context("the tokenizer of a GGUF file");
  return tokenizer;
}

Result<ChatTemplate> chat_template_from_gguf(std::span<const gguf::KeyValue> entries, std::string_view name) {
  const Metadata metadata(entries);
  LLAISYS_ASSIGN_OR_RETURN(const gguf::Array* tokens, read_token_array(metadata));
  std::vector<std::string_view> texts;
  texts.reserve(tokens->items.size());
  for (const Value& token : tokens->items) texts.push_back(token.s);
  // The special token strings only; the model need not be one this library tokenizes.
  const auto model = metadata.string(kModelKey);
  const ModelKind kind = model.ok() && model.value() == "llama" ? ModelKind::llama : ModelKind::gpt2;
  const auto num_tokens = static_cast<int32_t>(texts.size());
  LLAISYS_ASSIGN_OR_RETURN(const SpecialTokens special, read_special_tokens(metadata, kind, false, num_tokens));
  LLAISYS_ASSIGN_OR_RETURN(const std::string config, tokenizer_config(metadata, texts, special));
  return ChatTemplate::from_config_json(config, name);
}

}  // namespace llaisys::text

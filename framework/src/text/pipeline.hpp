#pragma once
// The steps of a Hugging Face tokenizer pipeline, each a small class built from its tokenizer.json
// object: Normalizer (text -> text), PreTokenizer (text -> pieces), Decoder (token strings -> bytes).
// A new kind of step is one more class and one more `type` in the factory; nothing else changes.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "llaisys/core/status.hpp"

namespace llaisys::text {

// A normalized segment of input cut into pieces (byte ranges of `text`). When `byte_level` is set,
// the model reads every byte of a piece as its byte-level alphabet character (the ByteLevel
// pre-tokenizer's mapping, applied lazily so pieces stay views of the raw bytes).
struct PreTokenizedText {
  std::string text;
  std::vector<std::pair<uint32_t, uint32_t>> pieces;  // [begin, end) in text, non-empty
  bool byte_level = false;

  std::string_view piece(std::size_t i) const {
    return std::string_view(text).substr(pieces[i].first, pieces[i].second - pieces[i].first);
  }
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual Status normalize(std::string& text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Cuts (or rewrites) the pieces of `pre`; on entry there is one piece covering the whole text.
  virtual Status pre_tokenize(PreTokenizedText& pre) const = 0;
};

// Decoders work like Hugging Face's decode_chain: a list of token strings in, a list out; the
// tokenizer concatenates the final list and repairs invalid UTF-8.
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // True when decoding is a per-token byte mapping with no context (ByteLevel): the streaming
  // detokenizer may then decode token by token.
  virtual bool is_per_token() const { return false; }
  // True when the chain merges runs of adjacent byte tokens ("<0xNN>", ByteFallback): such a run
  // decodes as a whole (one U+FFFD per byte when invalid), so a later byte token can change how the
  // earlier ones of its run decode.
  virtual bool merges_byte_tokens() const { return false; }
  // The bytes one token adds in the middle of a text (Tokenizer::piece_bytes): decode_chain of the
  // token alone, except that a byte token is its raw byte and text-level steps (a Strip after Fuse)
  // do nothing there.
  virtual void decode_piece(std::string& piece) const {
    std::vector<std::string> chain{std::move(piece)};
    decode_chain(chain);
    piece.clear();
    for (const std::string& part : chain) piece += part;
  }
};

// The byte a ByteFallback token ("<0x41>") stands for; nullopt for any other token.
std::optional<uint8_t> byte_fallback_value(std::string_view token);

// Factories: a null JSON value means "no step" (nullptr). Unknown types are an `unsupported` error
// naming the type; malformed objects a `parse_error` naming the field.
Result<std::unique_ptr<Normalizer>> make_normalizer(const boost::json::value& config);
Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const boost::json::value& config);
Result<std::unique_ptr<Decoder>> make_decoder(const boost::json::value& config);

// Regular expressions in tokenizer.json are Oniguruma syntax; this rewrites the few constructs whose
// meaning differs in PCRE2 (\s and \S are Unicode White_Space in Oniguruma).
std::string onig_to_pcre2(std::string_view pattern);

}  // namespace llaisys::text

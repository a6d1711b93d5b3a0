#pragma once
// Shared fixtures for the text tests: the Qwen2 tokenizer (loaded once per test binary) and the
// reference vectors copied from ../shared into tests/data.

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "llaisys/text/tokenizer.hpp"

namespace llaisys::text::test {

inline std::filesystem::path data_dir() { return LLAISYS_TEST_DATA_DIR; }
inline std::filesystem::path qwen2_dir() { return data_dir() / "qwen2-tokenizer"; }

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return std::move(buffer).str();
}

inline boost::json::value read_json(const std::filesystem::path& path) { return boost::json::parse(read_text(path)); }

inline std::shared_ptr<const Tokenizer> qwen2() {
  static const std::shared_ptr<const Tokenizer> tokenizer = [] {
    auto loaded = Tokenizer::from_model_dir(qwen2_dir());
    if (!loaded.ok()) FAIL(loaded.status().to_string());
    return loaded.value();
  }();
  return tokenizer;
}

// The llama-style SentencePiece tokenizer of models/stories260K (<0xNN> byte fallback; decoders
// Replace, ByteFallback, Fuse, Strip).
inline std::filesystem::path stories260k_dir() {
  return std::filesystem::path(LLAISYS_SOURCE_DIR) / "models" / "stories260K";
}

inline std::shared_ptr<const Tokenizer> stories260k() {
  static const std::shared_ptr<const Tokenizer> tokenizer = [] {
    auto loaded = Tokenizer::from_model_dir(stories260k_dir());
    if (!loaded.ok()) FAIL(loaded.status().to_string());
    return loaded.value();
  }();
  return tokenizer;
}

struct TokenizerCase {
  std::string text;
  std::vector<TokenId> ids;
  std::string decoded;
};

// All 56 cases of qwen2-cases.json (transformers.js) and the 46 of qwen2.inp/.out (llama.cpp).
inline std::vector<TokenizerCase> tokenizer_cases() {
  std::vector<TokenizerCase> cases;
  const boost::json::value json = read_json(data_dir() / "tokenizer-vectors" / "qwen2-cases.json");
  for (const auto& c : json.at("cases").as_array()) {
    TokenizerCase tc{.text = std::string(c.at("text").as_string()), .decoded = std::string(c.at("decoded").as_string())};
    for (const auto& id : c.at("ids").as_array()) tc.ids.push_back(static_cast<TokenId>(id.as_int64()));
    cases.push_back(std::move(tc));
  }
  const std::string inp = read_text(data_dir() / "tokenizer-vectors" / "qwen2.inp");
  const std::string out = read_text(data_dir() / "tokenizer-vectors" / "qwen2.out");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (std::size_t start = 0;;) {
    const std::size_t hit = inp.find(separator, start);
    if (hit == std::string::npos) break;
    texts.push_back(inp.substr(start, hit - start));
    start = hit + separator.size();
  }
  std::istringstream lines(out);
  std::string line;
  std::size_t i = 0;
  while (std::getline(lines, line) && i < texts.size()) {
    TokenizerCase tc{.text = texts[i], .decoded = texts[i]};
    std::istringstream numbers(line);
    for (TokenId id; numbers >> id;) tc.ids.push_back(id);
    cases.push_back(std::move(tc));
    ++i;
  }
  REQUIRE(i == texts.size());
  return cases;
}

}  // namespace llaisys::text::test

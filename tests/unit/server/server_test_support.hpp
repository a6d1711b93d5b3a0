#pragma once
// Support for the request-parsing and response-building tests. fixture(): the served model text, the
// Qwen2 tokenizer and chat template (plus the ChatML fallback a model without a template gets), as
// the ModelTextContext a served model has: vocabulary, a 64-wide hidden size, a 256-token context,
// tools rendered, a grammar compiler. output(): an engine output to feed a response writer.

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/engine/request.hpp"
#include "llaisys/grammar/grammar_compiler.hpp"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "openai/request_parse.hpp"
#include "served_model.hpp"

namespace llaisys::server::test {

struct TextFixture {
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::optional<text::ChatTemplate> chat_template;
  std::optional<text::ChatTemplate> chatml_fallback;
  ModelTextContext context;

  TextFixture() {
    const std::filesystem::path dir = std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "qwen2-tokenizer";
    auto t = text::Tokenizer::from_model_dir(dir);
    REQUIRE(t.ok());
    tokenizer = t.value();
    auto c = text::ChatTemplate::from_model_dir(dir);
    REQUIRE(c.ok());
    chat_template = std::move(c).value();
    auto fallback = app::fallback_chat_template(*tokenizer);
    REQUIRE(fallback.ok());
    chatml_fallback = std::move(fallback).value();
    context.vocab_size = tokenizer->vocab_size();
    context.hidden_size = 64;
    context.max_model_len = 256;
    context.tokenizer = tokenizer;
    context.chat_template = &*chat_template;
    context.chat_template_renders_tools = renders_tools(*chat_template);
    std::vector<TokenId> eos;
    if (tokenizer->eos_token_id()) eos.push_back(*tokenizer->eos_token_id());
    context.grammars = std::make_shared<grammar::GrammarCompiler>([tokenizer = tokenizer, eos] {
      return grammar::TokenVocabulary::from_tokenizer(*tokenizer, tokenizer->vocab_size(), eos);
    });
  }
};

// One per test binary (loading the tokenizer takes a while).
inline TextFixture& fixture() {
  static TextFixture f;
  return f;
}

inline RequestOutput output(std::vector<ChoiceDelta> choices, bool finished, Usage usage = {}) {
  RequestOutput o;
  o.choices = std::move(choices);
  o.finished = finished;
  o.usage = usage;
  return o;
}

}  // namespace llaisys::server::test

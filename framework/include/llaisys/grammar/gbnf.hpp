#pragma once
// GBNF (llama.cpp's grammar format, grammars/README.md there) -> a grammar. vLLM's `guided_grammar`
// takes this format here. Supported: rules `name ::= ...`, literals "..." with \n \t \r \\ \" \xHH
// \uHHHH \UHHHHHHHH escapes, character classes [...] / [^...] with ranges and the same escapes, `.`
// (any code point), grouping ( ), alternation |, * + ? and {m} {m,} {m,n} {,n}, comments #. The root rule
// is "root". Anything else (e.g. token references <[...]>) is refused with its line and column.

#include <memory>
#include <string_view>

#include "llaisys/core/status.hpp"
#include "llaisys/grammar/grammar.hpp"

namespace llaisys::grammar {

Result<std::shared_ptr<const Grammar>> gbnf_grammar(std::string_view text, const GrammarLimits& limits = {});

}  // namespace llaisys::grammar

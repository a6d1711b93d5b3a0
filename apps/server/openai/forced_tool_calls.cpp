// tool_choice "required" / a named function as a grammar over the tool-call format (tool_calls.hpp).

#include <fmt/format.h>

#include "openai/tool_calls.hpp"

namespace llaisys::server {
namespace json = boost::json;
using grammar::ExprPtr;

Result<std::shared_ptr<const grammar::CompiledGrammar>> forced_tool_call_grammar(const json::value& tools,
                                                                                 const ForcedToolCalls& forced,
                                                                                 grammar::GrammarCompiler& grammars) {
  struct Function {
    std::string name;
    json::value parameters;
    bool strict = false;
  };
  std::vector<Function> functions;
  for (const json::value& tool : tools.as_array()) {
    const json::object& fn = tool.as_object().at("function").as_object();
    Function f{.name = std::string(fn.at("name").as_string())};
    if (!forced.function.empty() && f.name != forced.function) continue;
    const json::value* params = fn.if_contains("parameters");
    f.parameters = params != nullptr && !params->is_null() ? *params : json::value(json::object{{"type", "object"}});
    if (const json::value* strict = fn.if_contains("strict"); strict != nullptr && strict->is_bool()) {
      f.strict = strict->as_bool();
    }
    functions.push_back(std::move(f));
  }
  if (functions.empty()) {
    return make_error(ErrorCode::invalid_argument, "'tool_choice' names function '{}', which is not among 'tools'",
                      std::string_view(forced.function).substr(0, 64));
  }
  // The cache key: the forced choice and the functions' names and schemas.
  const bool one_call = !forced.function.empty() || !forced.parallel;
  std::string key = fmt::format("tool_calls|{}|{}", forced.function, one_call ? 1 : 0);
  for (const Function& f : functions) key += fmt::format("|{}:{}:{}", f.name, f.strict ? 1 : 0, json::serialize(f.parameters));
  auto build = [&]() -> Result<std::shared_ptr<const grammar::Grammar>> {
    grammar::GrammarBuilder b;
    const int32_t root = b.add_rule("tool_calls");
    std::vector<ExprPtr> calls;
    for (const Function& f : functions) {
      auto args = grammar::add_json_schema(b, f.parameters, {.strict = f.strict});
      if (!args.ok()) {
        return make_error(ErrorCode::invalid_argument, "function '{}' parameters: {}", f.name, args.status().message());
      }
      const std::string prefix = "<tool_call>\n{\"name\":" + json::serialize(json::value(f.name)) + ",\"arguments\":";
      calls.push_back(grammar::seq({grammar::literal(prefix), grammar::ref(*args), grammar::literal("}\n</tool_call>")}));
    }
    const ExprPtr call = grammar::alt(std::move(calls));
    b.set_rule(root,
               one_call ? call : grammar::seq({call, grammar::star(grammar::seq({grammar::literal("\n"), call}))}));
    return b.build(root);
  };
  return grammars.compile(key, build);
}

}  // namespace llaisys::server

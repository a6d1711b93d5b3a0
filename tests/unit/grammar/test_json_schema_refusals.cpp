// JSON Schema front end: refusals name their keyword, hostile schemas fail fast, and the pieces
// (digit ranges, bounded decimals, dates, length restriction) are exact against brute force.

#include <chrono>
#include <iostream>
#include <random>

#include <catch2/catch.hpp>

#include "json_schema_internal.hpp"
#include "json_schema_test_support.hpp"
#include "llaisys/grammar/json_schema.hpp"
#include "llaisys/grammar/reference_match.hpp"

using namespace llaisys::grammar;
namespace detail = llaisys::grammar::json_schema_detail;
namespace json = boost::json;

namespace {

std::string refusal(const json::value& schema, const JsonSchemaOptions& options = {}) {
  auto g = json_schema_grammar(schema, options);
  if (g.ok()) return "";
  CHECK(g.status().code() == llaisys::ErrorCode::invalid_argument);
  return g.status().message();
}
std::string refusal(const char* schema) { return refusal(json::parse(schema)); }

bool matches(const ExprPtr& e, std::string_view text) { return reference_match({e}, 0, text); }

}  // namespace

TEST_CASE("json schema: refused keywords are named", "[json_schema]") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"type":"array","uniqueItems":true})", "'uniqueItems'"},
      {R"({"type":"array","contains":{"type":"integer"}})", "'contains'"},
      {R"({"type":"object","minProperties":1})", "'minProperties'"},
      {R"({"type":"object","maxProperties":3})", "'maxProperties'"},
      {R"({"type":"object","patternProperties":{"^a":{}}})", "'patternProperties'"},
      {R"({"type":"object","propertyNames":{"maxLength":3}})", "'propertyNames'"},
      {R"({"type":"object","dependentRequired":{"a":["b"]}})", "'dependentRequired'"},
      {R"({"type":"object","dependentSchemas":{"a":{}}})", "'dependentSchemas'"},
      {R"({"if":{"type":"string"},"then":{"minLength":1}})", "'if'"},
      {R"({"not":{"type":"string"}})", "'not'"},
      {R"({"type":"integer","multipleOf":3})", "'multipleOf'"},
      {R"({"type":"number","multipleOf":0.01})", "'multipleOf'"},
      {R"({"type":"object","unevaluatedProperties":{"type":"string"}})", "'unevaluatedProperties'"},
      {R"({"$dynamicRef":"#meta"})", "'$dynamicRef'"},
      {R"({"type":"string","format":"regex"})", "'regex'"},
      {R"({"type":"string","format":"no-such-format"})", "'no-such-format'"},
      {R"({"$ref":"https://example.com/schema.json"})", "'https://example.com/schema.json'"},
      {R"({"$ref":"#/$defs/missing"})", "'#/$defs/missing'"},
      {R"({"oneOf":[{"type":"integer"},{"type":"number"}]})", "'oneOf'"},
      {R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":2}]})", "'oneOf'"},
      {R"({"oneOf":[{"properties":{"a":{"type":"integer"}}},{"type":"string"}]})", "'oneOf'"},
      {R"({"allOf":[{"type":"string","pattern":"a"},{"pattern":"b"}]})", "'pattern'"},
      {R"({"type":"string","pattern":"^a","format":"date"})", "'pattern'"},
      {R"({"type":"string","pattern":"(a)\\1"})", "'pattern'"},
      {R"({"type":"string","pattern":"^(ab|c)*$","maxLength":10})", "'maxLength'"},
      {R"({"type":"array","items":{"type":"integer"},"maxItems":1000000000})", "'maxItems'"},
      {R"({"type":"string","minLength":-1})", "'minLength'"},
      {R"({"type":"strung"})", "'type'"},
      {R"({"properties":{"a":{"$id":"https://x/y","type":"string"}}})", "'$id'"},
  };
  for (const auto& [schema, keyword] : cases) {
    INFO(schema);
    const std::string message = refusal(schema);
    CHECK_THAT(message, Catch::Contains(keyword));
    CHECK_THAT(message, Catch::StartsWith("json schema: #"));
  }
  // Trivial values of refused keywords are accepted.
  for (const char* schema : {R"({"type":"array","uniqueItems":false})", R"({"type":"object","minProperties":0})",
                             R"({"type":"object","patternProperties":{}})", R"({"type":"object","propertyNames":true})"}) {
    INFO(schema);
    CHECK(refusal(schema).empty());
  }
}

TEST_CASE("json schema: hostile schemas fail fast", "[json_schema]") {
  const auto start = std::chrono::steady_clock::now();
  {
    json::value deep = json::object{{"type", "string"}};
    for (int i = 0; i < 10000; ++i) {
      json::object o;
      o["type"] = "array";
      o["items"] = std::move(deep);
      deep = std::move(o);
    }
    CHECK_THAT(refusal(deep), Catch::Contains("nested more than 64 levels"));
  }
  {
    json::array values;
    for (int i = 0; i < 100000; ++i) values.emplace_back(i);
    CHECK_THAT(refusal(json::value(json::object{{"enum", std::move(values)}})), Catch::Contains("at most 4096"));
  }
  CHECK_THAT(refusal(R"({"$ref":"#"})"), Catch::Contains("cycle"));
  CHECK_THAT(refusal(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"), Catch::Contains("cycle"));
  CHECK_THAT(refusal(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"type":"array","items":{"$ref":"#/$defs/a"}})"),
             Catch::Contains("cycle"));
  CHECK_THAT(refusal(R"({"allOf":[{"$ref":"#"}]})"), Catch::Contains("reaches itself"));
  CHECK_THAT(refusal(R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})"), Catch::Contains("no finite text"));
  CHECK_THAT(refusal(R"({"type":"integer","minimum":1e20})"), Catch::Contains("no value"));
  CHECK_THAT(refusal(R"({"type":"object","properties":{"a":false},"required":["a"]})"), Catch::Contains("no value"));
  CHECK_THAT(refusal(R"({"enum":[1,2],"type":"string"})"), Catch::Contains("no value"));
  CHECK_THAT(refusal(R"({"allOf":[{"type":"object","required":["x"]}],"unevaluatedProperties":false})"),
             Catch::Contains("unevaluatedProperties"));
  CHECK_THAT(refusal(R"({"$defs":{"a":{"type":"object","properties":{"b":false},"required":["b"]}},"$ref":"#/$defs/a"})"),
             Catch::Contains("#/$defs/a/properties/b is the schema false"));
  // Deep enum values, nested arrays of items, long $ref chains.
  {
    json::value v = 1;
    for (int i = 0; i < 1000; ++i) v = json::array{std::move(v)};
    CHECK_THAT(refusal(json::value(json::object{{"const", std::move(v)}})), Catch::Contains("nested more than"));
  }
  {
    json::object defs;
    for (int i = 0; i < 3000; ++i) defs[fmt::format("d{}", i)] = json::object{{"$ref", fmt::format("#/$defs/d{}", i + 1)}};
    defs["d3000"] = json::object{{"type", "integer"}};
    json::value schema = json::object{{"$defs", std::move(defs)}, {"$ref", "#/$defs/d0"}};
    CHECK(refusal(schema).empty());
  }
  {
    JsonSchemaOptions small;
    small.limits = GrammarLimits{.max_nfa_states = 20000, .max_dfa_states = 5000, .max_edges = 50000};
    CHECK_THAT(refusal(json::parse(R"({"type":"array","items":{"type":"string","maxLength":5000},"maxItems":5000})"), small),
               Catch::Contains("too large"));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "hostile schemas refused in " << seconds * 1000 << " ms\n";
  // The deadline (as the regex one's): far above the milliseconds this takes, sanitizers included,
  // so only a blow-up (a hang, an exponential build) fails it.
  CHECK(seconds < 60.0);
}

TEST_CASE("json schema: a 30-property schema compiles quickly", "[json_schema]") {
  json::object props;
  json::array required;
  const char* kinds[] = {"string", "integer", "number", "boolean"};
  for (int i = 0; i < 30; ++i) {
    const std::string name = fmt::format("property_{}", i);
    json::object p{{"type", kinds[i % 4]}, {"description", "a property"}};
    if (i % 5 == 0) p["format"] = "date-time";
    if (i % 4 == 1) p["minimum"] = 0;
    if (i % 7 == 3) p = json::object{{"type", "array"}, {"items", {{"type", "string"}, {"maxLength", 20}}}, {"maxItems", 5}};
    if (i % 3 == 0) required.push_back(json::value(name));
    props[name] = std::move(p);
  }
  const json::value schema = json::object{{"type", "object"}, {"properties", std::move(props)}, {"required", std::move(required)},
                                          {"additionalProperties", false}};
  double best = 1e9;
  int64_t states = 0;
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto g = json_schema_grammar(schema);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    REQUIRE(g.ok());
    states = (*g)->num_states();
  }
  std::cout << "30-property schema: json_schema_grammar " << best * 1000 << " ms (best of 5), " << states << " states\n";
}

TEST_CASE("json schema: integer ranges are exact", "[json_schema]") {
  std::mt19937 rng(11);
  for (int round = 0; round < 60; ++round) {
    int64_t lo = static_cast<int64_t>(rng() % 2400) - 1200;
    int64_t hi = static_cast<int64_t>(rng() % 2400) - 1200;
    if (lo > hi) std::swap(lo, hi);
    detail::NumberSpec spec;
    spec.integer_only = true;
    spec.lo = detail::NumberBound{*detail::decimal_of(json::value(lo)), false};
    spec.hi = detail::NumberBound{*detail::decimal_of(json::value(hi)), false};
    const ExprPtr e = detail::number_expr(spec);
    for (int64_t x = -1300; x <= 1300; ++x) {
      INFO(lo << ".." << hi << " x=" << x);
      REQUIRE(matches(e, std::to_string(x)) == (x >= lo && x <= hi));
    }
  }
}

TEST_CASE("json schema: bounded decimals are exact", "[json_schema]") {
  // Bounds with up to 2 fraction digits; candidates with up to 3. Values as integers in thousandths.
  std::mt19937 rng(12);
  auto text = [](int64_t thousandths, int digits) {
    const bool neg = thousandths < 0;
    const int64_t a = neg ? -thousandths : thousandths;
    std::string s;  // (appended piecewise: GCC 12 warns falsely about "-" + std::string)
    if (neg) s += '-';
    s += std::to_string(a / 1000);
    if (digits > 0) {
      std::string f = fmt::format("{:03}", a % 1000).substr(0, static_cast<std::size_t>(digits));
      s += "." + f;
    }
    return s;
  };
  for (int round = 0; round < 40; ++round) {
    const int64_t lo = (static_cast<int64_t>(rng() % 800) - 400) * 10;
    const int64_t hi = lo + static_cast<int64_t>(rng() % 500) * 10;
    const bool lo_ex = rng() % 2 == 0;
    const bool hi_ex = rng() % 2 == 0;
    detail::NumberSpec spec;
    spec.lo = detail::NumberBound{*detail::decimal_of(json::value(static_cast<double>(lo) / 1000)), lo_ex};
    spec.hi = detail::NumberBound{*detail::decimal_of(json::value(static_cast<double>(hi) / 1000)), hi_ex};
    const ExprPtr e = detail::number_expr(spec);
    for (int64_t x = lo - 1500; x <= hi + 1500; x += 1) {
      for (int digits = 0; digits <= 3; ++digits) {
        if (digits < 3 && x % (digits == 0 ? 1000 : digits == 1 ? 100 : 10) != 0) continue;
        const std::string t = text(x, digits);
        const bool in = (lo_ex ? x > lo : x >= lo) && (hi_ex ? x < hi : x <= hi);
        INFO(t << " in " << (lo_ex ? "(" : "[") << lo << "," << hi << (hi_ex ? ")" : "]") << " /1000");
        REQUIRE(matches(e, t) == in);
      }
    }
  }
}

TEST_CASE("json schema: dates are exactly the calendar's", "[json_schema]") {
  auto date = detail::string_format("date");
  REQUIRE(date.ok());
  for (const int year : {1896, 1900, 1903, 1904, 2000, 2023, 2024, 2100, 2400}) {
    for (int m = 0; m <= 13; ++m) {
      for (int d = 0; d <= 32; ++d) {
        const std::string s = fmt::format("{:04}-{:02}-{:02}", year, m, d);
        INFO(s);
        REQUIRE(matches(*date, s) == json_schema_test::valid_date(s));
      }
    }
  }
}

TEST_CASE("json schema: length bounds pushed into raw text", "[json_schema]") {
  // ([a-c]+ "-"? [0-9]{0,2}) restricted to 2..4 code points, against brute force over a small alphabet.
  const ExprPtr raw = seq({plus(byte_range('a', 'c')), optional(literal("-")), repeat(byte_range('0', '9'), 0, 2)});
  auto r = detail::restrict_length(raw, 2, 4);
  REQUIRE(r.ok());
  const std::string alphabet = "ab-1";
  std::vector<std::string> all{""};
  for (int len = 1; len <= 6; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : all) {
      if (static_cast<int>(s.size()) != len - 1) continue;
      for (const char c : alphabet) next.push_back(s + c);
    }
    all.insert(all.end(), next.begin(), next.end());
  }
  for (const std::string& s : all) {
    INFO(s);
    REQUIRE(matches(*r, s) == (matches(raw, s) && s.size() >= 2 && s.size() <= 4));
  }
  // Escaping turns raw '"' and control characters into their JSON escapes.
  const ExprPtr escaped = detail::escape_raw_text(seq({literal("a\"\\"), byte_range(0x01, 0x01), literal("\n")}));
  CHECK(matches(escaped, R"(a\"\\\u0001\n)"));
  CHECK_FALSE(matches(escaped, "a\"\\\x01\n"));
}

TEST_CASE("json schema: compact_json and decimals", "[json_schema]") {
  CHECK(*detail::compact_json(json::parse(R"({"a":[1,2.5,1e300,-0.0,"\u0000\"\\/é"],"b":null})"), 8) ==
        R"({"a":[1,2.5,1e+300,-0,"\u0000\"\\/é"],"b":null})");
  CHECK_FALSE(detail::compact_json(json::value("\xFF"), 8).ok());
  CHECK(detail::decimal_of(json::value(0.1))->to_string() == "0.1");
  CHECK(detail::decimal_of(json::value(1e-7))->to_string() == "0.0000001");
  CHECK(detail::decimal_of(json::value(-1.5e20))->to_string() == "-150000000000000000000");
  CHECK(detail::json_equal(json::parse("[1,{\"a\":2}]"), json::parse("[1.0,{\"a\":2.0}]")));
}

TEST_CASE("json schema: long bounded repeats through chunk rules count exactly", "[json_schema]") {
  auto compiled = detail::compile_schema(json::parse(R"({"type":"string","minLength":270,"maxLength":650})"), {});
  REQUIRE(compiled.ok());
  for (std::size_t n = 0; n <= 700; n += (n > 250 && n < 300) || (n > 630 && n < 670) ? 1 : 7) {
    INFO(n);
    std::string text(n + 2, 'a');
    text.front() = text.back() = '"';
    REQUIRE(reference_match(compiled->builder.exprs(), compiled->root, text) == (n >= 270 && n <= 650));
  }
}

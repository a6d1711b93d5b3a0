// JSON Schema -> grammar: for each schema, hand-written valid instances are accepted and invalid ones
// refused (by the reference matcher on the expressions and by the built automaton), and a few hundred
// random complete strings of the automaton are parsed and validated by an independent checker.
// LLAISYS_JSON_SCHEMA_DUMP=<file> appends every random sample as {"schema":..,"instance":..} lines, for
// checking with ajv (draft 2020-12 + ajv-formats) outside the test.

#include <cstdlib>
#include <fstream>

#include <catch2/catch.hpp>

#include "json_schema_internal.hpp"
#include "json_schema_test_support.hpp"
#include "llaisys/grammar/json_schema.hpp"
#include "llaisys/grammar/reference_match.hpp"

using namespace llaisys::grammar;
using namespace json_schema_test;
namespace detail = llaisys::grammar::json_schema_detail;

namespace {

struct Case {
  const char* name;
  const char* schema;
  std::vector<std::string> valid;
  std::vector<std::string> invalid;
  JsonSchemaOptions options = {};
};

void run_case(const Case& c, int samples = 300) {
  INFO("case: " << c.name << "  schema: " << c.schema);
  const json::value schema = json::parse(c.schema);
  auto compiled = detail::compile_schema(schema, c.options);
  if (!compiled.ok()) FAIL(compiled.status().message());
  auto grammar = compiled->builder.build(compiled->root, c.options.limits);
  if (!grammar.ok()) FAIL(grammar.status().message());
  const Grammar& g = **grammar;
  for (const std::string& v : c.valid) {
    INFO("valid instance: " << v);
    CHECK(reference_match(compiled->builder.exprs(), compiled->root, v));
    CHECK(accepts(g, v));
  }
  for (const std::string& v : c.invalid) {
    INFO("invalid instance: " << v);
    CHECK_FALSE(reference_match(compiled->builder.exprs(), compiled->root, v));
    CHECK_FALSE(accepts(g, v));
  }
  std::ofstream dump;
  if (const char* path = std::getenv("LLAISYS_JSON_SCHEMA_DUMP")) dump.open(path, std::ios::app);
  const SchemaChecker checker(schema);
  RandomWalker walker(g);
  std::mt19937 rng(1234);
  for (int i = 0; i < samples; ++i) {
    bool dead_end = false;
    const std::string text = walker.walk(rng, 64 + static_cast<std::size_t>(i % 8) * 32, dead_end);
    INFO("sample: " << text);
    REQUIRE_FALSE(dead_end);
    boost::system::error_code ec;
    const json::value parsed = json::parse(text, ec);
    REQUIRE_FALSE(ec);
    CHECK(checker.check(parsed) == "");
    if (i < 40) CHECK(reference_match(compiled->builder.exprs(), compiled->root, text));
    if (dump.is_open()) dump << json::serialize(json::object{{"schema", schema}, {"instance", text}}) << "\n";
  }
}

}  // namespace

TEST_CASE("json schema: scalar types", "[json_schema]") {
  run_case({"null", R"({"type":"null"})", {"null"}, {"0", "\"null\"", "nul"}});
  run_case({"boolean", R"({"type":"boolean"})", {"true", "false"}, {"1", "\"true\"", "True"}});
  run_case({"string",
            R"({"type":"string"})",
            {R"("")", R"("abc")", "\"\xC3\xA9 \xF0\x9F\x98\x80\"", R"("a\"b\\c\/\n\t\u00e9\uD83D\uDE00")", R"("\u0000")"},
            {R"("\ud800")", "\"a\nb\"", "abc", R"("\x")", R"("\uDC00\uD800")", "\"\xED\xA0\x80\""}});
  run_case({"string lengths",
            R"({"type":"string","minLength":2,"maxLength":4})",
            {R"("ab")", R"("abcd")", R"("\n\t")", "\"\xE6\x97\xA5\xE6\x9C\xAC\"", R"("\uD83D\uDE00\u0041")"},
            {R"("a")", R"("abcde")", R"("\n")", "\"\xE6\x97\xA5\""}});
  run_case({"nullable type", R"({"type":"integer","nullable":true})", {"1", "null"}, {"\"x\""}});
  run_case({"type array", R"({"type":["string","null"]})", {"\"x\"", "null"}, {"1", "true"}});
}

TEST_CASE("json schema: integers", "[json_schema]") {
  run_case({"integer", R"({"type":"integer"})", {"0", "-5", "123456789012345", "-999999999999999"},
            {"01", "1.0", "-0", "1e3", "1234567890123456", "+1"}});
  run_case({"integer range", R"({"type":"integer","minimum":-15,"maximum":237})",
            {"-15", "-1", "0", "9", "10", "99", "100", "199", "200", "237"}, {"-16", "238", "1000", "-100", "240"}});
  run_case({"integer exclusive", R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})",
            {"1", "5", "9"}, {"0", "10", "-1"}});
  run_case({"integer one-sided", R"({"type":"integer","minimum":100})", {"100", "101", "999999999999999"}, {"99", "-1", "0"}});
  run_case({"integer negative", R"({"type":"integer","maximum":-3})", {"-3", "-100"}, {"-2", "0", "3"}});
  run_case({"draft-4 exclusive", R"({"type":"integer","minimum":5,"exclusiveMinimum":true,"maximum":8,"exclusiveMaximum":true})",
            {"6", "7"}, {"5", "8"}});
  run_case({"fractional bounds on integers", R"({"type":"integer","minimum":-2.5,"maximum":3.5})", {"-2", "3"}, {"-3", "4"}});
  run_case({"multipleOf 1", R"({"type":"number","multipleOf":1,"minimum":0})", {"0", "7"}, {"0.5", "-1"}});
  run_case({"int32", R"({"type":"integer","format":"int32"})", {"2147483647", "-2147483648"}, {"2147483648", "-2147483649"}});
}

TEST_CASE("json schema: numbers", "[json_schema]") {
  run_case({"number", R"({"type":"number"})", {"0", "-1.5", "1e10", "2.5E-3", "123.456", "-0.0"},
            {".5", "1.", "01", "+1", "NaN", "1e100", "1e"}});
  run_case({"number bounds", R"({"type":"number","minimum":0.5,"maximum":2.25})",
            {"0.5", "1", "2", "2.25", "0.75", "2.2", "2.250000", "0.500001"}, {"0.4", "2.26", "0.49", "3", "-1", "2.250001"}});
  run_case({"number exclusive", R"({"type":"number","exclusiveMinimum":-1.5,"exclusiveMaximum":0})",
            {"-1.4", "-0.000001", "-1", "-1.499999"}, {"-1.5", "0", "0.0", "-2", "0.5", "-0.0", "-1.500000"}});
  run_case({"number above", R"({"type":"number","minimum":1e3})", {"1000", "1000.5", "5000000000"}, {"999.9", "-5"}});
}

TEST_CASE("json schema: enum and const", "[json_schema]") {
  run_case({"enum",
            R"({"enum":["a","b\"c",1,2.5,null,true,{"x":[1,2]},[],"\u0001"]})",
            {R"("a")", R"("b\"c")", "1", "2.5", "null", "true", R"({"x":[1,2]})", "[]", R"("\u0001")"},
            {R"("c")", "2", "false", R"({"x":[1]})", R"("b"c")"}});
  run_case({"const", R"({"const":"fixed"})", {R"("fixed")"}, {R"("other")"}});
  run_case({"enum by type", R"({"type":"string","enum":["a",1,"b"]})", {R"("a")", R"("b")"}, {"1"}});
  run_case({"enum with other keywords", R"({"type":"string","maxLength":2,"enum":["ab","abc"]})", {R"("ab")"}, {R"("abc")"}});
  run_case({"integer enum", R"({"type":"integer","enum":[1,1.5,2.0]})", {"1", "2"}, {"1.5"}});
}

TEST_CASE("json schema: objects", "[json_schema]") {
  run_case({"object",
            R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]})",
            {R"({"name":"x"})", R"({"name":"x","age":3})"},
            {"{}", R"({"age":3})", R"({"age":3,"name":"x"})", R"({"name":"x","extra":1})", R"({"name":1})"}});
  run_case({"all optional",
            R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}}})",
            {"{}", R"({"a":1})", R"({"b":2})", R"({"c":3})", R"({"a":1,"c":3})", R"({"b":2,"c":3})", R"({"a":1,"b":2,"c":3})"},
            {R"({,"a":1})", R"({"a":1,})", R"({"c":3,"a":1})", R"({"a":1"b":2})"}});
  run_case({"required in the middle",
            R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},"required":["b"]})",
            {R"({"b":1})", R"({"a":1,"b":2})", R"({"b":1,"c":2})", R"({"a":1,"b":1,"c":1})"},
            {R"({"a":1})", R"({"a":1,"c":1})", "{}"}});
  run_case({"many optional",
            R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"},
                "d":{"type":"integer"},"e":{"type":"integer"},"f":{"type":"integer"},"g":{"type":"integer"}}})",
            {"{}", R"({"g":1})", R"({"a":1,"g":2})", R"({"c":1,"d":2,"f":3})"}, {R"({"g":1,"a":2})", R"({"a":1,"a":2})"}});
  run_case({"additionalProperties false", R"({"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false})",
            {"{}", R"({"a":"x"})"}, {R"({"b":1})"}});
  run_case({"additionalProperties schema",
            R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":{"type":"string"}})",
            {R"({"id":1})", R"({"id":1,"x":"y"})", R"({"id":1,"x":"y","ida":"w","i":""})"},
            {R"({"id":1,"x":2})", R"({"id":1,"id":"x"})", R"({"x":"y","id":1})"}});
  run_case({"any object", R"({"type":"object"})",
            {"{}", R"({"a":1})", R"({"a":{"b":[1,2,{"c":null}]}})", R"({"k":"v","k2":true})"}, {"[]", R"({"a"})"}});
  JsonSchemaOptions unlisted;
  unlisted.unlisted_properties = true;
  run_case({"unlisted properties by default", R"({"type":"object","properties":{"a":{"type":"integer"}}})", {R"({"a":1})"},
            {R"({"a":1,"b":2})"}});
  run_case({"unlisted properties asked for", R"({"type":"object","properties":{"a":{"type":"integer"}}})",
            {R"({"a":1,"b":2})", R"({"b":[]})"}, {R"({"a":1,"a":2})"}, unlisted});
  JsonSchemaOptions strict;
  strict.strict = true;
  run_case({"strict", R"({"type":"object"})", {"{}"}, {R"({"a":1})"}, strict});
  run_case({"required not listed", R"({"type":"object","required":["x"]})", {R"({"x":1})", R"({"x":"s","y":2})"},
            {"{}", R"({"y":2})"}});
  run_case({"nested",
            R"({"type":"object","properties":{"user":{"type":"object","properties":{"tags":{"type":"array",
                "items":{"type":"string","maxLength":3}}},"required":["tags"]}},"required":["user"]})",
            {R"({"user":{"tags":[]}})", R"({"user":{"tags":["a","abc"]}})"}, {R"({"user":{"tags":["abcd"]}})", R"({"user":{}})"}});
  run_case({"untyped object keywords", R"({"properties":{"a":{"const":1}},"required":["a"]})", {R"({"a":1})"}, {R"("x")", "1"}});
  run_case({"property named like JSON", R"({"type":"object","properties":{"a\"b":{"type":"null"},"/":{"type":"null"}},
            "required":["a\"b","/"]})", {R"({"a\"b":null,"/":null})"}, {}});
}

TEST_CASE("json schema: arrays", "[json_schema]") {
  run_case({"items", R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})", {"[1]", "[1,2,3]"},
            {"[]", "[1,2,3,4]", R"(["a"])", "[1,]"}});
  run_case({"any array", R"({"type":"array"})", {"[]", R"([1,"a",null,[{}]])"}, {"[1,]", "[,]"}});
  run_case({"prefixItems", R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})",
            {"[]", R"(["a"])", R"(["a",1])"}, {"[1]", R"(["a",1,2])"}});
  run_case({"prefixItems and items", R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"},"minItems":2})",
            {R"(["a",true])", R"(["a",true,false])"}, {R"(["a"])", "[true,true]"}});
  run_case({"draft-07 items array", R"({"type":"array","items":[{"type":"null"}],"additionalItems":{"type":"integer"},"maxItems":3})",
            {"[null]", "[null,1,2]", "[]"}, {"[1]", "[null,1,2,3]"}});
  run_case({"big maxItems", R"({"type":"array","items":{"type":"integer","minimum":0,"maximum":9},"minItems":300,"maxItems":1000})", {}, {"[1]"}, {}});
}

TEST_CASE("json schema: combinators and references", "[json_schema]") {
  run_case({"anyOf", R"({"anyOf":[{"type":"string","maxLength":2},{"type":"integer","minimum":0}]})", {R"("ab")", "5"},
            {R"("abc")", "-1"}});
  run_case({"oneOf by type", R"({"oneOf":[{"type":"string"},{"type":"integer"}]})", {R"("x")", "1"}, {"null"}});
  run_case({"oneOf by values", R"({"oneOf":[{"enum":["a","b"]},{"type":"integer"},{"const":null}]})", {R"("a")", "1", "null"},
            {R"("c")"}});
  run_case({"oneOf by discriminator",
            R"({"oneOf":[{"$ref":"#/$defs/cat"},{"$ref":"#/$defs/dog"}],"$defs":{
                "cat":{"type":"object","properties":{"kind":{"const":"cat"},"lives":{"type":"integer"}},"required":["kind","lives"]},
                "dog":{"type":"object","properties":{"kind":{"enum":["dog"]},"bark":{"type":"boolean"}},"required":["kind"]}}})",
            {R"({"kind":"cat","lives":9})", R"({"kind":"dog","bark":true})", R"({"kind":"dog"})"}, {R"({"kind":"cow"})"}});
  run_case({"oneOf by required sets",
            R"({"oneOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false},
                         {"type":"object","properties":{"b":{"type":"integer"}},"required":["b"],"additionalProperties":false}]})",
            {R"({"a":1})", R"({"b":1})"}, {R"({"a":1,"b":1})"}});
  run_case({"allOf",
            R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                         {"properties":{"b":{"type":"string"}},"required":["b"]}]})",
            {R"({"a":1,"b":"x"})"}, {R"({"a":1})", R"({"b":"x"})"}});
  run_case({"allOf with additionalProperties false",
            R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false},
                         {"properties":{"a":{"minimum":5},"b":{"type":"string"}}}]})",
            {"{}", R"({"a":5})"}, {R"({"a":4})", R"({"b":"x"})"}});
  run_case({"anyOf with siblings", R"({"type":"object","properties":{"k":{"type":"integer"}},"required":["k"],
            "anyOf":[{"properties":{"k":{"maximum":0}}},{"properties":{"k":{"minimum":10}}}]})",
            {R"({"k":0})", R"({"k":-3})", R"({"k":10})"}, {R"({"k":5})"}});
  run_case({"recursive $defs",
            R"({"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array",
                "items":{"$ref":"#/$defs/node"}}},"required":["value"],"additionalProperties":false}},"$ref":"#/$defs/node"})",
            {R"({"value":1})", R"({"value":1,"children":[{"value":2,"children":[]}]})"}, {R"({"value":1,"children":[{}]})"}});
  run_case({"root recursion",
            R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["next"]})",
            {R"({"next":null})", R"({"next":{"next":null}})"}, {"{}"}});
  run_case({"definitions and anchors",
            R"({"type":"array","items":{"anyOf":[{"$ref":"#/definitions/a"},{"$ref":"#b"}]},
                "definitions":{"a":{"type":"integer"},"b":{"$anchor":"b","type":"boolean"}}})",
            {"[1,true]"}, {R"(["x"])"}});
  run_case({"$ref with siblings",
            R"({"$defs":{"base":{"type":"object","properties":{"a":{"type":"integer"}}}},"$ref":"#/$defs/base","required":["a"]})",
            {R"({"a":1})"}, {"{}"}});
  run_case({"recursion through $ref with siblings",
            R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/node","required":["v"]}}}},
                "$ref":"#/$defs/node"})",
            {"{}", R"({"v":1,"next":{"v":2}})", R"({"next":{"v":2,"next":{"v":3}}})"}, {R"({"next":{}})"}});
  run_case({"recursive anyOf with siblings",
            R"({"$defs":{"X":{"type":["array","integer"],"items":{"anyOf":[{"$ref":"#/$defs/X","maxItems":2},
                {"$ref":"#/$defs/X","type":"integer"}]}}},"$ref":"#/$defs/X"})",
            {"1", "[]", "[[1,2],3]", "[[[]]]"}, {"[[1,2,3]]"}});
  run_case({"unevaluatedProperties", R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}}}],
            "properties":{"b":{"type":"integer"}},"unevaluatedProperties":false})",
            {R"({"a":1,"b":2})", R"({"b":2})"}, {R"({"c":1})"}});
}

TEST_CASE("json schema: strings with pattern and format", "[json_schema]") {
  run_case({"pattern", R"({"type":"string","pattern":"^[a-z]+-[0-9]{2}$"})", {R"("ab-12")"}, {R"("ab-1")", R"("AB-12")"}});
  run_case({"pattern needing escapes", R"({"type":"string","pattern":"^a\"b\\\\c$"})", {R"("a\"b\\c")"}, {R"("a"b\c")"}});
  run_case({"pattern with maxLength", R"({"type":"string","pattern":"^[a-z]+$","maxLength":3})", {R"("abc")", R"("a")"},
            {R"("abcd")", R"("")"}});
  run_case({"pattern with both lengths", R"({"type":"string","pattern":"^[a-z]+-?[0-9]*$","minLength":3,"maxLength":5})",
            {R"("abc")", R"("a-12")", R"("ab123")"}, {R"("ab")", R"("a-1234")"}});
  run_case({"date", R"({"type":"string","format":"date"})", {R"("2024-02-29")", R"("2023-12-31")", R"("2000-02-29")"},
            {R"("2023-02-29")", R"("1900-02-29")", R"("2023-13-01")", R"("2023-04-31")", R"("2023-1-01")", R"("2023-00-10")"}});
  run_case({"time", R"({"type":"string","format":"time"})", {R"("23:59:59Z")", R"("00:00:00.123+05:30")"},
            {R"("24:00:00Z")", R"("12:00:00")", R"("12:60:00Z")", R"("12:00:00+24:00")"}});
  run_case({"date-time", R"({"type":"string","format":"date-time"})", {R"("2024-01-01T12:00:00Z")", R"("1999-12-31T23:59:59.5-08:00")"},
            {R"("2024-01-01")", R"("2024-02-30T12:00:00Z")"}});
  run_case({"uuid", R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"}, {R"("123e4567")"}});
  run_case({"email", R"({"type":"string","format":"email"})", {R"("a.b+c@example.com")"}, {R"("a@b")", R"("a..b@x.io")", R"("@x.io")"}});
  run_case({"ipv4", R"({"type":"string","format":"ipv4"})", {R"("192.168.0.1")", R"("255.255.255.255")", R"("0.0.0.0")"},
            {R"("256.1.1.1")", R"("01.1.1.1")", R"("1.1.1")"}});
  run_case({"ipv6", R"({"type":"string","format":"ipv6"})", {R"("::")", R"("::1")", R"("fe80::1:2")", R"("1:2:3:4:5:6:7:8")"},
            {R"(":::")", R"("1:2:3:4:5:6:7:8:9")", R"("1::2::3")"}});
  run_case({"hostname", R"({"type":"string","format":"hostname"})", {R"("example.com")", R"("a-b.c")"}, {R"("-a.com")", R"("a..b")"}});
  run_case({"format with length", R"({"type":"string","format":"ipv4","maxLength":7})", {R"("1.2.3.4")"}, {R"("10.2.3.4")"}});
  run_case({"untyped string keywords", R"({"minLength":2})", {R"("ab")"}, {"5", R"("a")"}});
  run_case({"uri", R"({"type":"string","format":"uri"})", {R"("https://example.com/a/b?x=1#top")", R"("ftp://h:21")"},
            {R"("example.com")", R"("http://")"}});
  run_case({"uri-reference", R"({"type":"string","format":"uri-reference"})", {R"("https://example.com/")"}, {}});
  run_case({"duration", R"({"type":"string","format":"duration"})", {R"("P1Y2M3DT4H5M6S")", R"("PT1S")", R"("P2W")"},
            {R"("P")", R"("PT")", R"("P1S")", R"("P1W2D")"}});
  run_case({"byte", R"({"type":"string","format":"byte"})", {R"("")", R"("QUJD")", R"("QQ==")", R"("QUI=")"},
            {R"("QQ=")", R"("Q")"}});
  run_case({"json-pointer", R"({"type":"string","format":"json-pointer"})", {R"("")", R"("/a~1b/~0")"}, {R"("a")", R"("/~2")"}});
  run_case({"iso-date-time", R"({"type":"string","format":"iso-date-time"})", {R"("2024-01-01T00:00:00Z")"}, {}});
  run_case({"password", R"({"type":"string","format":"password","maxLength":3})", {R"("abc")"}, {R"("abcd")"}});
  run_case({"number formats", R"({"type":["number","string"],"format":"int64"})", {"5", R"("x")"}, {"5.5"}});
}

TEST_CASE("json schema: realistic schemas", "[json_schema]") {
  // An OpenAI strict-mode function schema.
  run_case({"function call",
            R"({"type":"object","additionalProperties":false,"required":["location","unit","days","alerts"],
                "properties":{
                  "location":{"type":"string","description":"City and country"},
                  "unit":{"type":"string","enum":["celsius","fahrenheit"]},
                  "days":{"type":"integer","minimum":1,"maximum":14},
                  "alerts":{"type":["array","null"],"items":{"type":"object","additionalProperties":false,
                    "required":["kind","severity"],"properties":{"kind":{"type":"string"},
                    "severity":{"type":"number","minimum":0,"maximum":1}}}}}})",
            {R"({"location":"Paris, France","unit":"celsius","days":3,"alerts":null})",
             R"({"location":"X","unit":"fahrenheit","days":14,"alerts":[{"kind":"storm","severity":0.75}]})"},
            {R"({"location":"X","unit":"kelvin","days":3,"alerts":null})", R"({"location":"X","unit":"celsius","days":15,"alerts":null})"}});
  // What pydantic writes for models with optional fields, enums and nested models.
  run_case({"pydantic",
            R"({"$defs":{"Color":{"enum":["red","green"],"title":"Color","type":"string"},
                "Item":{"properties":{"name":{"title":"Name","type":"string"},"price":{"exclusiveMinimum":0,"title":"Price","type":"number"},
                  "color":{"anyOf":[{"$ref":"#/$defs/Color"},{"type":"null"}],"default":null}},"required":["name","price"],
                  "title":"Item","type":"object"}},
                "properties":{"items":{"items":{"$ref":"#/$defs/Item"},"title":"Items","type":"array","maxItems":4},
                  "note":{"anyOf":[{"type":"string","maxLength":20},{"type":"null"}],"default":null,"title":"Note"}},
                "required":["items"],"title":"Order","type":"object"})",
            {R"({"items":[]})", R"({"items":[{"name":"a","price":1.5,"color":"red"}],"note":null})"},
            {R"({"items":[{"name":"a","price":0}]})", R"({"items":[{"name":"a","price":1,"color":"blue"}]})"}});
}

TEST_CASE("json schema: any value, whitespace, json_object_grammar", "[json_schema]") {
  run_case({"empty schema", "{}", {"1", R"("x")", "null", R"({"a":[1,{}]})"}, {"", "[1,]"}});
  run_case({"true schema", "true", {"[]"}, {"tru"}});
  run_case({"annotations", R"({"title":"T","description":"d","examples":[1],"default":2,"$comment":"c","x-vendor":{"a":1},
            "self":{"vendor":"com.example","name":"n"},"descriptiion":"a typo","_uniqueItems":true,"deprecated":false,"readOnly":true,"type":"integer","$schema":"https://json-schema.org/draft/2020-12/schema","$id":"urn:example:x"})",
            {"1"}, {"\"x\""}});
  JsonSchemaOptions ws;
  ws.any_whitespace = true;
  run_case({"any whitespace", R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]})",
            {R"({ "a" : [ 1 , 2 ] })", "{\n  \"a\": [\n    1\n  ]\n}", R"({"a":[]})", R"({"a":[ ]})"},
            {R"( {"a":[]})", "{\"a\":[]" + std::string(25, ' ') + "}"}, ws});
  auto g = json_object_grammar();
  REQUIRE(g.ok());
  CHECK(accepts(**g, "{}"));
  CHECK(accepts(**g, R"({"a":[1,{"b":null}],"c":"\u00e9"})"));
  CHECK_FALSE(accepts(**g, "[]"));
  CHECK_FALSE(accepts(**g, "1"));
  RandomWalker walker(**g);
  std::mt19937 rng(5);
  for (int i = 0; i < 200; ++i) {
    bool dead_end = false;
    const std::string text = walker.walk(rng, 100, dead_end);
    REQUIRE_FALSE(dead_end);
    boost::system::error_code ec;
    const json::value v = json::parse(text, ec);
    INFO(text);
    REQUIRE_FALSE(ec);
    CHECK(v.is_object());
  }
}

TEST_CASE("json schema: add_json_schema embeds schemas in a larger grammar", "[json_schema]") {
  GrammarBuilder b;
  const int32_t root = b.add_rule("calls");
  auto a = add_json_schema(b, json::parse(R"({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]})"));
  auto c = add_json_schema(b, json::parse(R"({"enum":["on","off"]})"), JsonSchemaOptions{.any_whitespace = true});
  REQUIRE(a.ok());
  REQUIRE(c.ok());
  b.set_rule(root, alt({seq({literal("a="), ref(*a)}), seq({literal("c="), ref(*c)})}));
  auto g = b.build(root);
  REQUIRE(g.ok());
  CHECK(accepts(**g, R"(a={"x":5})"));
  CHECK(accepts(**g, R"(c="off")"));
  CHECK_FALSE(accepts(**g, R"(a="off")"));
  auto bad = add_json_schema(b, json::parse(R"({"not":{}})"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("'not'"));
}

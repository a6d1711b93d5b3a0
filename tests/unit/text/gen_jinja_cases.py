#!/usr/bin/env python3
"""Regenerates tests/data/jinja-cases.json: small templates covering the Jinja features chat
templates use, rendered by Python Jinja2 with Hugging Face's apply_chat_template environment
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, HF's tojson,
raise_exception). test_jinja_features.cpp compares our interpreter with these renderings.
Run: python3 tests/unit/text/gen_jinja_cases.py (needs jinja2 3.1)."""
import json
import pathlib

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception

CONTEXT = {
    "messages": [
        {"role": "system", "content": "  Be brief.  "},
        {"role": "user", "content": "Hi 你好 \"quoted\" <b>&'"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [1.5, True, None]}}}]},
        {"role": "tool", "content": "{\"ok\": true}"},
    ],
    "n": 7, "f": 2.5, "s": "Hello, World", "empty": [], "d": {"b": 2, "a": 1, "c": {"x": [1, 2]}},
    "names": ["bob", "Alice", "carol", "alice"], "nums": [3, 1, 2], "flag": False,
}

TEMPLATES = [
    # whitespace control, trim/lstrip
    "a\n  {% if true %}\n  b\n  {% endif %}\nc",
    "x {{- ' y ' -}} z",
    "{% for i in [1,2] %}\n    {{ i }}\n{% endfor %}\nend",
    "  {#- comment -#}  x  ",
    "a  {%+ if true %}b{% endif %}",
    "{% raw %}{{ not rendered }}{% endraw %}",
    "line\r\nwindows\rmac\n",
    # literals and printing
    "{{ none }} {{ true }} {{ 1.0 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 10 / 4 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }}",
    "{{ [1, 'a', none, true, 1.5, {'k': 'v'}] }} {{ (1,) }} {{ ('a', 2) }} {{ {} }}",
    "{{ 'it\\'s' }} {{ \"say \\\"x\\\"\" }} {{ 'tab\\there' | length }} {{ '\\u00e9' }}",
    "{{ 'a' 'b' }} {{ 0x1F }} {{ 1_000 }}",
    # operators
    "{{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'x' in 'xyz' }} {{ 2 not in [1] }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1,2] == [1,2] }} {{ 1 == 1.0 }} {{ true == 1 }}",
    "{{ n and s }} {{ flag or 'dflt' }} {{ not empty }} {{ 'y' if n > 5 else 'n' }} {{ 'y' if flag }}",
    "{{ 'a' + 1 }}",
    "{{ 1 + 'a' }}",
    "{{ [1] + 'a' }}",
    "{{ 1 / 0 }}",
    "{{ undefined_name + 'x' }}",
    "{{ d.missing.deeper }}",
    # attribute and item access
    "{{ d.b }} {{ d['a'] }} {{ d.c.x[1] }} {{ messages[1].role }} {{ messages[-1]['content'] }} {{ names[10] }}|",
    "{{ d.items is callable }} {{ d['items'] is defined }}",
    "{{ messages[2].tool_calls[0].function.arguments | tojson }}",
    # slicing
    "{{ s[::-1] }} {{ s[1:4] }} {{ s[-5:] }} {{ nums[::2] }} {{ nums[::-1] }} {{ names[1:-1] }} {{ s[:100] }}",
    # filters
    "{{ messages[0].content | trim }}|{{ '  x  ' | trim('x ') }}|{{ s | lower }} {{ s | upper }} {{ 'hello world' | title }} {{ 'hELLO' | capitalize }}",
    "{{ names | join(', ') }} {{ nums | join }} {{ names | length }} {{ s | length }} {{ d | length }} {{ names | first }} {{ names | last }}",
    "{{ names | sort | join(',') }} {{ names | sort(case_sensitive=true) | join(',') }} {{ nums | sort(reverse=true) | list }}",
    "{{ names | unique | list }} {{ names | map('upper') | join('-') }} {{ messages | map(attribute='role') | join(',') }}",
    "{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('content') | map(attribute='role') | list }}",
    "{{ nums | select('odd') | list }} {{ nums | reject('odd') | list }} {{ [0, 1, '', 'a', none] | select | list }}",
    "{{ d | dictsort }} {{ d | items | list }} {{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list | length }}",
    "{{ undefined_thing | default('dflt') }} {{ '' | default('e', true) }} {{ none | default('n') }} {{ n | string }} {{ nums | sum }} {{ nums | min }} {{ nums | max }}",
    "{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(4, first=true) }}|{{ 'a\n\nb' | indent('--', blank=true) }}",
    "{{ s | replace('l', 'L') }} {{ s | replace('l', 'L', 1) }} {{ '3.7' | float }} {{ '42' | int }} {{ 'x' | int(5) }} {{ 3.7 | int }} {{ -3 | abs }} {{ 2.567 | round(2) }}",
    # round is Python's: halves to even, ints stay ints, a precision finer than a double is a no-op
    "{{ 2.5|round }}|{{ 3|round }}|{{ 0.125|round(2) }}|{{ -2.5|round }}|{{ 1.5|round(400) }}|{{ 1234|round(-2) }}|{{ 2.7|round(0, 'floor') }}|{{ 3|round(0, 'ceil') }}",
    "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ d | tojson(sort_keys=true) }}|{{ names | tojson(separators=(',', ':')) }}",
    "{{ messages[1].content | tojson }} {{ messages[1].content | tojson(ensure_ascii=true) }} {{ 1.0 | tojson }} {{ none | tojson }}",
    "{{ names | map('upper') | tojson }}",
    "{{ s | safe + '<b>' }} {{ '<b>' + s | safe }} {{ '<&>' | escape }} {{ ('a' | safe) ~ '<' }}",
    "{{ nums | batch(2) | list }} {{ 'a b  c' | wordcount }} {{ names | reverse | list }} {{ s | reverse }}",
    "{{ d | attr('b') }}|{{ names[0] | attr('upper') is callable }}",
    "{{ nums | list | last }} {{ [] | first }}|",
    # tests
    "{{ n is defined }} {{ nope is defined }} {{ none is none }} {{ s is string }} {{ d is mapping }} {{ nums is iterable }} {{ n is iterable }}",
    "{{ n is number }} {{ f is float }} {{ n is integer }} {{ true is boolean }} {{ n is odd }} {{ n is even }} {{ n is divisibleby 7 }}",
    "{{ s is lower }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ n is eq 7 }} {{ n is ne 7 }} {{ 2 is in nums }} {{ flag is sameas false }} {{ nope is undefined }}",
    "{{ nums is sequence }} {{ d is sequence }} {{ raise_exception is callable }} {{ n is gt 3 }} {{ n is lt 3 }}",
    # string methods
    "{{ s.split(', ') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ s.startswith('Hell') }} {{ s.endswith(('x', 'ld')) }}",
    "{{ s.strip('Hd') }} {{ '  x '.lstrip() }}|{{ '  x '.rstrip() }}| {{ s.replace('o', '0') }} {{ s.upper() }} {{ s.lower() }} {{ s.title() }} {{ '-'.join(names) }}",
    "{{ s.find('o') }} {{ s.rfind('o') }} {{ s.count('l') }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a\nb'.splitlines() }}",
    "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'fallback') }} {{ nums.index(2) }} {{ nums.count(3) }}",
    "{{ nums.append(4) }}",
    "{{ s.index('zzz') }}",
    # set, namespace, loops
    "{% set x = 1 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
    "{% set ns = namespace(total=0, items=[]) %}{% for i in nums %}{% set ns.total = ns.total + i %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.total }} {{ ns.items }}",
    "{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}",
    "{% set block %}  inner {{ n }}  {% endset %}[{{ block }}]{% set upper_block | upper %}abc{% endset %}{{ upper_block }}",
    "{% filter upper %}shout {{ s }}{% endfilter %}",
    "{% for m in messages %}{{ loop.index }}/{{ loop.length }}:{{ loop.first }}{{ loop.last }}{{ loop.revindex0 }}{{ loop.cycle('a','b') }}{% if not loop.first %}<{{ loop.previtem.role }}{% endif %}{% if not loop.last %}>{{ loop.nextitem.role }}{% endif %} {% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {% for k in d %}{{ k }}{% endfor %}",
    "{% for i in nums if i > 1 %}{{ i }}{{ loop.length }}{% else %}none{% endfor %} {% for i in empty %}x{% else %}empty{% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %} {{ range(3) | list }} {{ range(1, 10, 3) | list }}",
    "{% for c in 'héllo' %}{{ c }}.{% endfor %}",
    "{% set d2 = dict(a=1, b='x') %}{{ d2 }} {{ d2 | tojson }}",
    # macros
    "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet() }}",
    "{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * fact(k - 1) | int }}{% endif %}{% endmacro %}{{ fact(5) }}",
    "{% macro m() %}{{ n }}{% endmacro %}{% set n = 99 %}{{ m() }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    # errors
    "{{ raise_exception('custom failure') }}",
    "{% if %}",
    "{% for x in %}{% endfor %}",
    "{{ x | nofilter }}",
    "{% endif %}",
    "{{ messages[0] | items | list | length }} {{ 'x' | items | list }}",
    "{{ 1 | length }}",
    "{{ names | map('upper') | length }}",
    "{{ range(200000) | length }}",
]


def main():
    cases = []
    for source in TEMPLATES:
        case = {"template": source}
        try:
            case["ok"] = True
            case["text"] = env.from_string(source).render(**CONTEXT)
        except Exception as e:  # the kind and message of Jinja2's error
            case["ok"] = False
            case["error"] = f"{type(e).__name__}: {e}"
        cases.append(case)
    out = pathlib.Path(__file__).resolve().parents[2] / "data" / "jinja-cases.json"
    out.write_text(json.dumps({"generator": "tests/unit/text/gen_jinja_cases.py, Jinja2 " + jinja2.__version__,
                               "context": CONTEXT, "cases": cases}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases -> {out}")


if __name__ == "__main__":
    main()

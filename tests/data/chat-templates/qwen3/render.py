#!/usr/bin/env python3
"""Renders Qwen3's chat template (Qwen-Qwen3-8B.jinja, as published with the model) over the
conversations below with Python's Jinja2 under Hugging Face's apply_chat_template conventions, and
writes expected.json: the reference test_chat_template.cpp compares llaisys's renderer with.

Run from anywhere (needs python3-jinja2): python3 tests/data/chat-templates/qwen3/render.py
"""
import json
import pathlib

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = pathlib.Path(__file__).resolve().parent
TEMPLATE = "Qwen-Qwen3-8B.jinja"

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}

CASES = {
    "user_only": {"messages": [{"role": "user", "content": "Hello"}]},
    "thinking_off": {
        "messages": [{"role": "user", "content": "Hello"}],
        "kwargs": {"enable_thinking": False},
    },
    "thinking_on": {
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi! 你好"}],
        "kwargs": {"enable_thinking": True},
    },
    "history_drops_reasoning": {
        "messages": [
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "Two plus two is four."},
            {"role": "user", "content": "And 3+3?"},
            {"role": "assistant", "content": "<think>\nThree and three.\n</think>\n\n6"},
            {"role": "user", "content": "Thanks"},
        ],
        "kwargs": {"enable_thinking": False},
    },
    "tool_loop_keeps_reasoning": {
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "I should call the weather tool.",
                "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"},
        ],
        "tools": [WEATHER_TOOL],
    },
    "no_gen_prompt": {
        "messages": [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there.", "reasoning_content": "A greeting."},
        ],
        "add_generation_prompt": False,
    },
}


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = lambda x, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    template = env.from_string((HERE / TEMPLATE).read_text())
    expected = {}
    for name, case in CASES.items():
        context = dict(case.get("kwargs", {}))
        if "tools" in case:
            context["tools"] = case["tools"]
        expected[name] = template.render(messages=case["messages"],
                                         add_generation_prompt=case.get("add_generation_prompt", True),
                                         bos_token="", eos_token="<|im_end|>", **context)
    out = {
        "environment": f"Jinja2 {jinja2.__version__}, HF apply_chat_template conventions (trim_blocks, lstrip_blocks, "
                       "loopcontrols, tojson ensure_ascii=False); eos_token '<|im_end|>'",
        "template": TEMPLATE,
        "cases": CASES,
        "expected": expected,
    }
    (HERE / "expected.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()

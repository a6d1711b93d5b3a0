"""llaisys-offline with a reasoning model: generate writes the think block as "reasoning", chat shows it
apart and does not carry it into the next turn's prompt when the template drops it.

  offline_reasoning.py MKMODEL OFFLINE WORKDIR QWEN3_TEMPLATE

The model is the mock speaking the tiny Qwen2's vocabulary with Qwen3's chat template
(tests/data/chat-templates/qwen3), so the format is detected (auto); its scripted replies write
"<think>\\n...\\n</think>\\n\\n" and an answer.
- generate: "text" is the answer, "reasoning" the block's text (null without one); chat_template_kwargs
  {"enable_thinking": false} renders the closed empty block (the answer is then all text);
  --reasoning-format none keeps the raw text and writes no "reasoning".
- chat, piped: standard output holds exactly the answers; the thinking goes to standard error; /save
  keeps it as reasoning_content; the second turn's prompt is exactly the Qwen3 rendering of the
  conversation without the first turn's reasoning (its token count, from --stats, against `render`);
  /think hide hides it.
"""

import json
import os
import re
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_models import make_mock, make_tiny_qwen2, run  # noqa: E402

mkmodel, offline, work, template_file = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
tiny = make_tiny_qwen2(mkmodel, work)

REPLIES = {  # the first entry whose trigger is in the prompt answers: the later turn's first
    "second question": "<think>\nI think two.\n</think>\n\nTwo.",
    "first question": "<think>\nI think one.\n</think>\n\nOne.",
    "no think": "Plain.",
}


def jsonl(command, model, objects, *flags):
    out = run([offline, command, "--model", model, *flags] + (["--progress", "off"] if command == "generate" else []),
              "".join(json.dumps(o) + "\n" for o in objects)).stdout
    return [json.loads(line) for line in out.splitlines()]


ids = jsonl("tokenize", tiny, [{"text": t} for pair in REPLIES.items() for t in pair])
replies = [{"when_prompt_contains": ids[2 * i]["ids"], "ids": ids[2 * i + 1]["ids"]} for i in range(len(REPLIES))]
mock = make_mock(work, tiny, replies=replies)
with open(os.path.join(mock, "tokenizer_config.json")) as f:
    config = json.load(f)
with open(template_file) as f:
    config["chat_template"] = f.read()
with open(os.path.join(mock, "tokenizer_config.json"), "w") as f:
    json.dump(config, f)


def user(text):
    return [{"role": "user", "content": text}]


# --- generate ---------------------------------------------------------------------------------------
lines = [
    {"id": "a", "messages": user("first question"), "max_tokens": 64},
    {"id": "b", "messages": user("no think"), "max_tokens": 64, "chat_template_kwargs": {"enable_thinking": False}},
    {"id": "c", "prompt": "first question", "max_tokens": 8},
]
a, b, c = jsonl("generate", mock, lines)
assert (a["text"], a["reasoning"]) == ("One.", "I think one."), a
assert (b["text"], b["reasoning"]) == ("Plain.", None), b
assert "reasoning" not in c, c  # a raw prompt is not a chat answer
rendered = jsonl("render", mock, [{"messages": user("no think"), "chat_template_kwargs": {"enable_thinking": False}}])
assert b["prompt_ids"] == rendered[0]["ids"], "chat_template_kwargs did not reach the template"
assert rendered[0]["text"].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n"), rendered[0]["text"]
(raw,) = jsonl("generate", mock, lines[:1], "--reasoning-format", "none")
assert raw["text"] == REPLIES["first question"] and "reasoning" not in raw, raw
print("generate: reasoning apart, enable_thinking false renders the closed block, none keeps the raw text")

# --- chat, piped ------------------------------------------------------------------------------------
saved = os.path.join(work, "conversation.json")
p = run([offline, "chat", "--model", mock, "--temperature", "0", "--max-tokens", "64", "--stats"],
        f"first question\n/save {saved}\nsecond question\n")
assert p.stdout == "One.\nTwo.\n", p.stdout
assert "[thinking] I think one." in p.stderr and "[thinking] I think two." in p.stderr, p.stderr
with open(saved) as f:
    messages = json.load(f)["messages"]
assert messages == [{"role": "user", "content": "first question"},
                    {"role": "assistant", "content": "One.", "reasoning_content": "I think one."}], messages
turns = re.findall(r"^\[turn (\d+): prompt (\d+) tokens", p.stderr, re.M)
assert len(turns) == 2, p.stderr
second = messages + user("second question")
(expected,) = jsonl("render", mock, [{"messages": second}])
assert "I think one." not in expected["text"], expected["text"]  # Qwen3 drops an earlier turn's reasoning
assert int(turns[1][1]) == len(expected["ids"]), (turns, len(expected["ids"]), expected["text"])

hidden = run([offline, "chat", "--model", mock, "--temperature", "0", "--max-tokens", "64"],
             "/think hide\nfirst question\n")
assert hidden.stdout == "One.\n" and "[thinking]" not in hidden.stderr, hidden.stderr
print("chat: answers on stdout, thinking on stderr (hidden on /think hide), saved as reasoning_content, "
      "not carried into the next prompt")

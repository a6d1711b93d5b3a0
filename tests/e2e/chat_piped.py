"""llaisys-offline chat with standard input not a terminal: one message per line, one answer per turn.

  chat_piped.py MKMODEL OFFLINE WORKDIR

- The answers equal what the engine gives for the same conversation, computed independently with
  generate/render/tokenize/detokenize (chat_models.Reference), on the tiny Qwen2 and the mock.
- A conversation longer than the context keeps going: oldest turns are dropped with a notice, the
  system prompt and the new message are kept whole, every turn is answered.
- A message too long for the context alone is refused with an error, and the chat goes on.
- Statistics and notices go to standard error; standard output holds exactly the answers.
"""

import json
import os
import re
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_models import Reference, make_mock, make_tiny_qwen2, run  # noqa: E402

mkmodel, offline, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
tiny = make_tiny_qwen2(mkmodel, work)
mock = make_mock(work, tiny)
TURN = re.compile(r"^\[turn (\d+): prompt (\d+) tokens = (\d+) cached \+ (\d+) prefilled \((\d+) new\), "
                  r"answer (\d+) tokens \((\w+)\)", re.M)


def chat(model, lines, *flags, check=True):
    return run([offline, "chat", "--model", model, "--temperature", "0", *flags],
               "".join(line + "\n" for line in lines), check=check)


# --- answers equal the engine's for the same conversation ----------------------------------------
for name, model, users in (("tiny-qwen2", tiny, ["hi", "more"]),
                           ("mock", mock, ["hi", "more", "and a third thing"])):
    max_tokens = 24
    by_ids, by_messages, round_trips = Reference(offline, model, max_tokens).conversation(users)
    p = chat(model, users, "--max-tokens", str(max_tokens), "--stats")
    expected = "".join(answer + "\n" for answer in by_ids)
    assert p.stdout == expected, f"{name}: chat answers differ from the engine's\n{p.stdout!r}\n{expected!r}"
    turns = TURN.findall(p.stderr)
    assert len(turns) == len(users), p.stderr
    for number, prompt, cached, prefilled, new, answer, finish in turns:
        if int(number) > 1:
            assert int(cached) > 0, f"{name}: turn {number} reused nothing: {p.stderr}"
            assert 0 <= int(prefilled) - int(new) < 16, f"{name}: turn {number} recomputed old tokens: {p.stderr}"
    if round_trips:
        # Every answer re-encodes to its own ids, so re-rendering the messages gives the same prompts:
        # the chat then also equals generate over the conversation's messages.
        assert by_ids == by_messages, f"{name}: {by_ids} != {by_messages}"
    # Speculation changes the speed, not the answers: n-gram, and the model drafting for itself.
    for method in ("ngram", "draft:" + model):
        q = chat(model, users, "--max-tokens", str(max_tokens), "--speculative", method)
        assert q.stdout == expected, f"{name}: --speculative {method} changed the answers\n{q.stdout!r}"
    print(f"{name}: {len(users)} piped turns equal the engine's answers"
          f" (messages re-encoded: {'equal too' if round_trips else 'answers do not round-trip'})")
    if name == "tiny-qwen2":
        assert round_trips, "the acceptance conversation should round-trip on the tiny Qwen2 (seed 7)"

# --- a conversation longer than the context -------------------------------------------------------
saved = os.path.join(work, "overflow.json")
users = [f"Question {i}: tell me about topic number {i} in a few words" for i in range(12)]
context, max_tokens = 192, 24
p = chat(mock, users + [f"/save {saved}"], "--max-context", str(context), "--max-tokens", str(max_tokens),
         "--system", "You answer briefly.", "--stats")
assert "error" not in p.stderr, p.stderr
turns = TURN.findall(p.stderr)
assert [int(t[0]) for t in turns] == list(range(1, 13)), p.stderr
assert all(int(t[1]) + max_tokens <= context for t in turns), "a prompt left no room for the answer"
notices = re.findall(r"^\[context full: dropped the oldest \d+ turns? \(\d+ messages\) to fit 192 tokens\]$",
                     p.stderr, re.M)
assert len(notices) >= 3, p.stderr
assert all(int(t[5]) == max_tokens for t in turns), "an answer was cut short"
with open(saved) as f:
    messages = json.load(f)["messages"]
assert messages[0] == {"role": "system", "content": "You answer briefly."}, messages[0]
assert messages[-2] == {"role": "user", "content": users[-1]}, "the new message was not kept whole"
assert [m["role"] for m in messages[1:]] == ["user", "assistant"] * ((len(messages) - 1) // 2)
assert len(messages) < 1 + 2 * len(users)
print(f"overflow: 12 turns in a {context}-token context, {len(notices)} notices, "
      f"{(len(messages) - 1) // 2} turns kept with the system prompt")

# --- a message too long for the context alone, bad commands: errors, and the chat goes on --------
saved = os.path.join(work, "refused.json")
long_message = "word " * 300
p = chat(mock, ["hello", long_message, "/bogus", f"/load {os.path.join(work, 'missing.json')}", "hello again",
                f"/save {saved}"], "--max-context", "128", "--max-tokens", "8", "--stats", check=False)
assert p.returncode == 1, "a failed turn in piped mode must show in the exit code"
assert re.search(r"^error: the message does not fit the context: \d+ tokens .* the context holds 128$",
                 p.stderr, re.M), p.stderr
assert "unknown command /bogus" in p.stderr and "cannot open" in p.stderr, p.stderr
assert len(TURN.findall(p.stderr)) == 2, p.stderr
with open(saved) as f:
    messages = json.load(f)["messages"]
assert [m["content"] for m in messages if m["role"] == "user"] == ["hello", "hello again"], messages
lines = p.stdout.split("\n")
assert lines[1] == "", "the refused turn must print an empty answer line"
print("refused message and bad commands: errors on stderr, the conversation goes on")
print("chat piped e2e: ok")

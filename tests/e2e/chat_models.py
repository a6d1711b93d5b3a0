"""Models and reference runs shared by the chat e2e tests.

The tiny Qwen2 (llaisys-mkmodel, random weights, Qwen2's real tokenizer and chat template) and a
mock model with the same tokenizer, plus the independent references the tests compare the chat
with: `llaisys-offline generate`, `render`, `tokenize` and `detokenize`, never the chat's code.
"""

import json
import os
import subprocess


def run(cmd, stdin="", check=True, timeout=300):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} exited {p.returncode}: {p.stderr}")
    return p


def make_tiny_qwen2(mkmodel, work):
    path = os.path.join(work, "tiny-qwen2")
    if not os.path.exists(os.path.join(path, "config.json")):
        run([mkmodel, "--shape", "tiny", "--seed", "7", path])
    return path


def make_mock(work, tiny, name="mock", **mock):
    """A mock model speaking the tiny Qwen2's vocabulary through its tokenizer files.

    text_vocab_size keeps the mock's tokens to ordinary text (no special or unknown ids)."""
    path = os.path.join(work, name)
    os.makedirs(path, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(tiny, f), "rb") as src, open(os.path.join(path, f), "wb") as dst:
            dst.write(src.read())
    settings = {"eos_period": 0, "text_vocab_size": 6000}
    settings.update(mock)
    config = {"architectures": ["LlaisysMockForCausalLM"], "model_type": "llaisys-mock",
              "vocab_size": 151936, "hidden_size": 64, "max_position_embeddings": 4096,
              "eos_token_id": 151645, "bos_token_id": 151643, "mock": settings}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    return path


class Reference:
    """What the engine gives for a conversation, through llaisys-offline's batch commands."""

    def __init__(self, offline, model, max_tokens):
        self.offline, self.model, self.max_tokens = offline, model, max_tokens

    def _jsonl(self, command, obj):
        out = run([self.offline, command, "--model", self.model] +
                  (["--progress", "off"] if command == "generate" else []), json.dumps(obj) + "\n").stdout
        result = json.loads(out.splitlines()[0])
        assert "error" not in result, result
        return result

    def generate_messages(self, messages):
        return self._jsonl("generate", {"messages": messages, "max_tokens": self.max_tokens, "temperature": 0})

    def generate_ids(self, ids):
        return self._jsonl("generate", {"prompt_ids": ids, "max_tokens": self.max_tokens, "temperature": 0})

    def render(self, messages):
        return self._jsonl("render", {"messages": messages})["text"]

    def tokenize(self, text):
        return self._jsonl("tokenize", {"text": text, "add_special_tokens": False})["ids"]

    def detokenize(self, ids):
        return self._jsonl("detokenize", {"ids": ids, "skip_special_tokens": False})["text"]

    def conversation(self, user_messages):
        """Greedy answers to user_messages said one after the other, two ways.

        by_ids: the prompt of turn k is the ids of turn k-1 (its prompt and every generated id)
        followed by the tokens of only the text the chat template adds after them, which is what a
        conversation that keeps its token ids (llaisys chat, llama-cli) runs. by_messages: the whole
        conversation re-rendered and re-encoded from its messages every turn (generate, a server).
        They agree whenever every answer but the last re-encodes to the ids that were generated
        (round_trips)."""
        messages, by_ids, by_messages = [], [], []
        ids, text = [], ""
        round_trips = True
        for i, user in enumerate(user_messages):
            messages.append({"role": "user", "content": user})
            rendered = self.render(messages)
            if i == 0:
                prompt = self.tokenize(rendered)
            else:
                assert rendered.startswith(text), "the template rewrote the conversation's past"
                prompt = ids + self.tokenize(rendered[len(text):])
            result = self.generate_ids(prompt)
            assert result["prompt_ids"] == prompt
            by_ids.append(result["text"])
            by_messages.append(self.generate_messages(messages)["text"])
            answer_ids = result["output_ids"]
            later = i + 1 < len(user_messages)  # only answers that a later prompt holds matter
            if later and self.tokenize(result["text"]) != [t for t in answer_ids if t not in (151643, 151645)]:
                round_trips = False
            ids = prompt + answer_ids
            text = rendered + self.detokenize(answer_ids)
            messages.append({"role": "assistant", "content": result["text"]})
        return by_ids, by_messages, round_trips

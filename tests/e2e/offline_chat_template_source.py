#!/usr/bin/env python3
"""Which chat template a model's chat requests use, and the ChatML fallback for models without one.

stories260K has no chat template: `generate --chat` renders with ChatML (BOS first, since its tokenizer
adds BOS), its summary says "chat template: fallback: chatml", and `render` shows the same prompt. A
model with a template (Qwen2 tokenizer files over the mock model) says "chat template: model".

usage: offline_chat_template_source.py OFFLINE STORIES_DIR QWEN2_TOKENIZER_DIR WORKDIR
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

# ChatML as llama.cpp's fallback writes it.
CHATML = "<s><|im_start|>user\nOnce upon a time<|im_end|>\n<|im_start|>assistant\n"


def main() -> int:
    offline, stories, qwen2_tokenizer, work = sys.argv[1:5]
    work = Path(work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    failures = []
    (work / "chat.txt").write_text("Once upon a time\n")

    run = subprocess.run([offline, "--threads", "1", "generate", "--model", stories, "--chat", "--max-tokens", "8", "--progress", "off",
                          str(work / "chat.txt")], capture_output=True, text=True)
    if run.returncode != 0 or "chat template: fallback: chatml" not in run.stderr:
        failures.append(f"stories260K --chat should use the ChatML fallback: rc {run.returncode}\n{run.stderr}")
    rendered = subprocess.run([offline, "render", "--model", stories],
                              input=json.dumps({"messages": [{"role": "user", "content": "Once upon a time"}]}),
                              capture_output=True, text=True)
    if rendered.returncode != 0:
        failures.append(f"render on stories260K failed: {rendered.stderr}")
    else:
        r = json.loads(rendered.stdout)
        if r["text"] != CHATML:
            failures.append(f"fallback rendering {r['text']!r} != {CHATML!r}")
        generated = json.loads(run.stdout.splitlines()[0]) if run.returncode == 0 else {}
        if r["ids"][0] != 1 or generated.get("prompt_ids") != r["ids"]:
            failures.append(f"generate's chat prompt {generated.get('prompt_ids')} != render's {r['ids']}")
        if "fallback ChatML template" not in rendered.stderr:
            failures.append(f"render should say it falls back: {rendered.stderr!r}")

    model = work / "mock-qwen2"
    model.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(qwen2_tokenizer) / f, model / f)
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlaisysMockForCausalLM"], "vocab_size": 151936, "hidden_size": 8,
        "max_position_embeddings": 2048, "eos_token_id": 151645, "mock": {"text_vocab_size": 6000}}))
    run = subprocess.run([offline, "generate", "--model", str(model), "--chat", "--max-tokens", "4", "--progress", "off",
                          str(work / "chat.txt")], capture_output=True, text=True)
    if run.returncode != 0 or "chat template: model" not in run.stderr:
        failures.append(f"a model with a template should use it: rc {run.returncode}\n{run.stderr}")
    for f in failures:
        print("FAIL", f)
    if not failures:
        print("chat template sources: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

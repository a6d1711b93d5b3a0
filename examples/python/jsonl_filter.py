#!/usr/bin/env python3
"""llaisys embedded in a pipeline, no server: JSON lines in on stdin, JSON lines out on stdout.

    printf '%s\\n' '{"prompt": "Once upon a time"}' \\
        '{"id": "q2", "messages": [{"role": "user", "content": "Hi!"}], "max_tokens": 8}' |
      PYTHONPATH=build/default/python python3 examples/python/jsonl_filter.py models/stories260K

An input line is {"prompt": "..."} or a conversation {"messages": [{"role", "content"}, ...]}
(rendered with the model's chat template), with optional "id", "max_tokens", "temperature" and
"seed". Up to --batch lines go to the engine together; one output line per input line, in input
order: {"id", "text", "finish_reason", "prompt_tokens", "completion_tokens"}, or {"id", "error"}
for a line the engine refuses (its message), without stopping the others.
"""
import argparse
import json
import sys
from itertools import islice

from llaisys import LLM, SamplingParams


def parse(text: str) -> dict:
    try:
        line = json.loads(text)
    except json.JSONDecodeError as e:
        return {"invalid": f"not JSON: {e}"}
    return line if isinstance(line, dict) else {"invalid": "not a JSON object"}


def to_request(llm: LLM, line: dict):
    """(prompt, SamplingParams) for one input line: a conversation becomes its template's token ids."""
    if "invalid" in line:
        raise ValueError(line["invalid"])
    params = SamplingParams(max_tokens=line.get("max_tokens", 64), temperature=line.get("temperature", 0.0),
                            seed=line.get("seed"))
    if "messages" in line:
        ids = llm.get_tokenizer().apply_chat_template(line["messages"], tokenize=True)
        return {"prompt_token_ids": ids}, params
    return line["prompt"], params


def answer(out) -> dict:
    choice = out.outputs[0]
    return {"text": choice.text, "finish_reason": choice.finish_reason,
            "prompt_tokens": len(out.prompt_token_ids), "completion_tokens": len(choice.token_ids)}


def run_batch(llm: LLM, lines: list[dict]) -> list[dict]:
    try:
        requests = [to_request(llm, line) for line in lines]
        outputs = llm.generate([p for p, _ in requests], [sp for _, sp in requests])
        return [answer(out) for out in outputs]
    except (ValueError, KeyError, TypeError):
        if len(lines) == 1:
            raise
        # Someone's line is bad: one at a time, so only that line gets the error.
        results = []
        for line in lines:
            try:
                results.extend(run_batch(llm, [line]))
            except (ValueError, KeyError, TypeError) as e:
                results.append({"error": str(e)})
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a Hugging Face model directory or a GGUF file")
    parser.add_argument("--batch", type=int, default=32, help="lines sent to the engine together")
    args = parser.parse_args()

    with LLM(args.model, max_num_seqs=args.batch) as llm:
        numbered = enumerate(line for line in sys.stdin if line.strip())
        while batch := list(islice(numbered, args.batch)):
            lines = [parse(text) for _, text in batch]
            for (number, _), line, result in zip(batch, lines, run_batch(llm, lines)):
                print(json.dumps({"id": line.get("id", number), **result}, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The whole stack on the shipped demo model: llaisys-offline generate encodes each reference prompt
with the model's tokenizer (BOS from add_bos_token), runs the engine and the llama plugin greedily
with llama2.c's rules (stop on BOS, id 1; EOS is not a stop; 256 forward passes in all), and streams
the text back. Every case of tests/data/stories260K/reference.json must come back exactly: prompt
ids, generated ids, and prompt + generated text equal to the reference text.

usage: offline_stories260k_reference.py OFFLINE MODEL_DIR REFERENCE_JSON WORKDIR
"""
import json
import subprocess
import sys
from pathlib import Path

STEPS = 256  # llama2.c's forward passes: the sequence ends at position 256 at the latest


def main() -> int:
    offline, model, reference_path, work = sys.argv[1:5]
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    reference = json.loads(Path(reference_path).read_text())
    lines = [json.dumps({"id": i, "prompt": case["prompt"], "max_tokens": STEPS + 1 - len(case["prompt_ids"]),
                         "stop_token_ids": [1], "ignore_eos": True})
             for i, case in enumerate(reference["cases"])]
    (work / "in.jsonl").write_text("\n".join(lines) + "\n")
    run = subprocess.run([offline, "generate", "--model", model, "--temperature", "0", "--progress", "off",
                          str(work / "in.jsonl")], capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stderr)
        return 1
    results = {r["id"]: r for r in map(json.loads, run.stdout.splitlines())}
    failures = []
    for i, case in enumerate(reference["cases"]):
        got = results.get(i)
        name = case["prompt"]
        if got is None or "error" in got:
            failures.append(f"{name!r}: no result ({got})")
            continue
        if got["prompt_ids"] != case["prompt_ids"]:
            failures.append(f"{name!r}: prompt ids {got['prompt_ids']} != {case['prompt_ids']}")
        if got["output_ids"] != case["greedy_ids"]:
            first = next((k for k, (a, b) in enumerate(zip(got["output_ids"], case["greedy_ids"])) if a != b),
                         min(len(got["output_ids"]), len(case["greedy_ids"])))
            failures.append(f"{name!r}: generated ids differ from the reference at step {first} "
                            f"({len(got['output_ids'])} vs {len(case['greedy_ids'])} tokens)")
        if case["prompt"] + got["text"] != case["text"]:
            failures.append(f"{name!r}: text differs:\n  got  {case['prompt'] + got['text']!r}\n  want {case['text']!r}")
        want_reason = "stop" if case["stopped_on_bos"] else "length"
        if got["finish_reason"] != want_reason:
            failures.append(f"{name!r}: finish_reason {got['finish_reason']}, want {want_reason}")
        print(f"{name!r}: {len(got['output_ids'])} tokens, finish_reason {got['finish_reason']}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""llaisys-offline on GGUF files made by llama.cpp's tools (tests/data/tiny-llama-gguf): every
reference case's *text* goes in (so the file's own tokenizer encodes it, BOS included), and the
prompt ids must be the reference's; the greedy continuation must be llama.cpp's token for token up
to the first step whose top-1/top-2 gap in the reference is within twice the file's tolerance
(past it either token is right, and the comparison of that case ends). EOS is not a stop there.
With the quantized files' tolerances (0.4-0.55) few steps clear that bar free-running, so at least
20 compared steps are required of F32 and F16 only; the teacher-forced comparison of every file is
the unit test's (tests/unit/gguf). Last, `render --template FILE` on a GGUF model must see the
file's bos/eos strings.

usage: offline_gguf.py OFFLINE FIXTURE_DIR WORKDIR TYPE...
"""
import json
import subprocess
import sys
from pathlib import Path


def main() -> int:
    offline, fixture, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    failures = []
    for kind in sys.argv[4:]:
        reference = json.loads((fixture / f"reference-{kind}.json").read_text())
        tolerance = reference["suggested_logit_tolerance"]
        lines = [json.dumps({"id": c["name"], "prompt": c["text"], "max_tokens": len(c["greedy"]), "ignore_eos": True})
                 for c in reference["cases"]]
        (work / f"in-{kind}.jsonl").write_text("\n".join(lines) + "\n")
        run = subprocess.run([offline, "generate", "--model", str(fixture / f"tiny-llama-{kind}.gguf"), "--temperature",
                              "0", "--progress", "off", str(work / f"in-{kind}.jsonl")], capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{kind}: llaisys-offline failed: {run.stderr[-2000:]}")
            continue
        results = {r["id"]: r for r in map(json.loads, run.stdout.splitlines())}
        compared = 0
        for case in reference["cases"]:
            got = results.get(case["name"])
            if got is None or "error" in got:
                failures.append(f"{kind} {case['name']}: {got}")
                continue
            if got["prompt_ids"] != case["prompt_ids"]:
                failures.append(f"{kind} {case['name']}: prompt ids {got['prompt_ids'][:12]}... differ from llama.cpp's "
                                f"{case['prompt_ids'][:12]}...")
                continue
            for step, (want, ours) in enumerate(zip(case["greedy"], got["output_ids"])):
                top = want["top5"]
                if top[0][1] - top[1][1] <= 2 * tolerance:
                    break  # a near tie: either token is right, and the continuations part
                compared += 1
                if ours != want["token"]:
                    failures.append(f"{kind} {case['name']} step {step}: token {ours}, llama.cpp {want['token']}")
                    break
        print(f"{kind}: {len(reference['cases'])} prompts tokenized as llama.cpp does, {compared} greedy steps compared")
        if compared < 20 and kind in ("F32", "F16"):
            failures.append(f"{kind}: only {compared} greedy steps compared")
    # A template file in place of the file's own still sees the GGUF tokenizer's bos/eos strings.
    template = work / "t.jinja"
    template.write_text("{{ bos_token }}|{% for m in messages %}{{ m['content'] }}{% endfor %}|{{ eos_token }}")
    render = subprocess.run([offline, "render", "--model", str(fixture / "tiny-llama-Q8_0.gguf"), "--template", str(template)],
                            input=json.dumps({"messages": [{"role": "user", "content": "Hi"}]}) + "\n",
                            capture_output=True, text=True)
    rendered = json.loads(render.stdout).get("text") if render.returncode == 0 and render.stdout else None
    if rendered != "<s>|Hi|</s>":
        failures.append(f"render --template on a GGUF model: {rendered!r} ({render.stderr[-500:]})")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

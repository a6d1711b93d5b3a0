#!/usr/bin/env python3
"""The whole stack against llama.cpp's reference for tiny-qwen2: llaisys-mkmodel writes the model,
llaisys-offline generate renders each case (chat messages through the model's chat template, or the
raw text) and decodes greedily with --top-logits 5; every case must reproduce the reference's prompt
ids, its 32 greedy tokens, and the top-5 raw logits of each step within 2e-3 (ids in the same order
wherever neighbouring logits differ by more than that).

usage: offline_qwen2_reference.py MKMODEL OFFLINE REFERENCE_JSON WORKDIR
"""
import json
import subprocess
import sys
from pathlib import Path

TOL = 2e-3


def main() -> int:
    mkmodel, offline, reference_path, work = sys.argv[1:5]
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    model = work / "tiny-qwen2"
    subprocess.run([mkmodel, "--shape", "tiny", "--force", str(model)], check=True, stdout=subprocess.DEVNULL)
    reference = json.loads(Path(reference_path).read_text())
    lines = []
    for case in reference["cases"]:
        line = {"id": case["name"], "max_tokens": len(case["greedy"]), "ignore_eos": True}
        if "messages" in case:
            line["messages"] = case["messages"]
        else:
            line["prompt"] = case["text"]
        lines.append(json.dumps(line))
    (work / "in.jsonl").write_text("\n".join(lines) + "\n")
    run = subprocess.run([offline, "--model-options", '{"matmul": "f32"}', "generate", "--model", str(model), "--temperature", "0", "--top-logits", "5",
                          "--progress", "off", str(work / "in.jsonl")], check=True, capture_output=True, text=True)
    results = {r["id"]: r for r in map(json.loads, run.stdout.splitlines())}
    failures = []
    worst = 0.0
    for case in reference["cases"]:
        name = case["name"]
        got = results.get(name)
        if got is None or "error" in got:
            failures.append(f"{name}: no result ({got})")
            continue
        if got["prompt_ids"] != case["prompt_ids"]:
            failures.append(f"{name}: prompt ids differ from the reference's")
        want_tokens = [step["token"] for step in case["greedy"]]
        if got["output_ids"] != want_tokens:
            failures.append(f"{name}: greedy tokens {got['output_ids']} != reference {want_tokens}")
        for step, (want, have) in enumerate(zip(case["greedy"], got.get("top_logits", []))):
            want_top = want["top5"]
            if len(have) != len(want_top):
                failures.append(f"{name} step {step}: {len(have)} logits, want {len(want_top)}")
                continue
            # The same ids in the same order, except between neighbours closer than the tolerance.
            by_id = {tid: logit for tid, logit in have}
            for rank, (tid, logit) in enumerate(want_top):
                if tid not in by_id:
                    near_edge = rank == len(want_top) - 1 or abs(logit - want_top[-1][1]) <= TOL
                    if not near_edge:
                        failures.append(f"{name} step {step}: token {tid} (rank {rank}) missing from top 5")
                    continue
                diff = abs(by_id[tid] - logit)
                worst = max(worst, diff)
                if diff > TOL:
                    failures.append(f"{name} step {step}: token {tid} logit {by_id[tid]} vs {logit}")
                have_rank = [t for t, _ in have].index(tid)
                if have_rank != rank:
                    neighbour = want_top[min(rank, have_rank)][1] - want_top[max(rank, have_rank)][1]
                    if abs(neighbour) > TOL:
                        failures.append(f"{name} step {step}: token {tid} at rank {have_rank}, want {rank}")
        if len(got.get("top_logits", [])) != len(case["greedy"]):
            failures.append(f"{name}: {len(got.get('top_logits', []))} steps of top_logits, want {len(case['greedy'])}")
    print(f"{len(reference['cases'])} cases, largest top-5 logit difference {worst:.2e} (tolerance {TOL})")
    for f in failures[:40]:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

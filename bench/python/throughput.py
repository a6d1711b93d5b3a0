#!/usr/bin/env python3
"""32-sequence throughput through the Python package against `llaisys-bench engine`, same run.

Each round runs `llaisys-bench engine --scenario throughput` as a subprocess and the same workload
through `llaisys.LLM.generate` in this process, alternating which goes first, and prints both
aggregate generated tokens/s and their ratio (issue 24: Python within 5% of the C++ bench).

The workload is the bench's (apps/bench/bench_engine.cpp): the generated qwen2-0.5b model (no
tokenizer; token-id prompts), one warm-up request (16 prompt tokens, 2 new), then one sequence and
then `--concurrency` sequences of `--prompt-tokens` synthetic token ids (the bench's generator,
below) with `--new-tokens` greedy tokens each, EOS ignored, all submitted at once; the engine
configured as the bench configures it (KV 2 GiB, max_num_seqs 64, 2,048 batched tokens, blocks of
16, max_context 4,096, no prefix cache, seed 0). The Python figure is the wall time of the
`generate` call itself: submitting, running, collecting and building the RequestOutputs.

usage: bench/python/throughput.py [--build build/default] [--rounds 4] [--threads 2]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

MASK64 = (1 << 64) - 1


def synthetic_tokens(stream, length):
    """The bench's deterministic prompt ids (synthetic_tokens in apps/bench/bench_engine.cpp)."""
    tokens = []
    x = (stream * 0x9E3779B97F4A7C15 + 0xD1B54A32D192ED03) & MASK64
    for _ in range(length):
        x ^= x >> 31
        x = (x * 0xBF58476D1CE4E5B9) & MASK64
        x ^= x >> 29
        tokens.append(100 + x % 149000)
    return tokens


# "  32 sequences:   181.52 generated tokens/s (22.57 s; decode phase 312.1 tokens/s)"
BENCH_LINE = re.compile(r"^\s*(\d+) sequences?:\s+([\d.]+) generated tokens/s \(([\d.]+) s")


def run_bench(bench, args):
    command = [str(bench), "engine", "--scenario", "throughput", "--model", args.model,
               "--threads", str(args.threads), "--concurrency", str(args.concurrency),
               "--prompt-tokens", str(args.prompt_tokens), "--new-tokens", str(args.new_tokens),
               "--options", args.options, "--kv-cache-mb", "2048"]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"llaisys-bench failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    figures = {}
    for line in run.stdout.splitlines():
        print(f"  bench | {line}")
        m = BENCH_LINE.match(line)
        if m:
            figures[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    return figures


def run_python(llaisys, args):
    """The same runs through LLM.generate; {sequences: (tokens/s, seconds)}."""
    figures = {}
    options = dict(max_num_seqs=max(64, args.concurrency), max_batched_tokens=2048, kv_cache_mb=2048,
                   block_size=16, max_context=4096, no_prefix_cache=True, seed=0, threads=args.threads,
                   model_options=json.loads(args.options))
    with llaisys.LLM(args.model, **options) as llm:
        params = llaisys.SamplingParams(temperature=0.0, max_tokens=args.new_tokens, ignore_eos=True)
        llm.generate({"prompt_token_ids": synthetic_tokens(999, 16)},
                     llaisys.SamplingParams(temperature=0.0, max_tokens=2, ignore_eos=True))
        for count in (1, args.concurrency):
            prompts = [{"prompt_token_ids": synthetic_tokens(i, args.prompt_tokens)} for i in range(count)]
            steps_before = llm.get_stats()["num_steps"]
            start = time.perf_counter()
            outs = llm.generate(prompts, params)
            wall = time.perf_counter() - start
            steps = llm.get_stats()["num_steps"] - steps_before
            generated = sum(len(o.outputs[0].token_ids) for o in outs)
            assert generated == count * args.new_tokens, generated
            figures[count] = (generated / wall, wall)
            label = "1 sequence: " if count == 1 else f"{count} sequences:"
            print(f"  python|   {label} {generated / wall:8.2f} generated tokens/s ({wall:.2f} s; {steps} steps, "
                  f"{wall / max(steps, 1) * 1e3:.3f} ms per step)")
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build/default", help="build tree: bin/llaisys-bench and python/")
    parser.add_argument("--model", default=None,
                        help="model directory (default: the bench's generated qwen2-0.5b in ~/.cache/llaisys/models)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds; odd ones run the bench first")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--options", default="{}", help="model options (JSON), as the bench's --options")
    args = parser.parse_args()

    build = Path(args.build).resolve()
    bench = build / "bin" / "llaisys-bench"
    sys.path.insert(0, str(build / "python"))
    import llaisys
    llaisys.set_log_level("warn")
    if args.model is None:
        args.model = str(Path.home() / ".cache/llaisys/models/bench-qwen2-0.5b")
    if not Path(args.model).exists():
        # The bench generates the shape into its cache on first use.
        subprocess.run([str(bench), "engine", "--scenario", "throughput", "--concurrency", "1",
                        "--new-tokens", "1", "--prompt-tokens", "1"], check=True, capture_output=True)

    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    print(f"model: {args.model}; {args.threads} threads; {args.concurrency} x ({args.prompt_tokens} prompt + "
          f"{args.new_tokens} new tokens), greedy; options {args.options}")
    print(f"cpu: {cpu} ({os.cpu_count()} cpus); load average before: {os.getloadavg()[0]:.2f}")
    ratios = []
    for round_index in range(args.rounds):
        print(f"round {round_index + 1} ({'bench first' if round_index % 2 == 0 else 'python first'}):")
        if round_index % 2 == 0:
            bench_figures, python_figures = run_bench(bench, args), run_python(llaisys, args)
        else:
            python_figures = run_python(llaisys, args)
            bench_figures = run_bench(bench, args)
        ratio = python_figures[args.concurrency][0] / bench_figures[args.concurrency][0]
        ratios.append(ratio)
        print(f"  {args.concurrency} sequences: python {python_figures[args.concurrency][0]:.2f} vs bench "
              f"{bench_figures[args.concurrency][0]:.2f} tokens/s: ratio {ratio:.3f} "
              f"(load average now {os.getloadavg()[0]:.2f})")
    mean = sum(ratios) / len(ratios)
    print(f"ratios python / bench: {', '.join(f'{r:.3f}' for r in ratios)}; mean {mean:.3f}, median "
          f"{statistics.median(ratios):.3f} (target >= 0.95: {'MET' if mean >= 0.95 else 'MISSED'}); "
          f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

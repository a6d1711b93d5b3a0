#!/usr/bin/env python3
"""The Hugging Face transformers baseline of `llaisys-bench cuda --scenario throughput`.

Same workload, same draws: --sequences requests whose input and output lengths are uniform in
[min_len, max_len] and whose prompt ids are below 10,000, from the splitmix64 stream of
apps/bench/bench_cuda.cpp (seed --seed); EOS ignored, temperature 0.6. The model is the same
directory (e.g. ~/.cache/llaisys/models/bench-qwen2-0.5b, written by llaisys-bench), loaded in bf16
on the GPU with model.generate.

transformers cannot give each sequence of a batch its own number of new tokens, so requests are
sorted by output length and run in batches of --batch-size (left padding), each batch generating its
longest output (min_new_tokens = max_new_tokens, so EOS never stops it early); only the tokens each
request asked for count as generated. Run on the same machine, in the same session, as the llaisys
figure (docs/CUDA.md):

  python3 apps/bench/hf_throughput.py --model ~/.cache/llaisys/models/bench-qwen2-0.5b
"""

import argparse
import time

MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def workload(sequences, min_len, max_len, seed):
    rng = SplitMix64(seed)
    span = max_len - min_len + 1
    requests = []
    for _ in range(sequences):
        in_len = min_len + rng.next() % span
        out_len = min_len + rng.next() % span
        prompt = [rng.next() % 10000 for _ in range(in_len)]
        requests.append((prompt, out_len))
    return requests


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model directory (config.json + safetensors)")
    parser.add_argument("--sequences", type=int, default=256)
    parser.add_argument("--min-len", type=int, default=100)
    parser.add_argument("--max-len", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(args.seed)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.bfloat16).to("cuda").eval()
    requests = workload(args.sequences, args.min_len, args.max_len, args.seed)
    pad = 0

    def run(batch):
        width = max(len(p) for p, _ in batch)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p, _ in batch], device="cuda")
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p, _ in batch], device="cuda")
        new = max(n for _, n in batch)
        with torch.inference_mode():
            model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=0.6, top_k=0,
                           max_new_tokens=new, min_new_tokens=new, pad_token_id=pad)

    run([([1, 2, 3], 4)])  # warm-up
    torch.cuda.synchronize()
    ordered = sorted(requests, key=lambda r: r[1])
    start = time.perf_counter()
    for i in range(0, len(ordered), args.batch_size):
        run(ordered[i:i + args.batch_size])
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    generated = sum(n for _, n in requests)
    prompt_tokens = sum(len(p) for p, _ in requests)
    print(f"device:     {torch.cuda.get_device_name()} (torch {torch.__version__})")
    print(f"hf:         {args.sequences} sequences, lengths in [{args.min_len}, {args.max_len}] (seed {args.seed}): "
          f"{prompt_tokens} prompt + {generated} generated tokens in {wall:.2f} s")
    print(f"            {generated / wall:.0f} generated tokens/s (transformers generate, bf16, batches of "
          f"{args.batch_size} sorted by output length)")


if __name__ == "__main__":
    main()

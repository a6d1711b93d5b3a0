#!/usr/bin/env python3
"""Offline batch generation with llaisys (vLLM's LLM.generate / LLM.chat).

    PYTHONPATH=build/default/python python3 examples/python/offline_batch.py MODEL_DIR_OR_GGUF

All prompts go to the engine at once; it batches them (continuous batching), and results come back
in prompt order.
"""
import argparse
import time

from llaisys import LLM, SamplingParams


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a Hugging Face model directory or a GGUF file")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    prompts = [
        "The capital of France is",
        "Once upon a time, a small robot",
        "The three laws of thermodynamics are",
        "A haiku about the sea:",
    ]
    params = SamplingParams(temperature=args.temperature, top_p=0.95, max_tokens=args.max_tokens, seed=args.seed)

    with LLM(args.model, max_num_seqs=32) as llm:
        start = time.perf_counter()
        outputs = llm.generate(prompts, params)
        elapsed = time.perf_counter() - start
        for out in outputs:
            choice = out.outputs[0]
            print(f"--- {out.prompt!r} ({len(choice.token_ids)} tokens, {choice.finish_reason})")
            print(choice.text)
        generated = sum(len(o.outputs[0].token_ids) for o in outputs)
        print(f"\n{generated} tokens in {elapsed:.2f} s ({generated / elapsed:.1f} tokens/s)")

        # A chat turn, rendered with the model's own chat template.
        (reply,) = llm.chat([{"role": "user", "content": "Say hello in three languages."}],
                            SamplingParams(temperature=0, max_tokens=args.max_tokens))
        print("\n--- chat:", reply.outputs[0].text)


if __name__ == "__main__":
    main()

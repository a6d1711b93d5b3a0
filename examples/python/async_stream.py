#!/usr/bin/env python3
"""Streaming with llaisys.AsyncLLM: several requests at once, each printed as it grows.

    PYTHONPATH=build/default/python python3 examples/python/async_stream.py MODEL_DIR_OR_GGUF
"""
import argparse
import asyncio

from llaisys import AsyncLLM, RequestOutputKind, SamplingParams


async def stream(engine: AsyncLLM, request_id: str, question: str, max_tokens: int) -> None:
    params = SamplingParams(temperature=0, max_tokens=max_tokens, output_kind=RequestOutputKind.DELTA)
    async for out in engine.chat([{"role": "user", "content": question}], params, request_id=request_id):
        for choice in out.outputs:
            if choice.text:
                print(f"[{request_id}] {choice.text!r}")
            if choice.finish_reason:
                print(f"[{request_id}] finished: {choice.finish_reason}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a Hugging Face model directory or a GGUF file")
    parser.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args()
    questions = ["What is a llama?", "Name three prime numbers.", "Why is the sky blue?"]
    async with AsyncLLM(args.model, max_num_seqs=8) as engine:
        await asyncio.gather(*(stream(engine, f"q{i}", q, args.max_tokens) for i, q in enumerate(questions)))


if __name__ == "__main__":
    asyncio.run(main())

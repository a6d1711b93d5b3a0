"""AsyncLLM on the tiny Qwen2: 32 concurrent streams stay apart and equal LLM's results; abort and
early exit free the request. Environment as in test_llm.py (set by ctest)."""
import asyncio
import os
import time

import pytest

from llaisys import LLM, AsyncLLM, RequestOutputKind, SamplingParams

MODEL = os.environ.get("LLAISYS_TEST_MODEL", "")
ENGINE_OPTIONS = {"model_options": {"matmul": "f32"}, "kv_cache_mb": 64}

if not MODEL:
    pytest.exit("LLAISYS_TEST_MODEL must be set (ctest sets it)", returncode=2)


def prompts(count):
    return [{"prompt_token_ids": [100 + i, 200 + 3 * i, 300 + 7 * i]} for i in range(count)]


def greedy(max_tokens, **kw):
    return SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True, **kw)


async def wait_idle(engine, timeout=10.0):
    """Stats lag the engine by one step: wait until nothing is in flight and no KV is pinned (the
    loop keeps running meanwhile, so abandoned generators get closed)."""
    deadline = time.monotonic() + timeout
    while True:
        stats = engine.get_stats()
        if stats["num_in_flight"] == 0 and stats["kv_num_used_blocks"] == 0:
            return stats
        assert time.monotonic() < deadline, f"engine not idle: {stats}"
        await asyncio.sleep(0.01)


def test_32_concurrent_streams_do_not_mix_and_equal_generate():
    with LLM(MODEL, **ENGINE_OPTIONS) as llm:
        want = [o.outputs[0].token_ids for o in llm.generate(prompts(32), greedy(10))]

    async def stream(engine, i, prompt):
        request_id = f"req-{i}"
        deltas = []
        last = None
        async for out in engine.generate(prompt, greedy(10, output_kind=RequestOutputKind.DELTA), request_id):
            assert out.request_id == request_id
            deltas.extend(out.outputs[0].token_ids if out.outputs else [])
            last = out
        assert last.finished and last.outputs[0].finish_reason == "length"
        return deltas

    async def cumulative(engine, prompt):
        outs = [out async for out in engine.generate(prompt, greedy(10))]
        # Each output is the state so far: token lists only grow.
        lengths = [len(o.outputs[0].token_ids) for o in outs]
        assert lengths == sorted(lengths) and lengths[-1] == 10
        return outs[-1].outputs[0].token_ids

    async def main():
        async with AsyncLLM(MODEL, **ENGINE_OPTIONS) as engine:
            got = await asyncio.gather(*(stream(engine, i, p) for i, p in enumerate(prompts(32))))
            assert got == want
            assert await cumulative(engine, prompts(1)[0]) == want[0]
            (final,) = [o async for o in engine.generate(prompts(1)[0],
                                                         greedy(10, output_kind=RequestOutputKind.FINAL_ONLY))]
            assert final.finished and final.outputs[0].token_ids == want[0]

    asyncio.run(main())


def test_abort_mid_stream_frees_the_request():
    async def main():
        async with AsyncLLM(MODEL, **ENGINE_OPTIONS) as engine:
            outs = []
            async for out in engine.generate("Once upon a time", greedy(3000, output_kind=RequestOutputKind.DELTA),
                                             request_id="long"):
                outs.append(out)
                if len(outs) == 2:
                    await engine.abort("long")
            assert outs[-1].finished and outs[-1].outputs[0].finish_reason == "abort"
            assert sum(len(o.outputs[0].token_ids) for o in outs if o.outputs) < 3000
            await wait_idle(engine)

            # Leaving the iteration early aborts too (it would otherwise run its 3000 tokens).
            before = engine.get_stats()["num_generated_tokens"]
            async for _ in engine.generate("Once upon a time", greedy(3000), request_id="left"):
                break
            # The abandoned generator is closed by the loop (asyncgen finalizer), which aborts it.
            stats = await wait_idle(engine)
            assert stats["num_generated_tokens"] - before < 3000

    asyncio.run(main())


def test_close_ends_running_streams():
    async def main():
        engine = AsyncLLM(MODEL, **ENGINE_OPTIONS)
        stream = engine.generate("Once upon a time", greedy(3000, output_kind=RequestOutputKind.DELTA))
        first = await stream.__anext__()
        assert not first.finished
        engine.close()
        engine.close()
        rest = [out async for out in stream]
        assert rest and rest[-1].finished and rest[-1].outputs[0].finish_reason == "abort"
        with pytest.raises(RuntimeError, match="closed"):
            async for _ in engine.generate("hello"):
                pass

    asyncio.run(main())

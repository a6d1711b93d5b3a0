"""stories260K (models/stories260K, the llama plugin) through LLM.generate equals
tests/data/stories260K/reference.json exactly, as tests/e2e/offline_stories260k_reference.py checks
llaisys-offline: prompt ids, generated ids, prompt + generated text, and the finish reason under
llama2.c's rules (greedy, stop on BOS = id 1, EOS not a stop, 256 positions in all).

Environment (ctest sets it; the defaults are the repository's files, for running by hand):
  LLAISYS_TEST_STORIES260K            the model directory
  LLAISYS_TEST_STORIES260K_REFERENCE  the reference JSON
"""
import json
import os
from pathlib import Path

import pytest

from llaisys import LLM, SamplingParams

ROOT = Path(__file__).resolve().parents[2]
MODEL = os.environ.get("LLAISYS_TEST_STORIES260K", str(ROOT / "models/stories260K"))
REFERENCE = os.environ.get("LLAISYS_TEST_STORIES260K_REFERENCE",
                           str(ROOT / "tests/data/stories260K/reference.json"))
STEPS = 256  # llama2.c's forward passes: the sequence ends at position 256 at the latest

CASES = json.loads(Path(REFERENCE).read_text(encoding="utf-8"))["cases"]


def llama2c_params(case):
    return SamplingParams(temperature=0.0, max_tokens=STEPS + 1 - len(case["prompt_ids"]),
                          stop_token_ids=[1], ignore_eos=True)


def check(out, case):
    choice = out.outputs[0]
    assert out.prompt_token_ids == case["prompt_ids"]
    assert choice.token_ids == case["greedy_ids"]
    assert case["prompt"] + choice.text == case["text"]
    assert choice.finish_reason == ("stop" if case["stopped_on_bos"] else "length")


@pytest.fixture(scope="module")
def llm():
    with LLM(MODEL, kv_cache_mb=16) as engine:
        assert engine.get_info()["architecture"] == "LlamaForCausalLM"
        yield engine


def test_stories_one_by_one_equal_the_reference(llm):
    for case in CASES:
        (out,) = llm.generate(case["prompt"], llama2c_params(case))
        check(out, case)


def test_stories_in_one_batch_equal_the_reference(llm):
    outs = llm.generate([case["prompt"] for case in CASES], [llama2c_params(case) for case in CASES])
    assert len(outs) == len(CASES)
    for out, case in zip(outs, CASES):
        check(out, case)

"""The Python package on llaisys-mkmodel's tiny Qwen2 against tests/data/tiny-qwen2/reference.json
(llama.cpp's greedy tokens), as tests/capi/test_c_api.c does from C.

The ctest registration (tests/python/CMakeLists.txt) sets the environment:
  PYTHONPATH               <build>/python (the built package)
  LLAISYS_TEST_MODEL       the tiny Qwen2 directory written by llaisys-mkmodel
  LLAISYS_TEST_REFERENCE   tests/data/tiny-qwen2/reference.json
"""
import json
import os
import signal
import threading
import time

import pytest

import llaisys
from llaisys import LLM, SamplingParams

MODEL = os.environ.get("LLAISYS_TEST_MODEL", "")
REFERENCE = os.environ.get("LLAISYS_TEST_REFERENCE", "")
# The options the reference was checked with in tests/capi: F32 matmuls, as llama.cpp ran it.
ENGINE_OPTIONS = {"model_options": {"matmul": "f32"}, "kv_cache_mb": 64}

if not MODEL or not REFERENCE:
    pytest.exit("LLAISYS_TEST_MODEL and LLAISYS_TEST_REFERENCE must be set (ctest sets them)", returncode=2)


def load_cases():
    with open(REFERENCE, encoding="utf-8") as f:
        return json.load(f)["cases"]


CASES = load_cases()


@pytest.fixture(scope="module")
def llm():
    with LLM(MODEL, **ENGINE_OPTIONS) as engine:
        yield engine


def greedy(max_tokens):
    return SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_greedy_generate_equals_reference(llm, case):
    want = [step["token"] for step in case["greedy"]]
    params = greedy(len(want))
    if "messages" in case:
        (out,) = llm.chat(case["messages"], params)
    else:
        (out,) = llm.generate(case["text"], params)
    assert out.prompt_token_ids == case["prompt_ids"]
    assert out.finished
    (choice,) = out.outputs
    assert choice.token_ids == want
    assert choice.finish_reason == "length"
    assert choice.text == llm.get_tokenizer().decode(want)
    # The same prompt as token ids generates the same tokens.
    (by_ids,) = llm.generate({"prompt_token_ids": case["prompt_ids"]}, params)
    assert by_ids.prompt_token_ids == case["prompt_ids"]
    assert by_ids.outputs[0].token_ids == want


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_tokenizer_matches_reference(llm, case):
    tokenizer = llm.get_tokenizer()
    if "messages" in case:
        rendered = tokenizer.apply_chat_template(case["messages"])
        assert rendered == case["rendered"]
        assert tokenizer.encode(rendered, add_special_tokens=False) == case["prompt_ids"]
        assert tokenizer.apply_chat_template(case["messages"], tokenize=True) == case["prompt_ids"]
    else:
        assert tokenizer.encode(case["text"]) == case["prompt_ids"]


def batch_prompts():
    """32 different prompts: every reference prompt cut at several lengths."""
    prompts = []
    for cut in range(1, 40):
        for case in CASES:
            ids = case["prompt_ids"][: max(1, len(case["prompt_ids"]) - 3 * cut)]
            if {"prompt_token_ids": ids} not in prompts:
                prompts.append({"prompt_token_ids": ids})
    assert len(prompts) >= 32
    return prompts[:32]


def test_32_prompts_in_one_generate_equal_32_single_calls(llm):
    prompts = batch_prompts()
    params = greedy(12)
    steps_before = llm.get_stats()["num_steps"]
    batch = llm.generate(prompts, params)
    batch_steps = llm.get_stats()["num_steps"] - steps_before
    singles = [llm.generate(p, params)[0] for p in prompts]
    assert len(batch) == 32
    assert len({out.request_id for out in batch}) == 32
    for prompt, b, s in zip(prompts, batch, singles):
        assert b.prompt_token_ids == prompt["prompt_token_ids"]  # outputs come in prompt order
        assert b.outputs[0].token_ids == s.outputs[0].token_ids
        assert len(b.outputs[0].token_ids) == 12
    # They ran together: far fewer steps than 32 requests of 12 tokens one after another.
    assert batch_steps < 32 * 12 / 4


def test_seeded_sampling_is_reproducible(llm):
    prompt = CASES[0]["messages"]
    params = SamplingParams(temperature=1.0, top_p=0.95, seed=1234, max_tokens=16, ignore_eos=True)
    first = llm.chat(prompt, params)[0].outputs[0].token_ids
    second = llm.chat(prompt, params)[0].outputs[0].token_ids
    other = llm.chat(prompt, SamplingParams(temperature=1.0, top_p=0.95, seed=4321, max_tokens=16,
                                            ignore_eos=True))[0].outputs[0].token_ids
    assert first == second
    assert first != other  # the seed reaches the sampler
    greedy_ids = [step["token"] for step in CASES[0]["greedy"][:16]]
    assert first != greedy_ids  # and this is sampling, not greedy


def test_n_and_logprobs(llm):
    params = SamplingParams(n=3, temperature=1.0, seed=7, max_tokens=5, ignore_eos=True, logprobs=2)
    (out,) = llm.generate("Once upon a time", params)
    assert [c.index for c in out.outputs] == [0, 1, 2]
    for choice in out.outputs:
        assert len(choice.token_ids) == 5
        assert len(choice.logprobs) == 5
        # Each position holds the sampled token; the cumulative logprob is their sum.
        sampled = [lp[t] for lp, t in zip(choice.logprobs, choice.token_ids)]
        assert choice.cumulative_logprob == pytest.approx(sum(sampled), abs=1e-4)
        assert all(len(lp) in (2, 3) for lp in choice.logprobs)
    (plain,) = llm.generate("Once upon a time", SamplingParams(max_tokens=2))
    assert plain.outputs[0].cumulative_logprob is None and plain.outputs[0].logprobs is None


def test_stop_string_ends_the_choice(llm):
    case = CASES[0]
    want = [step["token"] for step in case["greedy"]]
    tokenizer = llm.get_tokenizer()
    full = tokenizer.decode(want)
    stop = tokenizer.decode(want[4:6])
    assert stop and stop in full
    (out,) = llm.chat(case["messages"], SamplingParams(temperature=0, max_tokens=len(want), ignore_eos=True,
                                                       stop=stop))
    choice = out.outputs[0]
    assert choice.finish_reason == "stop"
    assert choice.stop_reason == stop
    assert choice.text == full[: full.index(stop)]


def test_the_gil_is_released_while_the_engine_runs(llm):
    """A Python thread keeps running during generate: were the GIL held, its longest pause would
    be the whole generate call."""
    stop = threading.Event()
    longest_pause = [0.0]

    def spin():
        last = time.perf_counter()
        while not stop.is_set():
            now = time.perf_counter()
            longest_pause[0] = max(longest_pause[0], now - last)
            last = now

    thread = threading.Thread(target=spin)
    thread.start()
    start = time.perf_counter()
    llm.generate("Once upon a time", greedy(400))
    elapsed = time.perf_counter() - start
    stop.set()
    thread.join()
    assert elapsed > 0.05, "too fast to tell"
    assert longest_pause[0] < elapsed / 2


def test_ctrl_c_aborts_the_batch(llm):
    """SIGINT during generate raises KeyboardInterrupt promptly, and the batch leaves the engine."""
    # Set explicitly: a process started in the background inherits SIGINT ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        start = time.perf_counter()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            # About a minute of work: 16 sequences to the end of the context.
            llm.generate(["a"] * 16, SamplingParams(max_tokens=None, ignore_eos=True))
        assert time.perf_counter() - start < 5
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert llm.get_stats()["num_in_flight"] == 0


def test_negative_max_tokens_raises_value_error_with_the_engines_message(llm):
    with pytest.raises(ValueError, match="max_tokens must be >= 0, got -1"):
        llm.generate("hello", SamplingParams(max_tokens=-1))


def test_bad_prompt_in_a_batch_leaves_nothing_in_flight(llm):
    with pytest.raises(ValueError, match="vocab|token"):
        llm.generate(["hello", "world", {"prompt_token_ids": [10**9]}], greedy(4))
    assert llm.get_stats()["num_in_flight"] == 0
    assert llm.generate("hello", greedy(2))[0].outputs[0].finish_reason == "length"


def test_unknown_engine_option_raises_value_error():
    with pytest.raises(ValueError, match="unknown engine option 'bogus_option'"):
        LLM(MODEL, bogus_option=1)
    with pytest.raises(ValueError, match="max_num_seqs"):
        LLM(MODEL, max_num_seqs=0)


def test_speculative_config_keeps_the_outputs(llm):
    # vLLM's speculative_config: n-gram prompt lookup, and a draft model (the same model drafting for
    # itself): greedy and seeded sampled outputs equal the engine's without speculation.
    prompts = ["one two three four one two three four one two", "hello hello hello hello hello"]
    plain_greedy = [o.outputs[0].token_ids for o in llm.generate(prompts, greedy(24))]
    sampled = SamplingParams(temperature=0.8, seed=11, max_tokens=24, ignore_eos=True)
    plain_sampled = [o.outputs[0].token_ids for o in llm.generate(prompts, sampled)]
    for config in ({"method": "ngram", "num_speculative_tokens": 3}, {"model": MODEL, "num_speculative_tokens": 2}):
        with LLM(MODEL, speculative_config=config, **ENGINE_OPTIONS) as spec:
            assert [o.outputs[0].token_ids for o in spec.generate(prompts, greedy(24))] == plain_greedy, config
            if "method" in config:  # guessed drafts: the same tokens for a seed
                assert [o.outputs[0].token_ids for o in spec.generate(prompts, sampled)] == plain_sampled


def test_bad_speculative_config_raises_value_error_naming_it():
    with pytest.raises(ValueError, match="prompt_lookup_max"):
        LLM(MODEL, speculative_config={"method": "ngram", "prompt_lookup_max": 4})
    with pytest.raises(ValueError, match="eagle"):
        LLM(MODEL, speculative_config={"method": "eagle"})
    with pytest.raises(ValueError, match="needs 'model'"):
        LLM(MODEL, speculative_config={"method": "draft"})
    with pytest.raises(ValueError, match="num_speculative_tokens"):
        LLM(MODEL, speculative_config={"method": "ngram", "num_speculative_tokens": 0})


def test_missing_model_raises_file_not_found_error():
    with pytest.raises(FileNotFoundError, match="/nonexistent/llaisys-python-test/model"):
        LLM("/nonexistent/llaisys-python-test/model")


def test_close_is_idempotent_and_final():
    with LLM(MODEL, kv_cache_mb=16) as llm:
        assert not llm.closed
        assert llm.get_info()["architecture"] == "Qwen2ForCausalLM"
    assert llm.closed
    llm.close()
    with pytest.raises(RuntimeError, match="closed"):
        llm.generate("hello")
    with pytest.raises(RuntimeError, match="closed"):
        llm.get_tokenizer().encode("hello")


def test_version():
    major, minor = llaisys.version()
    assert (major, minor) >= (1, 0)

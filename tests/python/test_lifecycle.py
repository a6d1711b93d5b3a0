"""500 create/generate/close cycles of LLM in one process leave the resident set where it was
(growth < 5%, issue 24), with no thread or file descriptor left behind. On stories260K (1 MB of
weights, ~4 ms a cycle) so that what a cycle leaks is not hidden under the model's own size.

Environment: LLAISYS_TEST_STORIES260K as in test_stories260k.py (default: the repository's).
"""
import os
from pathlib import Path

import pytest

from llaisys import LLM, SamplingParams

ROOT = Path(__file__).resolve().parents[2]
MODEL = os.environ.get("LLAISYS_TEST_STORIES260K", str(ROOT / "models/stories260K"))
CYCLES = 500
WARM_UP = 5


def status_field(name):
    """A /proc/self/status field's number (VmRSS in kB, Threads)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise KeyError(name)


def num_open_fds():
    return len(os.listdir("/proc/self/fd"))


def cycle(params):
    with LLM(MODEL, kv_cache_mb=16) as llm:
        outs = llm.generate(["Once upon a time", {"prompt_token_ids": [1, 403, 407]}], params)
        assert [len(o.outputs[0].token_ids) for o in outs] == [16, 16]
        llm.get_tokenizer().encode("a little dog")


# ASan holds freed memory in its quarantine (256 MB by default): RSS then says nothing about leaks.
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""), reason="RSS is not meaningful under ASan")
def test_500_create_generate_close_cycles_keep_rss_within_5_percent(capsys):
    params = SamplingParams(temperature=0.0, max_tokens=16, ignore_eos=True)
    for _ in range(WARM_UP):
        cycle(params)
    rss_before, threads_before, fds_before = status_field("VmRSS"), status_field("Threads"), num_open_fds()
    for _ in range(CYCLES):
        cycle(params)
    rss_after, threads_after, fds_after = status_field("VmRSS"), status_field("Threads"), num_open_fds()
    growth = rss_after / rss_before - 1
    with capsys.disabled():
        print(f"\nVmRSS after {WARM_UP} warm-up cycles: {rss_before} kB; after {CYCLES} more: {rss_after} kB "
              f"({growth:+.2%}); threads {threads_before} -> {threads_after}; open fds {fds_before} -> {fds_after}")
    assert growth < 0.05, f"VmRSS {rss_before} -> {rss_after} kB over {CYCLES} cycles"
    assert threads_after == threads_before
    assert fds_after == fds_before

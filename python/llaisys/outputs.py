"""vLLM's output classes, filled from the dicts the native module returns."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    # The sum of the sampled tokens' logprobs; None unless SamplingParams.logprobs was set.
    cumulative_logprob: Optional[float]
    # Per token {token_id: logprob}: the sampled token and the top k; None unless asked for.
    logprobs: Optional[list[dict[int, float]]]
    # "stop", "length", "abort", "error" or "ignored"; None while running.
    finish_reason: Optional[str] = None
    # The stop string or token that ended the choice (or the error); None when none.
    stop_reason: Optional[str] = None

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    request_id: str
    prompt: Optional[str]
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool
    num_cached_tokens: int


def request_output_from_native(native: dict, prompt: Optional[str]) -> RequestOutput:
    outputs = []
    for c in native["outputs"]:
        reason = c["finish_reason"]
        outputs.append(CompletionOutput(
            index=c["index"],
            text=c["text"],
            token_ids=c["token_ids"],
            cumulative_logprob=c["cumulative_logprob"],
            logprobs=c["logprobs"],
            finish_reason=None if reason == "running" else reason,
            stop_reason=c["finish_detail"] or None,
        ))
    return RequestOutput(
        request_id=str(native["request_id"]),
        prompt=prompt,
        prompt_token_ids=native["prompt_token_ids"],
        outputs=outputs,
        finished=native["finished"],
        num_cached_tokens=native["num_cached_tokens"],
    )

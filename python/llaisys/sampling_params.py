"""SamplingParams with vLLM's field names and defaults.

Only types are normalised here; ranges are checked by the engine, whose message a bad value raises
(as ValueError), so Python and C callers see the same rules.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, Union


class RequestOutputKind(enum.Enum):
    """What AsyncLLM yields per output (vLLM's names); LLM.generate always returns final outputs."""
    CUMULATIVE = 0  # everything so far
    DELTA = 1       # only what is new
    FINAL_ONLY = 2  # only the finished output


@dataclass
class SamplingParams:
    n: int = 1
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    temperature: float = 1.0
    top_p: float = 1.0
    # vLLM's "off" is 0 or -1; the engine's is 0.
    top_k: int = 0
    min_p: float = 0.0
    seed: Optional[int] = None
    stop: Optional[Union[str, list[str]]] = None
    stop_token_ids: Optional[list[int]] = None
    ignore_eos: bool = False
    # None: until EOS or the end of the context.
    max_tokens: Optional[int] = 16
    min_tokens: int = 0
    # None: no logprobs; k: each token's logprob and the top k alternatives.
    logprobs: Optional[int] = None
    skip_special_tokens: bool = True
    output_kind: RequestOutputKind = RequestOutputKind.CUMULATIVE

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        self.stop = list(self.stop or [])
        self.stop_token_ids = list(self.stop_token_ids or [])
        if self.top_k == -1:
            self.top_k = 0

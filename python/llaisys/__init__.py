"""llaisys: vLLM's offline Python interface over the llaisys C++ engine (docs/PYTHON.md).

    from llaisys import LLM, SamplingParams
    with LLM("path/to/model", max_num_seqs=32) as llm:
        for out in llm.generate(["Hello"], SamplingParams(temperature=0, max_tokens=32)):
            print(out.outputs[0].text)
"""
from ._llaisys import set_log_level, version
from .async_llm import AsyncLLM
from .llm import LLM
from .outputs import CompletionOutput, RequestOutput
from .sampling_params import RequestOutputKind, SamplingParams
from .tokenizer import Tokenizer

__all__ = ["LLM", "AsyncLLM", "SamplingParams", "RequestOutputKind", "RequestOutput", "CompletionOutput", "Tokenizer", "set_log_level", "version"]

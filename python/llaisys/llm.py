"""LLM: vLLM's offline interface (generate, chat) over the llaisys engine."""
from __future__ import annotations

import atexit
import json
import weakref
from typing import Any, Optional, Sequence, Union

from . import _llaisys
from .outputs import RequestOutput, request_output_from_native
from .sampling_params import SamplingParams
from .tokenizer import Tokenizer

# A prompt: text (encoded with BOS), or vLLM's {"prompt_token_ids": [...]} / {"prompt": "..."}.
PromptType = Union[str, dict]

# Engines left open are closed by atexit, while the interpreter is still whole, instead of by the
# native destructor during interpreter teardown.
_open_llms: "weakref.WeakSet[LLM]" = weakref.WeakSet()


@atexit.register
def _close_open_llms() -> None:
    for llm in list(_open_llms):
        llm.close()


class LLM:
    """An engine over a model directory or GGUF file.

    engine_options are the C API's open options (docs/C_API.md): max_num_seqs, max_batched_tokens,
    kv_cache_mb, block_size, max_context, no_prefix_cache, seed, threads, device, model_options,
    chat_template_file, plugin_dir, max_in_flight, speculative_config (vLLM's: {"method": "ngram"}
    or {"model": DRAFT_DIR}, with "num_speculative_tokens"). An unknown one raises ValueError
    naming it; a missing model FileNotFoundError.

    Close it with close() or a `with` block. One never closed is closed at exit (atexit), or when
    it is garbage collected, whichever comes first.
    """

    def __init__(self, model: str, **engine_options: Any) -> None:
        options = json.dumps(engine_options) if engine_options else None
        self._engine = _llaisys.Engine(str(model), options)
        self._tokenizer = Tokenizer(self._engine)
        _open_llms.add(self)

    # ---- lifetime ----
    def close(self) -> None:
        """Aborts what is unfinished and frees the engine. Idempotent."""
        self._engine.close()
        _open_llms.discard(self)

    @property
    def closed(self) -> bool:
        return self._engine.closed

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # ---- generation ----
    def generate(self, prompts: Union[PromptType, Sequence[PromptType]],
                 sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
                 use_tqdm: bool = False) -> list[RequestOutput]:
        """Generates for every prompt at once (the engine batches them); outputs in prompt order.

        use_tqdm is accepted for vLLM compatibility and ignored.
        """
        if isinstance(prompts, (str, dict)):
            prompts = [prompts]
        requests = []
        for prompt in prompts:
            if isinstance(prompt, str):
                requests.append(({"text": prompt}, prompt))
            elif isinstance(prompt, dict) and "prompt_token_ids" in prompt:
                requests.append(({"token_ids": list(prompt["prompt_token_ids"])}, prompt.get("prompt")))
            elif isinstance(prompt, dict) and "prompt" in prompt:
                requests.append(({"text": prompt["prompt"]}, prompt["prompt"]))
            else:
                raise TypeError(f"a prompt is a str or a dict with 'prompt' or 'prompt_token_ids', got {prompt!r}")
        return self._run(requests, sampling_params)

    def chat(self, messages: Union[list[dict], list[list[dict]]],
             sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
             use_tqdm: bool = False,
             chat_template_kwargs: Optional[dict[str, Any]] = None) -> list[RequestOutput]:
        """Generates a reply to one conversation (a list of {"role", "content"} messages) or to each
        of a list of them, rendered with the model's chat template and its generation prompt."""
        conversations = [messages] if messages and isinstance(messages[0], dict) else list(messages)
        kwargs_json = json.dumps(chat_template_kwargs) if chat_template_kwargs else None
        requests = [({"messages_json": json.dumps(conversation), "chat_template_kwargs_json": kwargs_json}, None)
                    for conversation in conversations]
        return self._run(requests, sampling_params)

    def _run(self, requests: list[tuple[dict, Optional[str]]], sampling_params) -> list[RequestOutput]:
        if sampling_params is None:
            sampling_params = SamplingParams()
        if isinstance(sampling_params, SamplingParams):
            params = [sampling_params] * len(requests)
        else:
            params = list(sampling_params)
            if len(params) != len(requests):
                raise ValueError(f"{len(params)} sampling params for {len(requests)} prompts")
        ids: list[int] = []
        try:
            for (prompt, _), sp in zip(requests, params):
                ids.append(self._engine.submit(sampling_params=sp, **prompt))
        except BaseException:
            # A refused prompt: the ones already queued leave the engine before the error propagates.
            self._engine.discard(ids)
            raise
        natives = self._engine.collect(ids)
        return [request_output_from_native(native, text) for native, (_, text) in zip(natives, requests)]

    # ---- the model ----
    def get_tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def get_info(self) -> dict:
        """Architecture, vocabulary, context, EOS ids and which chat template is used."""
        return self._engine.info()

    def get_stats(self) -> dict:
        """The engine's counters after its latest step (requests, KV blocks, prefix cache, steps)."""
        return self._engine.stats()

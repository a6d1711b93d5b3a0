"""AsyncLLM: streaming generation for asyncio, over the same native engine as LLM.

Outputs reach Python without a thread per request: the engine's thread queues them natively and
signals a pipe that the running event loop watches (loop.add_reader), so one loop wake-up delivers
every output that arrived since the last one.
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
from typing import Any, AsyncIterator, Optional, Union

from . import _llaisys
from .llm import PromptType, _open_llms
from .outputs import RequestOutput, request_output_from_native
from .sampling_params import RequestOutputKind, SamplingParams
from .tokenizer import Tokenizer

_END = object()  # queued after a request's final output when the engine closes under it


class AsyncLLM:
    """An engine for asyncio programs. generate() is an async iterator of one request's outputs.

    Every output is the request's state so far (vLLM's default, RequestOutputKind.CUMULATIVE);
    with SamplingParams(output_kind=RequestOutputKind.DELTA) each holds only what is new, and with
    FINAL_ONLY only the finished output comes. Breaking
    out of the iteration (or cancelling its task) aborts the request, which frees its KV cache.
    Use it from one event loop; close() (or `async with`) shuts it down.
    """

    def __init__(self, model: str, **engine_options: Any) -> None:
        options = json.dumps(engine_options) if engine_options else None
        self._engine = _llaisys.Engine(str(model), options)
        self._tokenizer = Tokenizer(self._engine)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._streams: dict[int, asyncio.Queue] = {}  # engine request id -> its outputs
        self._ids: dict[str, int] = {}                # caller's request id -> engine request id
        self._counter = itertools.count()
        _open_llms.add(self)

    @classmethod
    def from_model(cls, model: str, **engine_options: Any) -> "AsyncLLM":
        return cls(model, **engine_options)

    # ---- lifetime ----
    def close(self) -> None:
        """Aborts unfinished requests (their iterators end with finish reason "abort"). Idempotent."""
        if self._engine.closed:
            return
        self._engine.close()  # delivers every unfinished request's final output into the queue
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._engine.stream_fd)
            self._dispatch()
        for queue in self._streams.values():
            queue.put_nowait(_END)
        _open_llms.discard(self)

    shutdown = close

    @property
    def closed(self) -> bool:
        return self._engine.closed

    async def __aenter__(self) -> "AsyncLLM":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self.close()

    # ---- generation ----
    async def generate(self, prompt: PromptType, sampling_params: Optional[SamplingParams] = None,
                       request_id: Optional[str] = None) -> AsyncIterator[RequestOutput]:
        """Streams one request's outputs; the last has finished=True."""
        if isinstance(prompt, str):
            native_prompt, text = {"text": prompt}, prompt
        elif isinstance(prompt, dict) and "prompt_token_ids" in prompt:
            native_prompt, text = {"token_ids": list(prompt["prompt_token_ids"])}, prompt.get("prompt")
        elif isinstance(prompt, dict) and "messages" in prompt:
            native_prompt, text = {"messages_json": json.dumps(prompt["messages"])}, None
        elif isinstance(prompt, dict) and "prompt" in prompt:
            native_prompt, text = {"text": prompt["prompt"]}, prompt["prompt"]
        else:
            raise TypeError(f"a prompt is a str or a dict with 'prompt', 'prompt_token_ids' or 'messages', got {prompt!r}")
        async for out in self._stream(native_prompt, text, sampling_params or SamplingParams(), request_id):
            yield out

    async def chat(self, messages: list[dict], sampling_params: Optional[SamplingParams] = None,
                   request_id: Optional[str] = None) -> AsyncIterator[RequestOutput]:
        """Streams the reply to one conversation, rendered with the model's chat template."""
        async for out in self.generate({"messages": messages}, sampling_params, request_id):
            yield out

    async def abort(self, request_id: str) -> None:
        """Stops a request; its iterator ends with finish reason "abort". Unknown ids are ignored."""
        engine_id = self._ids.get(request_id)
        if engine_id is not None and not self._engine.closed:
            self._engine.abort(engine_id)

    async def _stream(self, native_prompt: dict, text: Optional[str], params: SamplingParams,
                      request_id: Optional[str]) -> AsyncIterator[RequestOutput]:
        self._attach_loop()
        if request_id is None:
            request_id = f"async-{next(self._counter)}"
        if request_id in self._ids:
            raise ValueError(f"request id '{request_id}' is already running")
        engine_id = self._engine.submit(sampling_params=params, stream=True, **native_prompt)
        # Registered before the loop can run _dispatch again, so no output is missed.
        queue: asyncio.Queue = asyncio.Queue()
        self._streams[engine_id] = queue
        self._ids[request_id] = engine_id
        kind = params.output_kind
        state: Optional[RequestOutput] = None
        finished = False
        try:
            while not finished:
                native = await queue.get()
                if native is _END:
                    return
                out = request_output_from_native(native, text)
                out.request_id = request_id
                finished = out.finished
                if kind == RequestOutputKind.DELTA:
                    yield out
                    continue
                state = out if state is None else _accumulate(state, out)
                if finished or kind == RequestOutputKind.CUMULATIVE:
                    yield state
        finally:
            del self._streams[engine_id]
            del self._ids[request_id]
            if not finished and not self._engine.closed:
                self._engine.abort(engine_id)  # the consumer left early: free the request

    def _attach_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None and not self._loop.is_closed():
            raise RuntimeError("an AsyncLLM is used from one event loop")
        if self._engine.closed:
            raise RuntimeError("the engine is closed")
        self._loop = loop
        loop.add_reader(self._engine.stream_fd, self._dispatch)

    def _dispatch(self) -> None:
        for native in self._engine.take_streamed():
            queue = self._streams.get(native["request_id"])
            if queue is not None:  # None: an abandoned request's last outputs
                queue.put_nowait(native)

    # ---- the model ----
    def get_tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def get_stats(self) -> dict:
        return self._engine.stats()


def _accumulate(state: RequestOutput, new: RequestOutput) -> RequestOutput:
    """A new RequestOutput: state with new's delta appended, choice by choice (outputs already
    yielded are never changed under the caller)."""
    by_index = {c.index: c for c in state.outputs}
    for c in new.outputs:
        old = by_index.get(c.index)
        if old is None:
            by_index[c.index] = c
            continue
        by_index[c.index] = dataclasses.replace(
            c,
            text=old.text + c.text,
            token_ids=old.token_ids + c.token_ids,
            logprobs=None if c.logprobs is None else (old.logprobs or []) + c.logprobs,
            cumulative_logprob=None if c.cumulative_logprob is None
            else (old.cumulative_logprob or 0.0) + c.cumulative_logprob)
    return dataclasses.replace(state, outputs=[by_index[i] for i in sorted(by_index)], finished=new.finished,
                               num_cached_tokens=new.num_cached_tokens)

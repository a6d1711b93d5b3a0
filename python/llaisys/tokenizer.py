"""The model's tokenizer and chat template, as the engine uses them (llm.get_tokenizer())."""
from __future__ import annotations

import json
from typing import Any, Optional, Union


class Tokenizer:
    def __init__(self, engine) -> None:
        # The LLM's native engine: the tokenizer lives as long as the LLM is open.
        self._engine = engine

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self._engine.encode(text, add_special_tokens)

    def decode(self, token_ids: list[int], skip_special_tokens: bool = True) -> str:
        return self._engine.decode(list(token_ids), skip_special_tokens)

    def apply_chat_template(self, messages: list[dict[str, Any]], tokenize: bool = False,
                            add_generation_prompt: bool = True, tools: Optional[list[dict]] = None,
                            **chat_template_kwargs: Any) -> Union[str, list[int]]:
        """Renders messages as a prompt (Hugging Face's signature); tokenize=True returns its ids.

        The rendered text already holds the template's special tokens, so it is encoded without
        adding BOS again.
        """
        options: dict[str, Any] = {"add_generation_prompt": add_generation_prompt}
        if tools is not None:
            options["tools"] = tools
        if chat_template_kwargs:
            options["chat_template_kwargs"] = chat_template_kwargs
        text = self._engine.apply_chat_template(json.dumps(messages), json.dumps(options))
        return self.encode(text, add_special_tokens=False) if tokenize else text

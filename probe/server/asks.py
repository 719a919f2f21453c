"""A completion request's body, checked: each fault is an ApiError naming the field, with the
body OpenAI's API answers (`{"error": {"message", "type", "param", "code"}}`). Torch-free:
counting the prompt's tokens is the caller's (the engine's tokenizer)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from probe.server.seam import Limits

MAX_BODY_BYTES = 1 << 20        # 1 MiB: a prompt at the model's limit is a few KiB
DEFAULT_MAX_TOKENS = 16         # OpenAI's default for /v1/completions


class ApiError(Exception):
    """A request the API refuses: its HTTP status and OpenAI's error fields."""

    def __init__(self, status: int, message: str, param: str | None = None,
                 code: str | None = None, type: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = (
            status, message, param, code, type)

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}


@dataclass(frozen=True)
class CompletionBody:
    model: str
    prompt: str
    prompt_tokens: int
    max_tokens: int
    stream: bool
    include_usage: bool


def parse_json(raw: bytes) -> dict:
    if len(raw) > MAX_BODY_BYTES:
        raise body_too_large(len(raw))
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the body is not valid JSON ({exc})", None, "invalid_json") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object", None, "invalid_type")
    return body


def body_too_large(size: int) -> ApiError:
    return ApiError(400, f"the body is {size} bytes, over the limit of {MAX_BODY_BYTES}",
                    None, "body_too_large")


def completion_body(body: dict, limits: Limits, count: Callable[[str], int], *,
                    chat: bool = False) -> CompletionBody:
    model = _typed(body, "model", str, required=True)
    if model != limits.model:
        raise ApiError(400, f"model {model!r} is not served here; this server serves "
                            f"{limits.model!r}", "model", "model_not_found")
    prompt = _messages(body) if chat else _prompt(body)
    tokens_key = "max_tokens"
    if chat and body.get("max_completion_tokens") is not None:
        tokens_key = "max_completion_tokens"
    max_tokens = _typed(body, tokens_key, int)
    if max_tokens is None:
        max_tokens = min(DEFAULT_MAX_TOKENS, limits.max_tokens)
    if not 1 <= max_tokens <= limits.max_tokens:
        raise ApiError(400, f"{tokens_key} must be between 1 and {limits.max_tokens}, got "
                            f"{max_tokens}", tokens_key, "invalid_value")
    n = _typed(body, "n", int)
    if n not in (None, 1):
        raise ApiError(400, "n must be 1: this server makes one completion a request", "n",
                       "invalid_value")
    stream = _typed(body, "stream", bool) or False
    options = _typed(body, "stream_options", dict)
    include_usage = False
    if options is not None:
        include_usage = _typed(options, "include_usage", bool, where="stream_options.") or False
    prompt_tokens = count(prompt)
    if prompt_tokens > limits.max_prompt_tokens:
        field = "messages" if chat else "prompt"
        raise ApiError(400, f"{field} is {prompt_tokens} tokens, over this model's limit of "
                            f"{limits.max_prompt_tokens}", field, "context_length_exceeded")
    return CompletionBody(model, prompt, prompt_tokens, max_tokens, stream, include_usage)


def _typed(body: dict, key: str, kind: type, *, required: bool = False,
           where: str = "") -> Any:
    value = body.get(key)
    if value is None:
        if required:
            raise ApiError(400, f"{where}{key} is required", where + key, "missing_required")
        return None
    # a bool is an int to Python, not to JSON
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ApiError(400, f"{where}{key} must be {_NAMES[kind]}, got "
                            f"{type(value).__name__} {json.dumps(value)[:40]}", where + key,
                       "invalid_type")
    return value


_NAMES = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object",
          list: "an array"}


def _prompt(body: dict) -> str:
    """A string, or a list of exactly one string (what clients that batch send for one)."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        return prompt[0]
    if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt) and prompt:
        raise ApiError(400, "prompt must be one string: this server makes one completion a "
                            "request", "prompt", "invalid_value")
    return _typed(body, "prompt", str, required=True)


def _messages(body: dict) -> str:
    """A chat's messages joined into one encoder input, one `role: content` line each."""
    messages = _typed(body, "messages", list, required=True)
    lines = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ApiError(400, f"messages[{i}] must be an object", f"messages[{i}]",
                           "invalid_type")
        role = _typed(message, "role", str, required=True, where=f"messages[{i}].")
        content = _typed(message, "content", str, required=True, where=f"messages[{i}].")
        lines.append(f"{role}: {content}")
    if not lines:
        raise ApiError(400, "messages must not be empty", "messages", "invalid_value")
    return "\n".join(lines)

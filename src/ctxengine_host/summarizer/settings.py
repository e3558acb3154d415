"""Validation of the ``[summarizer]`` config section, one pydantic model per backend.

The host's config loader only checks ``backend``; the keys each backend takes
are checked here so that a typo names the key, the backend and the fix.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..config import ConfigError, describe_validation_error


class _BackendSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExtractiveSettings(_BackendSettings):
    """The offline, deterministic backend; it has no keys of its own."""

    backend: Literal["extractive"] = "extractive"


class OpenAISettings(_BackendSettings):
    """Any OpenAI-compatible ``/chat/completions`` endpoint."""

    backend: Literal["openai"] = "openai"
    base_url: str = Field("https://api.openai.com/v1", pattern=r"^https?://")
    model: str = Field(min_length=1)
    api_key_env: str = Field("OPENAI_API_KEY", min_length=1)
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0, le=20)
    backoff_initial_seconds: float = Field(1.0, ge=0)
    backoff_max_seconds: float = Field(30.0, ge=0)
    max_retry_after_seconds: float = Field(60.0, ge=0)
    max_input_tokens: int = Field(60_000, gt=0)
    temperature: float = Field(0.2, ge=0, le=2)
    extra_headers: dict[str, str] = Field(default_factory=dict)


class LiteLLMSettings(_BackendSettings):
    """Any provider LiteLLM reaches, through ``litellm.completion`` (ctxengine-host[litellm])."""

    backend: Literal["litellm"] = "litellm"
    model: str = Field(min_length=1)  # LiteLLM's name: "anthropic/claude-…", "ollama/llama3"…
    api_base: str | None = Field(None, pattern=r"^https?://")
    api_key_env: str | None = Field(None, min_length=1)  # None: LiteLLM's own env lookup
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0, le=20)
    max_input_tokens: int = Field(60_000, gt=0)
    temperature: float = Field(0.2, ge=0, le=2)


BackendSettings = ExtractiveSettings | OpenAISettings | LiteLLMSettings

_MODELS: dict[str, type[_BackendSettings]] = {
    "extractive": ExtractiveSettings,
    "openai": OpenAISettings,
    "litellm": LiteLLMSettings,
}


def parse_backend_settings(section: Any) -> BackendSettings:
    """Validate a ``[summarizer]`` section (a ``SummarizerSection``, a dict or None)."""
    if section is None:
        raw: dict[str, Any] = {}
    elif isinstance(section, BaseModel):
        raw = section.model_dump()
    else:
        raw = dict(section)
    backend = raw.get("backend") or "extractive"
    model = _MODELS.get(backend)
    if model is None:
        choices = ", ".join(sorted(_MODELS))
        raise ConfigError(f"[summarizer] backend {backend!r} is unknown; use one of {choices}")
    try:
        return cast(BackendSettings, model.model_validate({**raw, "backend": backend}))
    except ValidationError as exc:
        raise ConfigError(
            f"[summarizer] (backend {backend!r}): {describe_validation_error(exc)}"
        ) from exc

"""[summarizer] backend = "litellm": its keys are checked, and a missing LiteLLM is named."""

from __future__ import annotations

import importlib.util

import pytest

from ctxengine_host.config import ConfigError
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.summarizer.settings import LiteLLMSettings, parse_backend_settings


def test_litellm_settings_are_validated():
    settings = parse_backend_settings({"backend": "litellm", "model": "ollama/llama3"})
    assert isinstance(settings, LiteLLMSettings) and settings.max_retries == 4
    with pytest.raises(ConfigError, match=r"backend 'litellm'.*model"):
        parse_backend_settings({"backend": "litellm"})
    with pytest.raises(ConfigError, match="modle"):
        parse_backend_settings({"backend": "litellm", "model": "x", "modle": "y"})


@pytest.mark.skipif(importlib.util.find_spec("litellm") is not None, reason="LiteLLM installed")
def test_without_litellm_the_error_says_what_to_install():
    with pytest.raises(ConfigError, match=r"ctxengine-host\[litellm\]"):
        SummarizerService({"backend": "litellm", "model": "openai/gpt-4o-mini"})

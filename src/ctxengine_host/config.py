"""The ctxengine config file: locating it, parsing it, validating it.

One TOML file, the first found of ``--config`` / ``CTXENGINE_CONFIG``,
``./ctxengine.toml`` and the user config file; files are never merged. Each
section is a pydantic model, so a bad value is reported with its file, key and
the expected type. ``[engines.<name>]`` blocks stay raw here: each engine
validates its own block with its ``config_model``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .configfile import CONFIG_ENV, LOCAL_CONFIG_NAME, find_config_file
from .limits import InputLimitError, loads_toml

__all__ = ["CONFIG_ENV", "LOCAL_CONFIG_NAME", "ConfigError", "find_config_file", "load_config"]


class ConfigError(Exception):
    """A config file is missing, unreadable or invalid; the message names the fix."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContextSection(_Section):
    engine: str | None = None
    reserve_output_tokens: int = Field(4096, ge=0)
    model: str | None = None
    context_length: int | None = Field(None, gt=0)
    # tiktoken encoding name; wins over the one implied by the model name.
    encoding: Literal["cl100k_base", "o200k_base"] | None = None


class CompressionSection(_Section):
    model_thresholds: dict[str, float] = Field(default_factory=dict)
    context_timeout_seconds: float = Field(120.0, ge=0)
    hook_timeout_seconds: float = Field(10.0, gt=0)


class SummarizerSection(BaseModel):
    """Backend choice; backend-specific keys are validated by the summarizer service."""

    model_config = ConfigDict(extra="allow")
    backend: Literal["extractive", "openai", "litellm"] = "extractive"


class StoreSection(_Section):
    path: str | None = None
    url: str | None = None


class PluginsSection(_Section):
    directory: str | None = None


IsolationMode = Literal["thread", "process"]


class EngineIsolation(_Section):
    mode: IsolationMode = "thread"


class IsolationSection(_Section):
    """Where engine calls run: ``thread`` (default) or ``process`` (a killable worker).

    A host-level table, not a key of ``[engines.<name>]``: those blocks belong to
    the engine and are validated (or rejected) by its own ``config_model``.
    """

    mode: IsolationMode = "thread"
    engines: dict[str, EngineIsolation] = Field(default_factory=dict)

    def mode_for(self, engine: str) -> IsolationMode:
        """``[isolation.engines.<engine>] mode``, else the table's ``mode``."""
        entry = self.engines.get(engine)
        return entry.mode if entry is not None else self.mode


class CtxConfig(_Section):
    context: ContextSection = Field(default_factory=ContextSection)
    compression: CompressionSection = Field(default_factory=CompressionSection)
    summarizer: SummarizerSection = Field(default_factory=SummarizerSection)
    store: StoreSection = Field(default_factory=StoreSection)
    plugins: PluginsSection = Field(default_factory=PluginsSection)
    isolation: IsolationSection = Field(default_factory=IsolationSection)
    engines: dict[str, dict[str, Any]] = Field(default_factory=dict)


ConfigSource = Literal["flag", "env", "local", "user", "none"]


@dataclass
class LoadedConfig:
    """The effective config and where it came from (``path`` None: defaults only)."""

    config: CtxConfig = field(default_factory=CtxConfig)
    path: Path | None = None
    source: ConfigSource = "none"

    def engine_block(self, name: str) -> dict[str, Any]:
        """The raw ``[engines.<name>]`` block (empty when absent)."""
        return dict(self.config.engines.get(name) or {})

    def engine_enabled(self, name: str) -> bool:
        """``[engines.<name>] enabled`` (true when unset)."""
        return bool(self.engine_block(name).get("enabled", True))


def parse_config(text: str, origin: str = "<string>") -> CtxConfig:
    """Parse and validate config text; errors name ``origin``, the key and the expected type."""
    try:
        raw = loads_toml(text, what=f"config file {origin}")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{origin}: invalid TOML: {exc}. Fix the syntax at that spot.") from exc
    except InputLimitError as exc:
        raise ConfigError(f"{exc}; flatten it") from exc
    try:
        # Strict: a value of the wrong TOML type ("4096", "false") is an error, not coerced.
        config = CtxConfig.model_validate(raw, strict=True)
    except ValidationError as exc:
        raise ConfigError(f"{origin}: {describe_validation_error(exc)}") from exc
    problems = engine_block_problems(config.engines)
    if problems:
        raise ConfigError(f"{origin}: {'; '.join(problems)}")
    return config


def engine_block_problems(engines: dict[str, Any]) -> list[str]:
    """The host's key in each ``[engines.<name>]`` block, ``enabled``, must be a boolean
    (the rest of the block is the engine's to validate)."""
    problems = []
    for name, block in engines.items():
        value = block.get("enabled", True)
        if not isinstance(value, bool):
            problems.append(
                f"key 'engines.{name}.enabled': must be true or false, without quotes "
                f"(got {value!r})"
            )
    return problems


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem: the dotted key, what is wrong, and the value found."""
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            lines.append(f"unknown key '{key}'; remove it or check its spelling")
        else:
            lines.append(f"key '{key}': {err['msg']} (got {err.get('input')!r})")
    return "; ".join(lines)


def load_config(explicit: str | os.PathLike[str] | None = None) -> LoadedConfig:
    """Find, read and validate the config file; defaults when there is none."""
    path, source = find_config_file(explicit)
    if path is None:
        return LoadedConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(
            f"config file {path} (from {source}) does not exist; create it or point "
            f"--config/{CONFIG_ENV} at an existing file"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from exc
    origin = cast(ConfigSource, source)  # find_config_file names one of these
    return LoadedConfig(config=parse_config(text, str(path)), path=path, source=origin)

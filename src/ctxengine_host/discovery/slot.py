"""The engine slot: which engine is selected, and turning that choice into an engine.

Precedence: ``--engine`` (flag), ``CTXENGINE_ENGINE`` (env), ``[context] engine``
(config), then the default ``legacy``. ``""``, ``"none"``, ``"legacy"`` and
``"compressor"`` all mean the default.

Resolution imports only the selected engine. When it is broken or fails the
contract check, the failure is recorded in the quarantine log and the default
engine runs; an engine that is not installed at all (a typo, most often) falls
back the same way but leaves no quarantine record: there is nothing to
quarantine. The command line refuses such a selection (exit 2) with
:func:`unknown_slot_message`, whatever the source of the name. After the
default comes the built-in last resort, if ``legacy`` itself is not usable.
Two distributions claiming the selected name, and host requirements the host
cannot meet, are errors: guessing would be worse.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .engines import (
    LAST_RESORT_NAME,
    EngineEntry,
    EngineLoadError,
    PluginPolicy,
    clear_cache,
    find_entries,
    list_engines,
    load_engine_factory,
)

TYPE_CHECKING = False  # typing is not imported on the `ctxengine engines` path
if TYPE_CHECKING:
    from typing import Any, Literal

    SlotSource = Literal["flag", "env", "config", "default"]

    from ..config import LoadedConfig
    from ..contract.context import EngineContext
    from ..stores.quarantine import QuarantineSink

ENGINE_ENV = "CTXENGINE_ENGINE"
DEFAULT_ENGINE = "legacy"
#: Slot values that mean "the default engine".
DEFAULT_ALIASES: frozenset[str] = frozenset({"", "none", "legacy", "compressor"})


def _warn(message: str, *args: Any) -> None:
    import logging  # not at import time: `ctxengine engines` imports this module

    logging.getLogger("ctxengine.slot").warning(message, *args)


class EngineSelectionError(ValueError):
    """The selected engine cannot be resolved safely; the message names the fix."""


class UnknownEngineError(EngineSelectionError):
    """The slot names an engine that no distribution or plugins directory provides."""


class HostRequirementsError(EngineSelectionError):
    """The selected engine needs host capabilities this host does not offer."""


@dataclass(frozen=True)
class SlotChoice:
    """The selected engine id (canonical), where it came from, and the raw value given."""

    name: str
    source: SlotSource
    configured: str | None


@dataclass
class ResolvedEngine:
    """The constructed engine prototype and how it was obtained.

    ``fallback`` is True when the engine running is not the one selected;
    ``reason`` then says why.
    """

    engine: Any
    name: str
    entry: EngineEntry | None
    fallback: bool
    reason: str | None
    choice: SlotChoice
    warnings: list[str] = field(default_factory=list)


def canonical_engine_name(value: str | None) -> str:
    """The engine id a slot value means (the default for its aliases)."""
    value = (value or "").strip()
    return DEFAULT_ENGINE if value.lower() in DEFAULT_ALIASES else value


def choose_slot_from(cli_engine: str | None, configured: str | None) -> SlotChoice:
    """The slot from a flag value and the config file's ``[context] engine`` value."""
    if cli_engine is not None:
        return SlotChoice(canonical_engine_name(cli_engine), "flag", cli_engine)
    env = os.environ.get(ENGINE_ENV)
    if env is not None:
        return SlotChoice(canonical_engine_name(env), "env", env)
    if configured is not None:
        return SlotChoice(canonical_engine_name(configured), "config", configured)
    return SlotChoice(DEFAULT_ENGINE, "default", None)


def choose_slot(cli_engine: str | None, loaded: LoadedConfig) -> SlotChoice:
    """The slot: flag, then env, then config, then the default."""
    return choose_slot_from(cli_engine, loaded.config.context.engine)


def unknown_engine_message(name: str, entries: Iterable[EngineEntry]) -> str:
    """Unknown engine: what exists, close matches, and how to install it."""
    import difflib

    available = sorted({e.name for e in entries})
    close = difflib.get_close_matches(name, available, n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return (
        f"unknown engine {name!r}.{hint} Available engines: {', '.join(available) or 'none'}. "
        f"If it is published as a package, install it: pip install ctxengine-{name}"
    )


def slot_origin(choice: SlotChoice, config_path: str | Path | None = None) -> tuple[str, str]:
    """Where the slot value came from, and how to change it there."""
    if choice.source == "flag":
        return (
            "the explicit engine choice (--engine, or ContextHost's engine argument)",
            "pass an available name there",
        )
    if choice.source == "env":
        return (
            f"the environment variable {ENGINE_ENV}={choice.configured!r}",
            f"set {ENGINE_ENV} to an available name, or unset it",
        )
    where = str(config_path) if config_path else "the config file"
    return (
        f"[context] engine in {where}",
        f"run `ctxengine use NAME` or edit [context] engine in {where}",
    )


def unknown_slot_message(
    choice: SlotChoice, entries: Iterable[EngineEntry], config_path: str | Path | None = None
) -> str:
    """The one message for an unknown engine, whichever source named it."""
    origin, fix = slot_origin(choice, config_path)
    return f"{unknown_engine_message(choice.name, entries)} (selected by {origin}; to fix: {fix})"


def slot_may_exist(name: str, entries: Iterable[EngineEntry]) -> bool:
    """False when nothing can provide ``name``: no entry claims it, and no directory
    engine is left whose own engine name is still unknown (it might be ``name``)."""
    from .directory_names import recorded_engine_name

    entries = list(entries)
    if name == DEFAULT_ENGINE or find_entries(name, entries):
        return True
    return any(
        e.source == "directory"
        and e.error is None
        and e.location
        and recorded_engine_name(Path(e.location)) is None
        for e in entries
    )


def check_slot_known(
    choice: SlotChoice, entries: Iterable[EngineEntry], config_path: str | Path | None = None
) -> None:
    """Raise :class:`UnknownEngineError` when the selected engine cannot exist here."""
    entries = list(entries)
    if not slot_may_exist(choice.name, entries):
        raise UnknownEngineError(unknown_slot_message(choice, entries, config_path))


def duplicate_claim_message(name: str, claims: Sequence[EngineEntry]) -> str:
    """Two or more distributions claim one engine id: name them all."""
    owners = " and ".join(f"'{c.distribution}' ({c.value})" for c in claims)
    return (
        f"engine '{name}' is claimed by more than one distribution: {owners}; "
        f"uninstall all but one (pip uninstall {claims[-1].distribution})"
    )


def resolve_engine(
    choice: SlotChoice,
    loaded: LoadedConfig,
    *,
    make_context: Callable[[str], EngineContext],
    capabilities: frozenset[str] | None = None,
    quarantine: QuarantineSink | None = None,
    entries: list[EngineEntry] | None = None,
) -> ResolvedEngine:
    """Construct the selected engine, or the default with the reason it could not be used."""
    from ..contract.models import HOST_CAPABILITIES

    caps = HOST_CAPABILITIES if capabilities is None else capabilities
    if entries is None:
        entries = list_engines(plugins_directory=loaded.config.plugins.directory)
    name = choice.name

    def fall_back(reason: str, *, record: bool) -> ResolvedEngine:
        _warn("engine %r not used: %s", name, reason)
        if record and quarantine is not None:
            quarantine.record(name, "resolve", reason)
        default = load_default_engine(
            loaded, make_context=make_context, capabilities=caps, entries=entries, choice=choice
        )
        default.fallback = True
        default.reason = reason if default.reason is None else f"{reason}; {default.reason}"
        return default

    if name == DEFAULT_ENGINE:
        return load_default_engine(
            loaded, make_context=make_context, capabilities=caps, entries=entries, choice=choice
        )
    if not loaded.engine_enabled(name):
        where = loaded.path or "the config"
        return fall_back(
            f"disabled by [engines.{name}] enabled = false in {where}; the default engine runs",
            record=False,
        )
    claims = find_entries(name, entries)
    engine = None
    if not claims:
        found = probe_directory_engines(name, entries, loaded, make_context)
        if found is None:  # not installed: a typo is not a fault to quarantine
            return fall_back(unknown_slot_message(choice, entries, loaded.path), record=False)
        claims, engine = [found[0]], found[1]
    installed = [c for c in claims if c.source == "entry-point"]
    if len(installed) > 1:
        raise EngineSelectionError(duplicate_claim_message(name, installed))
    entry = claims[0]
    if entry.error is not None:
        policy = PluginPolicy.from_env()
        is_policy = policy.refusal(entry.name, entry.distribution, entry.aliases) is not None
        return fall_back(entry.error, record=not is_policy)
    if engine is None:
        try:
            engine = construct_engine(entry, loaded, make_context)
        except EngineLoadError as exc:
            return fall_back(str(exc), record=True)
    from .compat.cloning import clone_problems
    from .validation import contract_problems, host_requirement_problems

    # A directory engine is selected by its directory name or its engine's name (the
    # framework's rule): its engine need not be called after the directory.
    problems = contract_problems(engine, None if entry.source == "directory" else name)
    problems = problems or clone_problems(engine)
    if problems:
        dispose_quietly(engine)
        return fall_back(f"contract check failed: {'; '.join(problems)}", record=True)
    name = entry.name
    unmet = host_requirement_problems(engine, caps)
    if unmet:
        dispose_quietly(engine)
        raise HostRequirementsError(
            "; ".join(unmet) + ". Run it under a host that offers these capabilities, "
            "or select another engine"
        )
    return ResolvedEngine(engine, name, entry, False, None, choice, list(entry.warnings))


def load_default_engine(
    loaded: LoadedConfig,
    *,
    make_context: Callable[[str], EngineContext],
    capabilities: frozenset[str] | None = None,
    entries: list[EngineEntry] | None = None,
    choice: SlotChoice | None = None,
) -> ResolvedEngine:
    """The default engine ``legacy``, or the built-in last resort when it cannot be used.

    Failures of the default are not quarantined (there is nothing to fall back
    to but the last resort); they are reported in ``reason``.
    """
    from ..contract.models import HOST_CAPABILITIES
    from .validation import validate_engine

    caps = HOST_CAPABILITIES if capabilities is None else capabilities
    choice = choice or SlotChoice(DEFAULT_ENGINE, "default", None)
    if entries is None:
        entries = list_engines(plugins_directory=loaded.config.plugins.directory)
    claims = [c for c in find_entries(DEFAULT_ENGINE, entries) if c.error is None]
    if not claims:
        reason = f"the default engine '{DEFAULT_ENGINE}' is not installed (pip install ctxengine)"
    else:
        try:
            engine = construct_engine(claims[0], loaded, make_context)
        except EngineLoadError as exc:
            reason = str(exc)
        else:
            problems = validate_engine(engine, DEFAULT_ENGINE, caps)
            if not problems:
                fallback = choice.name != DEFAULT_ENGINE
                return ResolvedEngine(engine, DEFAULT_ENGINE, claims[0], fallback, None, choice)
            dispose_quietly(engine)
            reason = f"the default engine failed its contract check: {'; '.join(problems)}"
    _warn("%s; using the built-in last-resort engine", reason)
    from .fallback import LastResortEngine

    last = LastResortEngine(config=None, context=make_context(LAST_RESORT_NAME))
    entry = next((e for e in entries if e.source == "built-in"), None)
    return ResolvedEngine(
        last, LAST_RESORT_NAME, entry, True, f"{reason}; using the built-in last resort", choice
    )


def construct_engine(
    entry: EngineEntry, loaded: LoadedConfig, make_context: Callable[[str], EngineContext]
) -> Any:
    """Import ``entry`` and call its class or factory with the arguments it declares.

    Raises :class:`EngineLoadError` when the import or the call fails, and
    ``ConfigError`` when the ``[engines.<name>]`` block does not validate.
    """
    factory = load_engine_factory(entry)
    accepted = _accepted_keywords(factory)
    kwargs: dict[str, Any] = {}
    if "config" in accepted:
        kwargs["config"] = engine_config(entry.name, factory, loaded)
    if "context" in accepted:
        kwargs["context"] = make_context(entry.name)

    def make() -> Any:
        try:
            return factory(**kwargs)
        except EngineLoadError:
            raise
        except Exception as exc:
            raise EngineLoadError(
                f"engine '{entry.name}': constructing {entry.value} raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    from .compat.cloning import give_fresh_clones

    engine = make()
    give_fresh_clones(engine, make, always=entry.source == "directory")
    if entry.source == "directory":
        _record_engine_name(entry, engine)
    return engine


def _record_engine_name(entry: EngineEntry, engine: Any) -> None:
    from .directory_names import record_engine_name

    try:
        name = engine.name
    except Exception:
        return
    if not (isinstance(name, str) and name and entry.location):
        return
    if record_engine_name(Path(entry.location), name):
        clear_cache()  # the listing offers the new alias from now on


def probe_directory_engines(
    name: str,
    entries: list[EngineEntry],
    loaded: LoadedConfig,
    make_context: Callable[[str], EngineContext],
) -> tuple[EngineEntry, Any] | None:
    """The directory engine whose engine calls itself ``name``, constructed.

    Its engine name is known only once ``register(ctx)`` ran; the engines not yet
    imported are imported (the allowlist already applied: refused entries have an
    error and are skipped) and each name found is recorded for the listing.
    """
    from .directory_names import recorded_engine_name

    for entry in entries:
        if entry.source != "directory" or entry.error is not None or not entry.location:
            continue
        if recorded_engine_name(Path(entry.location)) is not None:
            continue  # its name is known and did not match
        try:
            engine = construct_engine(entry, loaded, make_context)
        except Exception:
            continue  # reported when it is selected by its own name
        if getattr(engine, "name", None) == name:
            return entry, engine
        dispose_quietly(engine)
    return None


def engine_config(name: str, factory: Any, loaded: LoadedConfig) -> Any:
    """The engine's ``[engines.<name>]`` block (minus ``enabled``), validated by its model.

    Without a ``config_model`` the raw dict is passed (None when the block is empty).
    """
    from ..config import ConfigError

    block = loaded.engine_block(name)
    block.pop("enabled", None)
    model = getattr(factory, "config_model", None)
    if model is None:
        return block or None
    from pydantic import ValidationError

    try:
        return model.model_validate(block)
    except ValidationError as exc:
        where = loaded.path or "the config"
        lines = []
        for err in exc.errors():
            key = ".".join(["engines", name, *(str(p) for p in err["loc"])])
            if err["type"] == "extra_forbidden":
                lines.append(f"unknown key '{key}'; remove it or check its spelling")
            else:
                lines.append(f"key '{key}': {err['msg']} (got {err.get('input')!r})")
        raise ConfigError(f"{where}: {'; '.join(lines)}") from exc


def _accepted_keywords(factory: Any) -> frozenset[str]:
    """Which of ``config`` / ``context`` the factory takes by name."""
    import inspect

    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return frozenset({"config", "context"})
    passable = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(p.name for p in params if p.kind in passable) & {"config", "context"}


def dispose_quietly(engine: Any) -> None:
    try:
        engine.dispose()
    except Exception as exc:
        _warn("dispose() of a rejected engine raised %s: %s", type(exc).__name__, exc)

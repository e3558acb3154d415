"""Contract validation of a constructed engine, run once at load.

An engine passes when it is a ``ContextEngine`` (or provides every required
member), its ``name`` equals the id it was registered under, every parameter
of every method it implements is known to the contract, its info attributes
are well formed, and the host offers every capability it requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..contract.engine import ContextEngine
from ..contract.models import HOST_CAPABILITIES, EngineInfo
from ..contract.signatures import check_parameters, missing_required

_MAINTENANCE_MODES = ("foreground", "background")


def validate_engine(
    engine: object,
    expected_name: str | None = None,
    capabilities: Iterable[str] = HOST_CAPABILITIES,
) -> list[str]:
    """Every contract problem of ``engine`` (empty when it may be used)."""
    problems = contract_problems(engine, expected_name)
    if not problems:
        problems = host_requirement_problems(engine, capabilities)
    return problems


def contract_problems(engine: object, expected_name: str | None = None) -> list[str]:
    """Problems with the engine itself (not with what the host offers)."""
    if not isinstance(engine, ContextEngine):
        missing = missing_required(engine)
        if missing:
            return [
                f"{type(engine).__name__} is not a ContextEngine and lacks "
                f"{', '.join(missing)}; subclass ctxengine_host.ContextEngine"
            ]
    problems: list[str] = []
    try:
        name = engine.name  # type: ignore[attr-defined]
    except Exception as exc:
        return [f"reading 'name' raised {type(exc).__name__}: {exc}"]
    if not isinstance(name, str) or not name:
        problems.append(f"'name' must be a non-empty string (got {name!r})")
    elif expected_name is not None and name != expected_name:
        problems.append(
            f"engine class {type(engine).__name__} says name={name!r} but is registered as "
            f"{expected_name!r}; make the entry point name and the engine's name equal"
        )
    problems.extend(check_parameters(engine))
    problems.extend(info_problems(engine))
    return problems


def info_problems(engine: object) -> list[str]:
    """Problems with the info attributes (version, flags, requirements, config model)."""
    problems: list[str] = []
    for attr, kind in (("version", str), ("display_name", str), ("owns_compaction", bool)):
        value = getattr(engine, attr, None)
        if value is not None and not isinstance(value, kind):
            problems.append(f"'{attr}' must be a {kind.__name__} (got {value!r})")
    mode = getattr(engine, "turn_maintenance_mode", "foreground")
    if mode not in _MAINTENANCE_MODES:
        problems.append(f"'turn_maintenance_mode' must be foreground or background (got {mode!r})")
    config_model = getattr(engine, "config_model", None)
    if config_model is not None and not callable(getattr(config_model, "model_validate", None)):
        problems.append(f"'config_model' must be a pydantic model class (got {config_model!r})")
    try:
        requirements_of(engine)
    except ValueError as exc:
        problems.append(str(exc))
    return problems


def requirements_of(engine: object) -> dict[str, tuple[list[str], str]]:
    """``host_requirements`` as operation -> (capabilities, message); ValueError if malformed."""
    raw = getattr(engine, "host_requirements", None) or {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"'host_requirements' must be a dict (got {type(raw).__name__})")
    out: dict[str, tuple[list[str], str]] = {}
    for operation, requirement in raw.items():
        caps = getattr(requirement, "capabilities", None)
        message = getattr(requirement, "message", "")
        if isinstance(requirement, Mapping):
            caps, message = requirement.get("capabilities"), requirement.get("message", "")
        if (
            not isinstance(operation, str)
            or not isinstance(caps, list | tuple)
            or not all(isinstance(c, str) for c in caps)
            or not isinstance(message, str)
        ):
            raise ValueError(
                f"host_requirements[{operation!r}] must be {{'capabilities': [str, ...], "
                f"'message': str}} (got {requirement!r})"
            )
        out[operation] = (list(caps), message)
    return out


def host_requirement_problems(engine: object, capabilities: Iterable[str]) -> list[str]:
    """One message per operation whose required capabilities the host does not offer."""
    offered = frozenset(capabilities)
    problems = []
    for operation, (caps, message) in sorted(requirements_of(engine).items()):
        missing = [c for c in caps if c not in offered]
        if missing:
            why = f": {message}" if message else ""
            problems.append(
                f"engine '{getattr(engine, 'name', '?')}' needs host capability "
                f"{', '.join(missing)} for '{operation}'{why} (this host offers: "
                f"{', '.join(sorted(offered)) or 'none'})"
            )
    return problems


def engine_info(engine: object) -> EngineInfo:
    """The info attributes of a validated engine, as a model (for doctor and --json)."""
    requirements = {
        op: {"capabilities": caps, "message": msg}
        for op, (caps, msg) in requirements_of(engine).items()
    }
    return EngineInfo(
        name=engine.name,  # type: ignore[attr-defined]
        version=str(getattr(engine, "version", "0")),
        display_name=str(getattr(engine, "display_name", "") or ""),
        owns_compaction=bool(getattr(engine, "owns_compaction", False)),
        turn_maintenance_mode=getattr(engine, "turn_maintenance_mode", "foreground"),
        host_requirements=requirements,
        has_config_model=getattr(engine, "config_model", None) is not None,
    )


def info_dict(engine: Any) -> dict[str, Any]:
    """:func:`engine_info` as a plain dict."""
    return engine_info(engine).model_dump()

"""The parameter rule of the contract, built on the hookspecs.

* A method is *implemented* when the engine's class defines it and it is not
  the base class's inherited default (identity check).
* Every parameter name of an implemented method must be a parameter of its
  hookspec, defaulted and keyword-only ones included (``focus=None`` where the
  spec says ``focus_topic`` is an error, not a silently ignored argument).
* At call time each parameter the method declares is passed by name, whether
  positional-or-keyword or keyword-only; undeclared ones are not passed. That is
  what lets the host add arguments without breaking older engines.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from .engine import ContextEngine
from .hookspecs import CONTRACT_METHODS, REQUIRED_METHODS, ContractSpec

_ABSENT = object()
_PASSABLE_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@cache
def spec_parameters(method: str) -> tuple[str, ...]:
    """The parameter names the hookspec of ``method`` declares (without ``self``)."""
    params = inspect.signature(getattr(ContractSpec, method)).parameters
    return tuple(name for name in params if name != "self")


@cache
def _declared(func: Callable[..., Any]) -> tuple[tuple[str, ...], bool]:
    """Names a callable accepts by keyword, and whether it takes ``**kwargs``."""
    names: list[str] = []
    var_keyword = False
    for param in inspect.signature(func).parameters.values():
        if param.kind in _PASSABLE_KINDS:
            names.append(param.name)
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
    return tuple(names), var_keyword


def declared_parameters(bound_method: Callable[..., Any]) -> tuple[str, ...]:
    """Parameter names a bound engine method declares."""
    func = getattr(bound_method, "__func__", bound_method)
    names, _ = _declared(func)
    if func is not bound_method and names and names[0] in ("self", "cls"):
        return names[1:]
    return names


def is_implemented(engine: object, method: str) -> bool:
    """True when ``engine``'s class provides ``method`` other than the base default."""
    impl = inspect.getattr_static(type(engine), method, _ABSENT)
    if impl is _ABSENT:
        return False
    return impl is not ContextEngine.__dict__.get(method)


def implemented_methods(engine: object) -> frozenset[str]:
    """Contract methods the engine implements itself."""
    return frozenset(m for m in CONTRACT_METHODS if is_implemented(engine, m))


def call_declared(bound_method: Callable[..., Any], available: Mapping[str, Any]) -> Any:
    """Call ``bound_method`` with the arguments it declares, by name."""
    names = declared_parameters(bound_method)
    return bound_method(**{name: available[name] for name in names if name in available})


def check_parameters(engine: object) -> list[str]:
    """Problems with the parameter names of the engine's implemented methods."""
    problems: list[str] = []
    for method in sorted(implemented_methods(engine)):
        attr = getattr(engine, method, None)
        if not callable(attr):
            problems.append(f"{method} is not callable")
            continue
        allowed = set(spec_parameters(method))
        unknown = [name for name in declared_parameters(attr) if name not in allowed]
        if unknown:
            problems.append(
                f"{method}() declares parameter(s) {', '.join(unknown)} unknown to the contract; "
                f"the contract's parameters are: {', '.join(spec_parameters(method)) or 'none'}"
            )
    return problems


def missing_required(engine: object) -> list[str]:
    """Required contract members the engine does not provide."""
    missing = [m for m in sorted(REQUIRED_METHODS) if not callable(getattr(engine, m, None))]
    try:
        name = engine.name  # type: ignore[attr-defined]
    except Exception:
        name = None
    if not isinstance(name, str) or not name:
        missing.insert(0, "name")
    return missing

"""A fault-injecting wrapper for any engine class, one contract method at a time.

``inject(EngineClass, method, fault)`` returns a subclass whose ``method``:

* ``raise``  — raises ``RuntimeError``;
* ``hang``   — sleeps past its timeout (released at the end of the test), then answers;
* ``invalid``— returns the given invalid value instead of calling the engine;
* ``mutate`` — answers normally, then defaces every list and dict it was given, in place
  (strings replaced, keys added, lists emptied), the way a careless engine might.

The replacement keeps the wrapped method's signature (the host passes only the
parameters a method declares), so the engine stays contract-valid.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from runtime.engines import RELEASE

FAULTS = ("raise", "hang", "invalid", "mutate")
MUTATED = "MUTATED BY ENGINE"


def deface(value: Any, seen: set[int] | None = None) -> None:
    """Overwrite a structure in place: every string in a dict, every list emptied."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, dict):
        for key in list(value):
            if isinstance(value[key], str):
                value[key] = MUTATED
            else:
                deface(value[key], seen)
        value["injected_by_engine"] = True
    elif isinstance(value, list):
        for item in value:
            deface(item, seen)
        value.clear()


def inject(base: type, method: str, fault: str, value: Any = None, name: str = "faulty") -> type:
    """A subclass of ``base`` whose ``method`` misbehaves as ``fault`` says."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; use one of {', '.join(FAULTS)}")
    original = getattr(base, method)

    @functools.wraps(original)
    def broken(self, *args, **kwargs):
        if fault == "raise":
            raise RuntimeError(f"injected failure in {method}")
        if fault == "hang":
            RELEASE.wait(10)
            return original(self, *args, **kwargs)
        if fault == "invalid":
            return copy.deepcopy(value)
        result = original(self, *args, **kwargs)
        for argument in (*args, *kwargs.values()):
            deface(argument)
        return result

    return type(f"{base.__name__}_{method}_{fault}", (base,), {method: broken, "name": name})

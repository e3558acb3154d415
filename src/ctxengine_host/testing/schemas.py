"""A structural validator for engine tool schemas (the OpenAI function-tool shape).

Engines return either the bare function description (``name``, ``description``,
``parameters``) or the wrapped form ``{"type": "function", "function": {...}}``.
``parameters`` must be a JSON Schema object; this checks the subset of JSON
Schema that providers accept for tools, without a dependency on ``jsonschema``:
the kit needs to catch malformed schemas, not to validate instances.
"""

from __future__ import annotations

import json
import re
from typing import Any

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_COMBINATORS = ("anyOf", "oneOf", "allOf")


def tool_schema_problems(schemas: Any) -> list[str]:
    """Everything wrong with a ``get_tool_schemas()`` result (empty list: valid)."""
    if not isinstance(schemas, list):
        return [f"get_tool_schemas() must return a list, got {type(schemas).__name__}"]
    problems: list[str] = []
    seen: set[str] = set()
    for index, schema in enumerate(schemas):
        where = f"tool {index}"
        function = _function_part(schema, where, problems)
        if function is None:
            continue
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            problems.append(f"{where}: name {name!r} must match {TOOL_NAME.pattern}")
        elif name in seen:
            problems.append(f"{where}: tool name {name!r} is declared twice")
        else:
            seen.add(name)
            where = f"tool {name!r}"
        if not isinstance(function.get("description", ""), str):
            problems.append(f"{where}: description must be a string")
        if "parameters" in function:
            problems.extend(_object_schema_problems(function["parameters"], f"{where}.parameters"))
        try:
            json.dumps(schema)
        except (TypeError, ValueError) as exc:
            problems.append(f"{where}: not JSON-serializable ({exc})")
    return problems


def _function_part(schema: Any, where: str, problems: list[str]) -> dict[str, Any] | None:
    if not isinstance(schema, dict):
        problems.append(f"{where}: must be a dict, got {type(schema).__name__}")
        return None
    if schema.get("type") == "function":
        function = schema.get("function")
        if not isinstance(function, dict):
            problems.append(f"{where}: type 'function' needs a 'function' dict")
            return None
        return function
    if "function" in schema:
        problems.append(f'{where}: a wrapped schema needs "type": "function"')
        return None
    return schema


def _object_schema_problems(schema: Any, where: str) -> list[str]:
    if not isinstance(schema, dict):
        return [f"{where}: must be a JSON Schema dict, got {type(schema).__name__}"]
    if schema.get("type") != "object":
        return [f'{where}: the parameters schema must have "type": "object"']
    return _schema_problems(schema, where)


def _schema_problems(schema: Any, where: str) -> list[str]:
    """Structural problems of one JSON Schema node and its children."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{where}: a schema must be a dict, got {type(schema).__name__}"]
    problems: list[str] = []
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for item in kinds:
        if item not in JSON_TYPES:
            problems.append(f"{where}: unknown type {item!r} (one of {sorted(JSON_TYPES)})")
    if not kinds and not any(k in schema for k in ("enum", "const", "$ref", *_COMBINATORS)):
        problems.append(f"{where}: needs a 'type' (or enum/const/$ref/anyOf/oneOf/allOf)")
    if "enum" in schema and not (isinstance(schema["enum"], list) and schema["enum"]):
        problems.append(f"{where}: enum must be a non-empty list")
    for key in _COMBINATORS:
        if key in schema:
            options = schema[key]
            if not isinstance(options, list) or not options:
                problems.append(f"{where}: {key} must be a non-empty list of schemas")
            else:
                for i, option in enumerate(options):
                    problems.extend(_schema_problems(option, f"{where}.{key}[{i}]"))
    if "properties" in schema:
        properties = schema["properties"]
        if not isinstance(properties, dict):
            problems.append(f"{where}: properties must be a dict")
            properties = {}
        for prop, sub in properties.items():
            problems.extend(_schema_problems(sub, f"{where}.properties.{prop}"))
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            problems.append(f"{where}: required must be a list of property names")
        else:
            missing = [r for r in required if r not in properties]
            if missing:
                problems.append(f"{where}: required names undeclared properties {missing}")
    elif schema.get("required"):
        problems.append(f"{where}: required is set but there are no properties")
    if "items" in schema:
        problems.extend(_schema_problems(schema["items"], f"{where}.items"))
    elif "array" in kinds:
        problems.append(f"{where}: an array schema needs 'items'")
    for key in ("description", "title"):
        if key in schema and not isinstance(schema[key], str):
            problems.append(f"{where}: {key} must be a string")
    return problems

"""The kit's structural check of tool schemas (the OpenAI function-tool shape)."""

from __future__ import annotations

import pytest

from ctxengine_host.testing import tool_schema_problems

SEARCH = {
    "name": "lcm_grep",
    "description": "Search the history",
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": ["integer", "null"]},
            "roles": {"type": "array", "items": {"enum": ["user", "assistant"]}},
            "since": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        },
        "required": ["query"],
    },
}


def test_valid_schemas_in_both_shapes():
    assert tool_schema_problems([]) == []
    assert tool_schema_problems([SEARCH]) == []
    assert tool_schema_problems([{"type": "function", "function": SEARCH}]) == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({**SEARCH, "name": "has space"}, "must match"),
        ({**SEARCH, "parameters": {"type": "array", "items": {}}}, '"type": "object"'),
        ({**SEARCH, "parameters": {**SEARCH["parameters"], "required": ["nope"]}}, "undeclared"),
        (
            {**SEARCH, "parameters": {"type": "object", "properties": {"a": {"type": "list"}}}},
            "unknown type 'list'",
        ),
        (
            {**SEARCH, "parameters": {"type": "object", "properties": {"a": {"type": "array"}}}},
            "needs 'items'",
        ),
        ({"function": SEARCH}, '"type": "function"'),
        ({**SEARCH, "description": 3}, "description must be a string"),
    ],
)
def test_malformed_schemas_are_named(schema, expected):
    problems = tool_schema_problems([schema])
    assert any(expected in p for p in problems), problems


def test_duplicate_names_and_non_lists():
    assert any("declared twice" in p for p in tool_schema_problems([SEARCH, SEARCH]))
    assert tool_schema_problems({"name": "x"}) == [
        "get_tool_schemas() must return a list, got dict"
    ]

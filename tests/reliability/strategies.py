"""Hypothesis strategies for hostile input: messages, tool arguments, config files."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

#: Any code point, lone surrogates included.
any_text = st.text(st.characters(exclude_categories=()), max_size=60)
words = st.text(st.characters(codec="utf-8"), max_size=30)


def _nested(depth: int, leaf: Any = 0) -> Any:
    value: Any = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


#: JSON nested 900-3,000 levels deep (past ``json``'s default recursion limit).
deep_json = st.integers(min_value=900, max_value=3000).map(_nested)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(words, inner, max_size=4),
    max_leaves=16,
)
large_text = st.integers(min_value=20_000, max_value=200_000).map(
    lambda n: "ab c\u00e9 " * (n // 6)
)

content = st.one_of(
    any_text,
    st.none(),
    large_text,
    st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": any_text}), max_size=3),
    json_values,
)
call_ids = st.sampled_from(["call_1", "call_2", "call_1"]) | any_text | st.integers()


def _deep_arguments(depth: int) -> str:
    return "[" * depth + "]" * depth


tool_call = st.fixed_dictionaries(
    {"id": call_ids, "type": st.just("function")},
    optional={
        "function": st.fixed_dictionaries(
            {"name": any_text},
            optional={
                "arguments": any_text | st.integers(100, 20_000).map(_deep_arguments) | json_values
            },
        )
    },
)

roles = (
    st.sampled_from(["user", "assistant", "tool", "system", "developer"])
    | st.sampled_from(["wizard", "", "USER"])
    | st.none()
    | st.integers()
)

message = st.fixed_dictionaries(
    {},
    optional={
        "role": roles,
        "content": content,
        "tool_calls": st.lists(tool_call, max_size=3) | json_values,
        "tool_call_id": call_ids | st.none(),
        "name": any_text,
        "extra": json_values | deep_json,
        "message_uid": st.sampled_from(["", "0" * 32, "../../etc/passwd"]) | any_text,
    },
)

#: A plausible conversation skeleton with some fields corrupted: orphan tool results and
#: duplicate tool-call ids come up often, not only by luck.
plausible = st.lists(
    st.one_of(
        st.fixed_dictionaries({"role": st.just("user"), "content": any_text | large_text}),
        st.fixed_dictionaries(
            {"role": st.just("assistant"), "content": st.none() | any_text,
             "tool_calls": st.lists(tool_call, min_size=1, max_size=3)}
        ),
        st.fixed_dictionaries({"role": st.just("assistant"), "content": any_text}),
        st.fixed_dictionaries(
            {"role": st.just("tool"), "tool_call_id": call_ids, "content": any_text}
        ),
    ),
    max_size=8,
)  # fmt: skip

batches = st.one_of(
    plausible,
    st.lists(message | st.sampled_from([None, "user: hi", 3, [], {}]), max_size=6),
)

# ------------------------------------------------------------------------ tool arguments

tool_argument_values = st.one_of(
    json_values,
    any_text,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(
        ["sum_1", "msg_1", "msg_999999999999999999", "sum_-1", "../../etc/passwd",
         "/etc/passwd", "file:///etc/passwd", "msg_1/../../x", "0" * 32, "msg_%00", "NaN"]
    ),
)  # fmt: skip


def tool_args(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Arguments for one tool schema: its own keys with any values, plus junk keys."""
    keys = list(schema.get("parameters", {}).get("properties", {}))
    own = st.fixed_dictionaries({}, optional={k: tool_argument_values for k in keys})
    return st.one_of(
        own,
        st.dictionaries(words, tool_argument_values, max_size=4),
        json_values,
        any_text,  # a raw, probably invalid, JSON string
    )


# ------------------------------------------------------------------------ config files

toml_scalars = st.one_of(
    st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), words
)
#: Keys naming files (store path, database, plugins directory) are left out: random
#: values there would create files anywhere on this machine.
section_values = st.dictionaries(
    st.sampled_from(
        ["engine", "reserve_output_tokens", "model", "context_length", "model_thresholds",
         "context_timeout_seconds", "hook_timeout_seconds", "backend", "enabled", "base_url",
         "max_retries", "fresh_tail_messages", "leaf_chunk_tokens", "unknown_key"]
    ),
    toml_scalars | st.lists(toml_scalars, max_size=3),
    max_size=5,
)  # fmt: skip
config_tables = st.dictionaries(
    st.sampled_from(
        ["context", "compression", "summarizer", "store", "plugins", "engines.lcm",
         "engines.legacy", "bogus"]
    ),
    section_values,
    max_size=5,
)  # fmt: skip


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else "nan"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)  # a basic string; JSON escapes are valid TOML escapes


def to_toml(tables: dict[str, dict[str, Any]]) -> str:
    lines = []
    for table, values in tables.items():
        lines.append(f"[{table}]")
        lines.extend(f"{key} = {toml_value(v)}" for key, v in values.items())
    return "\n".join(lines) + "\n"

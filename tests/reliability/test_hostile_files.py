"""Hostile files and tool calls at the host's edges: deeply nested TOML and JSON, gzip
bombs, damaged archives, a store on a full or read-only disk, odd session ids. Each is a
clear error naming the file (or the tool's argument error), never a traceback, never a
quarantine."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ctxengine_host.config import ConfigError, load_config
from ctxengine_host.configfile import RawConfigError, read_raw_config
from ctxengine_host.discovery.engines import clear_cache, list_engines
from ctxengine_host.limits import InputLimitError, loads_json, nesting_depth_of_text
from ctxengine_host.replay import sessionfile
from ctxengine_host.replay.sessionfile import SessionFileError, parse_session, read_text
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.runtime.isolation import is_quarantined
from ctxengine_host.stores.transcript import SQLiteTranscriptStore, TranscriptStoreError

from .test_hostile_input import lcm_config

DEEP_TOML = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"
DEEP_INLINE_TOML = "x = " + "{a = " * 3_000 + "1" + "}" * 3_000 + "\n"
#: A deep manifest under the manifest size limit (64 KiB), so the nesting bound answers.
DEEP_MANIFEST = "x = " + "[" * 20_000 + "]" * 20_000 + "\n"
CTXENGINE = Path(sys.executable).with_name("ctxengine")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CTXENGINE_")}
    return subprocess.run(
        [str(CTXENGINE), *args], env={**base, **(env or {})}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


# Item 5: deeply nested TOML.


@pytest.mark.parametrize("text", [DEEP_MANIFEST, DEEP_INLINE_TOML], ids=["arrays", "tables"])
def test_a_deep_manifest_marks_only_that_plugin_broken(tmp_path, text):
    plugins = tmp_path / "plugins"
    for name, manifest in (("deep", text), ("fine", 'name = "fine"\n')):
        (plugins / name).mkdir(parents=True)
        (plugins / name / "plugin.toml").write_text(manifest)
        (plugins / name / "__init__.py").write_text("")
    clear_cache()
    entries = {e.name: e for e in list_engines(plugins_directory=plugins)}
    assert "nested deeper than" in entries["deep"].error
    assert entries["fine"].error is None
    assert "legacy" in entries
    clear_cache()
    listing = run_cli("engines", "--json", env={"CTXENGINE_PLUGINS_DIR": str(plugins)})
    assert listing.returncode == 0, listing.stderr
    assert "nested deeper than" in listing.stdout


@pytest.mark.parametrize("text", [DEEP_TOML, DEEP_INLINE_TOML], ids=["arrays", "tables"])
def test_a_deep_config_file_is_a_config_error_naming_it(tmp_path, text):
    path = tmp_path / "ctxengine.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=str(path)):
        load_config(path)
    with pytest.raises(RawConfigError, match=str(path)):
        read_raw_config(path)
    done = run_cli("--config", str(path), "engines")
    assert done.returncode != 0
    assert str(path) in done.stderr and "Traceback" not in done.stderr


# Item 14: hostile session files and archives.


def test_validate_reports_a_deeply_nested_line(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text(
        json.dumps({"role": "user", "content": "hi"}) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n"
    )
    done = run_cli("validate", str(path), "--json")
    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout)
    assert any(p["line"] == 2 and "nested deeper" in p["message"] for p in report["problems"])


def _depth_char_by_char(text: str) -> int:
    """The reference: one character at a time, strings and their escapes skipped."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def test_the_nesting_scan_skips_strings_and_escapes_like_a_character_walk():
    rng = random.Random(7)
    samples = [
        '{"a": "[[[", "b": [{"c": "\\"]"}]}',
        '["unterminated [[[',
        '"\\\\" [[ "\\" ]"',
        "]]][[",
        '"ends in a backslash \\',
    ]
    samples += ["".join(rng.choice('[]{}"\\a\n,') for _ in range(40)) for _ in range(3000)]
    for text in samples:
        assert nesting_depth_of_text(text) == _depth_char_by_char(text), text


def test_loads_json_refuses_deep_nesting_and_parses_brackets_inside_strings():
    assert loads_json('{"code": "' + "[" * 500 + '"}') == {"code": "[" * 500}
    with pytest.raises(InputLimitError):
        loads_json("[" * 65 + "]" * 65)
    assert loads_json("[" * 64 + "]" * 64) == loads_json("[" * 64 + "]" * 64)


def test_a_deep_element_of_a_json_array_session_is_a_problem():
    parsed = parse_session(
        '[{"role": "user", "content": "hi"}, ' + "[" * 100_000 + "]" * 100_000 + "]"
    )
    assert any("nested" in p.message for p in parsed.problems)


def test_a_gzip_bomb_is_refused_before_it_is_inflated(tmp_path, monkeypatch):
    monkeypatch.setattr(sessionfile, "MAX_SESSION_BYTES", 2**20)
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n" * (64 * 2**20)))
    assert path.stat().st_size < 200_000
    with pytest.raises(SessionFileError, match="MiB of session text"):
        read_text(path)


@pytest.mark.parametrize(
    "header", ["[1, 2]", '"ctxengine-archive"', "null", "[" * 100_000 + "]" * 100_000]
)
def test_import_of_an_archive_whose_header_is_not_an_object(tmp_path, header):
    archive = tmp_path / "a.jsonl"
    archive.write_text(header + "\n")
    done = run_cli("import", str(archive), "--store", str(tmp_path / "t.db"))
    assert done.returncode == 2, done.stderr
    assert "not a ctxengine archive" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "record",
    [[1], {"session_id": "s"}, {"session_id": "s", "session": {}, "rows": [], "live": [],
     "bootstrapped": [], "engines": {}}],
)  # fmt: skip
def test_import_of_a_damaged_session_record_writes_nothing(tmp_path, record):
    archive = tmp_path / "a.jsonl"
    header = {"format": "ctxengine-archive", "version": 1, "sessions": 1}
    archive.write_text(json.dumps(header) + "\n" + json.dumps(record) + "\n")
    store = tmp_path / "t.db"
    done = run_cli("import", str(archive), "--store", str(store))
    assert done.returncode == 2, done.stderr
    assert "session record 1" in done.stderr and "Traceback" not in done.stderr
    assert not store.exists() or SQLiteTranscriptStore(store).session_ids() == []


@pytest.mark.parametrize("pragma", ["max_page_count=1", "query_only=1"], ids=["full", "read-only"])
def test_a_store_that_cannot_be_written_names_its_file(tmp_path, pragma):
    path = tmp_path / "t.db"
    store = SQLiteTranscriptStore(path)
    store.open_session("s")
    store._db.execute(f"PRAGMA {pragma}")
    with pytest.raises(TranscriptStoreError, match=str(path)) as raised:
        store.insert_rows(
            "s", [({"role": "user", "content": "x" * 100_000, "message_uid": "u1"}, "d", "caller")]
        )
    assert "disk" in str(raised.value) or "writable" in str(raised.value)
    store.close()


@pytest.mark.parametrize("session_id", ["chat\n", "chat\r\n", "\nchat", "chat\x00"])
def test_session_ids_with_line_breaks_are_refused(make_host, session_id):
    host = make_host("legacy")
    with pytest.raises(ValueError, match="invalid session id"):
        host.open_session(session_id)


# Item 13 at the session: the answer is always JSON, and never a quarantine.


@pytest.fixture
def lcm_session(make_host, tmp_path):
    host: ContextHost = make_host("lcm", cfg=lcm_config(tmp_path))
    session = host.open_session("tools")
    session.add_user_message("the release is on friday")
    yield session
    assert not is_quarantined("lcm")


@pytest.mark.parametrize(
    ("name", "args"),
    [
        (["lcm_grep"], {"pattern": "release"}),
        ({"n": 1}, {"pattern": "release"}),
        ("lcm_grep", "[" * 100_000),
        ("lcm_grep", '{"pattern": "release", "limit": ' + "9" * 5000 + "}"),
        (
            "lcm_grep",
            {
                "pattern": "release",
                "x": [
                    [
                        [
                            [
                                [
                                    [
                                        [
                                            [
                                                [
                                                    [
                                                        [
                                                            [
                                                                [
                                                                    [
                                                                        [
                                                                            [
                                                                                [
                                                                                    [
                                                                                        [
                                                                                            [
                                                                                                [
                                                                                                    [
                                                                                                        [
                                                                                                            [
                                                                                                                [
                                                                                                                    [
                                                                                                                        [
                                                                                                                            [
                                                                                                                                [
                                                                                                                                    [
                                                                                                                                        [
                                                                                                                                            [
                                                                                                                                                [
                                                                                                                                                    [
                                                                                                                                                        [
                                                                                                                                                            [
                                                                                                                                                                [
                                                                                                                                                                    [
                                                                                                                                                                        [
                                                                                                                                                                            [
                                                                                                                                                                                [
                                                                                                                                                                                    [
                                                                                                                                                                                        [
                                                                                                                                                                                            [
                                                                                                                                                                                                [
                                                                                                                                                                                                    [
                                                                                                                                                                                                        [
                                                                                                                                                                                                            [
                                                                                                                                                                                                                [
                                                                                                                                                                                                                    [
                                                                                                                                                                                                                        [
                                                                                                                                                                                                                            [
                                                                                                                                                                                                                                [
                                                                                                                                                                                                                                    [
                                                                                                                                                                                                                                        [
                                                                                                                                                                                                                                            [
                                                                                                                                                                                                                                                [
                                                                                                                                                                                                                                                    [
                                                                                                                                                                                                                                                        [
                                                                                                                                                                                                                                                            [
                                                                                                                                                                                                                                                                [
                                                                                                                                                                                                                                                                    [
                                                                                                                                                                                                                                                                        [
                                                                                                                                                                                                                                                                            [
                                                                                                                                                                                                                                                                                [
                                                                                                                                                                                                                                                                                    [
                                                                                                                                                                                                                                                                                        []
                                                                                                                                                                                                                                                                                    ]
                                                                                                                                                                                                                                                                                ]
                                                                                                                                                                                                                                                                            ]
                                                                                                                                                                                                                                                                        ]
                                                                                                                                                                                                                                                                    ]
                                                                                                                                                                                                                                                                ]
                                                                                                                                                                                                                                                            ]
                                                                                                                                                                                                                                                        ]
                                                                                                                                                                                                                                                    ]
                                                                                                                                                                                                                                                ]
                                                                                                                                                                                                                                            ]
                                                                                                                                                                                                                                        ]
                                                                                                                                                                                                                                    ]
                                                                                                                                                                                                                                ]
                                                                                                                                                                                                                            ]
                                                                                                                                                                                                                        ]
                                                                                                                                                                                                                    ]
                                                                                                                                                                                                                ]
                                                                                                                                                                                                            ]
                                                                                                                                                                                                        ]
                                                                                                                                                                                                    ]
                                                                                                                                                                                                ]
                                                                                                                                                                                            ]
                                                                                                                                                                                        ]
                                                                                                                                                                                    ]
                                                                                                                                                                                ]
                                                                                                                                                                            ]
                                                                                                                                                                        ]
                                                                                                                                                                    ]
                                                                                                                                                                ]
                                                                                                                                                            ]
                                                                                                                                                        ]
                                                                                                                                                    ]
                                                                                                                                                ]
                                                                                                                                            ]
                                                                                                                                        ]
                                                                                                                                    ]
                                                                                                                                ]
                                                                                                                            ]
                                                                                                                        ]
                                                                                                                    ]
                                                                                                                ]
                                                                                                            ]
                                                                                                        ]
                                                                                                    ]
                                                                                                ]
                                                                                            ]
                                                                                        ]
                                                                                    ]
                                                                                ]
                                                                            ]
                                                                        ]
                                                                    ]
                                                                ]
                                                            ]
                                                        ]
                                                    ]
                                                ]
                                            ]
                                        ]
                                    ]
                                ]
                            ]
                        ]
                    ]
                ],
            },
        ),
        ("lcm_grep", '{"pattern": "release", "since": 1e400}'),
        ("lcm_grep", {"pattern": "release", "until": float("nan")}),
        ("lcm_grep", {"pattern": "a{30000000}", "mode": "regex"}),
        ("lcm_expand", {"id": "msg_1", "max_tokens": "--5"}),
    ],
    ids=range(9),
)
def test_hostile_tool_calls_answer_json_and_never_quarantine(lcm_session, name, args):
    out = json.loads(lcm_session.call_engine_tool(name, args))
    assert "error" in out and "failed" not in out["error"], out
    assert (
        json.loads(lcm_session.call_engine_tool("lcm_grep", {"pattern": "release"}))["count"] == 1
    )

"""The CLI against a real server: migrate, doctor, export/import round trips, bad URLs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxengine_host.runtime.host import ContextHost

from .fixtures import fresh_schema_url, pg_connect
from .worker import run_turn

CLI = [sys.executable, "-m", "ctxengine_host.cli"]


def ctxengine(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def write_config(directory: Path, store: str, lcm: str) -> Path:
    path = directory / "ctxengine.toml"
    path.write_text(
        '[context]\nengine = "lcm"\nreserve_output_tokens = 256\n'
        f'[store]\n{"url" if "://" in store else "path"} = "{store}"\n'
        f'[engines.lcm]\ndatabase = "{lcm}"\nfresh_tail_messages = 4\n'
        "leaf_chunk_tokens = 600\nleaf_target_tokens = 64\ncondensed_target_tokens = 80\n",
        encoding="utf-8",
    )
    return path


def populate(config: Path, sessions: list[str], turns: int = 8) -> None:
    with ContextHost.from_config(config, model="gpt-4", context_length=2048) as host:
        for sid in sessions:
            with host.open_session(sid, system_prompt=f"system of {sid}") as session:
                for turn in range(turns):
                    run_turn(host, session, turn, None)


def normalized(archive: Path) -> list[dict]:
    """Archive records with store-assigned ids replaced by positions."""
    out = []
    for line in archive.read_text(encoding="utf-8").splitlines()[1:]:
        record = json.loads(line)
        for history in record["engines"].values():
            for conv in history["conversations"]:
                ids = {m["id"]: n for n, m in enumerate(conv["messages"])}
                sids = {s["id"]: n for n, s in enumerate(conv["summaries"])}
                for m in conv["messages"]:
                    m["id"] = ids[m["id"]]
                for s in conv["summaries"]:
                    table = ids if s["kind"] == "leaf" else sids
                    s["sources"] = [table[x] for x in s["sources"]]
                    s["id"] = sids[s["id"]]
                for item in conv["context"]:
                    table = ids if item["kind"] == "message" else sids
                    item["ref_id"] = table[item["ref_id"]]
                    item.pop("ordinal")
        out.append(record)
    return out


def test_migrate_creates_then_reports_current_and_doctor_shows_it(pg_database, tmp_path):
    url = fresh_schema_url(pg_database, migrate=False)
    write_config(tmp_path, url, url)
    check = ctxengine("migrate", "--check", "--json", cwd=tmp_path)
    assert check.returncode == 1
    state = json.loads(check.stdout)["databases"][0]
    assert set(state["behind"]) == {"transcripts", "quarantine", "lcm"}
    done = ctxengine("migrate", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["databases"][0]
    assert report["behind"] == [] and report["server_version"].startswith("15")
    again = ctxengine("migrate", cwd=tmp_path)
    assert again.returncode == 0 and "version 1/1  ok" in again.stdout
    doctor = ctxengine("doctor", "--json", cwd=tmp_path)
    storage = json.loads(doctor.stdout)["storage"]
    assert storage["transcripts"]["backend"] == "postgresql"
    from ctxengine_lcm.pg_store import LCM_SCHEMA

    latest = LCM_SCHEMA.latest
    assert storage["lcm"]["schema"]["lcm"] == {"applied": latest, "latest": latest, "current": True}
    assert json.loads(doctor.stdout)["quarantine"]["path"].startswith("postgresql://")


def test_doctor_names_a_schema_that_is_behind(pg_database, tmp_path):
    url = fresh_schema_url(pg_database, migrate=False)
    write_config(tmp_path, url, url)
    doctor = ctxengine("doctor", cwd=tmp_path)
    assert doctor.returncode == 1
    assert "schema behind" in doctor.stderr and "ctxengine migrate" in doctor.stderr  # problems


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("postgresql://127.0.0.1:5432", "names no database"),
        ("postgresql://127.0.0.1:99999/db", "port"),
        ("postgresql://127.0.0.1/db?bogus_option=1", "bogus_option"),
        ("postgresql://127.0.0.1/db?schema=1bad-name", "schema"),
        ("postgresql://127.0.0.1:1/db", "cannot connect"),
    ],
)
def test_bad_urls_are_refused_with_the_part_that_is_wrong(tmp_path, url, fragment):
    result = ctxengine("migrate", "--url", url, cwd=tmp_path)
    assert result.returncode in (1, 2)
    assert fragment in result.stderr.lower() and "Traceback" not in result.stderr


def test_export_sqlite_import_postgres_and_back_round_trips(pg_url, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    config = write_config(source, str(source / "t.db"), str(source / "lcm.db"))
    populate(config, ["alpha", "beta", "gamma"])
    first = tmp_path / "first.jsonl"
    out = ctxengine("export", str(first), cwd=source)
    assert out.returncode == 0, out.stderr
    assert "3 sessions" in out.stdout

    up = ctxengine("import", str(first), "--store", pg_url, "--engine-db", f"lcm={pg_url}",
                   "--json", cwd=source)  # fmt: skip
    assert up.returncode == 0, up.stderr
    imported = json.loads(up.stdout)
    assert imported["imported"]["sessions"] == 3 and imported["problems"] == []
    assert imported["imported"]["lcm_summaries"] > 0, "no compaction: weak round trip"

    second = tmp_path / "second.jsonl"
    out = ctxengine("export", str(second), "--store", pg_url, "--engine-db", f"lcm={pg_url}",
                    cwd=source)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert normalized(second) == normalized(first)

    back = tmp_path / "back"
    back.mkdir()
    down = ctxengine("import", str(second), "--store", str(back / "t.db"),
                     "--engine-db", f"lcm={back / 'lcm.db'}", cwd=back)  # fmt: skip
    assert down.returncode == 0 and "verified" in down.stdout, down.stdout + down.stderr
    third = tmp_path / "third.jsonl"
    ctxengine("export", str(third), "--store", str(back / "t.db"),
              "--engine-db", f"lcm={back / 'lcm.db'}", cwd=back)  # fmt: skip
    assert normalized(third) == normalized(first)
    # Each archive names its source store; an import files the LCM history under the
    # target store's id, never the source's (a copy never shares history with its original).
    ids = [json.loads(a.read_text().splitlines()[0])["store_id"] for a in (first, second, third)]
    assert len(set(ids)) == 3
    with pg_connect(pg_url) as conn:
        keys = {r[0] for r in conn.execute("SELECT session_id FROM lcm_conversations")}
    assert keys == {f"store:{ids[1]}#{sid}" for sid in ("alpha", "beta", "gamma")}

    again = ctxengine("import", str(first), "--store", pg_url, "--engine-db", f"lcm={pg_url}",
                      cwd=source)  # fmt: skip
    assert again.returncode == 0 and "skipped (already in the target)" in again.stdout


def test_a_truncated_archive_is_refused(tmp_path, pg_url):
    archive = tmp_path / "a.jsonl"
    archive.write_text('{"format": "ctxengine-archive", "version": 1, "sessions": 2}\n')
    result = ctxengine("import", str(archive), "--store", pg_url, cwd=tmp_path)
    assert result.returncode == 2 and "truncated" in result.stderr


def _first_lcm(record: dict) -> dict:
    return record["engines"]["lcm"]["conversations"][0]


def _long_uid(record: dict) -> None:
    """A uid too long for PostgreSQL's index (random: a repeated letter compresses)."""
    old = record["rows"][0]["message"]["message_uid"]
    new = os.urandom(2500).hex()
    record["rows"][0]["message"]["message_uid"] = new
    for message in _first_lcm(record)["messages"]:
        if message["message_uid"] == old:
            message["message_uid"] = new


def _summary_off_its_run(record: dict) -> None:
    summary = next(s for s in _first_lcm(record)["summaries"] if len(s["sources"]) > 1)
    summary["sources"].reverse()


#: Damage an archive's first session record: each worked on one backend and failed on
#: the other with a traceback, or failed halfway, leaving the session's row behind.
ARCHIVE_DAMAGE = {
    "a uid too long": _long_uid,
    "half a character in a row": lambda r: r["rows"][0]["message"].update(content="x \ud83d"),
    "NUL in the session id": lambda r: r.update(session_id="alpha\x00"),
    "half a character in the system prompt": lambda r: r["session"].update(
        system_prompt="be brief \ud83d"
    ),
    "an lcm uid too long": lambda r: _first_lcm(r)["messages"][0].update(message_uid="u" * 300),
    "an lcm field of another type": lambda r: _first_lcm(r)["messages"][0].update(
        token_count="six"
    ),
    "an lcm summary off its run": _summary_off_its_run,
}


@pytest.fixture(scope="module")
def lcm_archive(tmp_path_factory) -> Path:
    """A real archive of one session with LCM summaries (exported from SQLite)."""
    source = tmp_path_factory.mktemp("archive-source")
    config = write_config(source, str(source / "t.db"), str(source / "lcm.db"))
    populate(config, ["alpha"])
    archive = source / "alpha.jsonl"
    out = ctxengine("export", str(archive), cwd=source)
    assert out.returncode == 0, out.stderr
    assert json.loads(archive.read_text().splitlines()[1])["engines"]["lcm"]["conversations"]
    return archive


@pytest.mark.parametrize("target", ["sqlite", "postgresql"])
@pytest.mark.parametrize("damage", list(ARCHIVE_DAMAGE))
def test_a_damaged_archive_is_refused_before_anything_is_written(
    lcm_archive, pg_url, tmp_path, damage, target
):
    """Every record, the engines' histories included, is checked by the rules the live
    path applies on every backend before the first write: a clear error naming the
    record, and neither store holds anything of it."""
    header, line = lcm_archive.read_text().splitlines()
    record = json.loads(line)
    ARCHIVE_DAMAGE[damage](record)
    archive = tmp_path / "damaged.jsonl"
    archive.write_text(header + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    store, lcm = (
        (pg_url, pg_url) if target == "postgresql" else (tmp_path / "t.db", tmp_path / "lcm.db")
    )
    done = ctxengine(
        "import", str(archive), "--store", str(store), "--engine-db", f"lcm={lcm}", cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "session record 1" in done.stderr and "Traceback" not in done.stderr, done.stderr
    if target == "postgresql":
        with pg_connect(pg_url) as conn:
            for table in ("transcript_sessions", "lcm_conversations", "lcm_messages"):
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
    else:
        assert not Path(store).exists() and not Path(lcm).exists()

"""Plugins-directory engines for the process-isolation tests, written to a temp directory.

``stuck`` blocks in C *holding the GIL* when a message asks it to: ``STUCK <s>``
sleeps through ``ctypes.PyDLL`` (a foreign call that keeps the GIL), ``REGEX``
runs a catastrophically backtracking ``re.match``, ``EXIT`` ends the process.
Its ``compress`` summarizes through the host's summarizer, its tool reports the
process it runs in, and it keeps a SQLite file of its own under its data directory;
``should_compress_preflight`` and ``maintain`` note what they were given (and
``maintain`` takes 2 s after a ``SLOW`` message). ``background`` is the same
engine with ``turn_maintenance_mode = "background"``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

STUCK_ENGINE = textwrap.dedent(
    """
    import ctypes
    import json
    import os
    import re
    import sqlite3
    import time

    from ctxengine_host.contract.engine import ContextEngine


    def hold_the_gil(seconds):
        ctypes.PyDLL(None).usleep(int(seconds * 1_000_000))


    class StuckEngine(ContextEngine):
        name = "stuck"
        version = "1.0"

        def __init__(self, config=None, context=None):
            super().__init__(config, context)
            self.ingested = 0
            self.transcript_seen = None
            self.preflight_seen = None
            self.rolled_back = []
            self._db = None

        def db(self):
            if self._db is None:
                self.context.data_dir.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.context.data_dir / "stuck.db")
                self._db.execute("CREATE TABLE IF NOT EXISTS seen (session TEXT, text TEXT)")
            return self._db

        def clone_for_agent(self):
            return StuckEngine(self.config, self.context)

        def update_from_response(self, usage):
            self.last_prompt_tokens = usage.get("prompt_tokens", 0)

        def should_compress(self, prompt_tokens=None):
            return False

        def ingest(self, session_id, messages):
            for message in messages:
                text = str(message.get("content") or "")
                if text.startswith("STUCK "):
                    hold_the_gil(float(text.split()[1]))
                if text == "EXIT":
                    os._exit(3)
                if text == "REGEX":
                    re.match(r"(a+)+$", "a" * 64 + "!")
                self.db().execute("INSERT INTO seen VALUES (?, ?)", (session_id, text))
            self.db().commit()
            self.ingested += len(messages)
            return None

        def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
            body = [m for m in messages if m.get("role") != "system"]
            summary = self.context.summarize(body[:-1], 40)
            self.compression_count += 1
            note = {"role": "user", "content": "Summary: " + summary.text}
            return [m for m in messages if m.get("role") == "system"] + [note, body[-1]]

        def should_compress_preflight(self, messages):
            whole = list(messages) == messages[:]
            self.preflight_seen = [len(messages), messages[-1]["content"], whole]
            return False

        def maintain(self, session_id, runtime_settings, transcript):
            messages = transcript.messages()
            self.transcript_seen = (len(messages), len(transcript.rows()))
            if any(m.get("content") == "SLOW" for m in messages[-2:]):
                time.sleep(2.0)

        def prepare_subagent_spawn(
            self, parent_session_id, child_session_id, context_mode="isolated", ttl_s=None
        ):
            def rollback():
                self.rolled_back.append(child_session_id)
            return rollback

        def get_tool_schemas(self):
            return [{"name": "where", "description": "where the engine runs",
                     "parameters": {"type": "object", "properties": {}}}]

        def handle_tool_call(self, name, args, **kwargs):
            rows = self.db().execute("SELECT COUNT(*) FROM seen").fetchone()[0]
            return json.dumps({"pid": os.getpid(), "ingested": self.ingested, "rows": rows,
                               "transcript": self.transcript_seen,
                               "preflight": self.preflight_seen,
                               "rolled_back": self.rolled_back,
                               "tokens": self.context.count_tokens("hello world")})

        def dispose(self):
            if self._db is not None:
                self._db.close()
    """
)


#: The same engine with ``maintain`` on a background thread of the host.
BACKGROUND_ENGINE = STUCK_ENGINE.replace('name = "stuck"', 'name = "background"').replace(
    'version = "1.0"', 'version = "1.0"\n    turn_maintenance_mode = "background"'
)


def write_stuck_engine(plugins_dir: Path) -> Path:
    for name, source in (("stuck", STUCK_ENGINE), ("background", BACKGROUND_ENGINE)):
        directory = plugins_dir / name
        directory.mkdir(parents=True)
        (directory / "plugin.toml").write_text(f'name = "{name}"\n')
        (directory / "__init__.py").write_text(source)
    return plugins_dir / "stuck"

"""The real gateway (openclaw from npm) runs agent turns with our plugin in its slot.

Needs ``bash scripts/gateway-env.sh`` (node 24, openclaw, the plugin built); skipped
locally without it, failed under CI. Every process runs under the network guards
(Python's sitecustomize, node's ``--require`` preload): nothing may leave 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from support.frameworks import REPO, framework_python
from support.network import NETGUARD_DIR, assert_no_escape, guarded_env

from .client import StdioClient

PLUGIN_SRC = REPO / "integrations" / "openclaw"
SCRIPTED = Path(__file__).with_name("scripted_openai.py")
TOOL_ROUNDS = 6
#: Each tool call reads a note of about this many tokens: the turn outgrows the window.
NOTE_TOKENS = 2000
#: The window the gateway is told for the scripted model: small, so our engines compact.
CONTEXT_WINDOW = 32_000
#: Our engines' settings for a short turn: a short protected tail, small LCM chunks.
CTXENGINE_TOML = """
[engines.lcm]
fresh_tail_messages = 4
leaf_chunk_tokens = 256
[engines.legacy]
protect_first_n = 1
tail_min_messages = 2
"""


class Gateway:
    """One gateway state directory with our plugin installed, and a scripted model."""

    def __init__(self, root: Path, env_dir: Path, python: Path) -> None:
        self.root = root
        self.env_dir = env_dir
        self.python = python
        self.node = env_dir / "node-bin" / "node"
        self.openclaw = env_dir / "plugin-build" / "node_modules" / "openclaw" / "openclaw.mjs"
        self.requests = root / "requests.jsonl"
        self.config_path = root / "openclaw.json"
        (root / "home").mkdir()
        (root / "state" / "workspace").mkdir(parents=True)
        for number in range(1, 4 * (TOOL_ROUNDS + 1)):  # the model reads notes-<request>.txt
            words = " ".join(f"fact{number}-{k} is stored here." for k in range(NOTE_TOKENS // 6))
            (root / "state" / "workspace" / f"notes-{number}.txt").write_text(words)
        self.env = guarded_env(root)
        self.env.update(
            HOME=str(root / "home"),
            PATH=f"{self.node.parent}{os.pathsep}{self.env['PATH']}",
            NODE_OPTIONS=f"--require {NETGUARD_DIR / 'node-guard.cjs'}",
            OPENCLAW_STATE_DIR=str(root / "state"),
            OPENCLAW_CONFIG_PATH=str(self.config_path),
            OPENCLAW_NO_AUTO_UPDATE="1",
            OPENCLAW_SKIP_CHANNELS="1",
            OPENCLAW_DISABLE_BONJOUR="1",
            OPENCLAW_SKIP_CRON="1",
            CTXENGINE_DATA_DIR=str(root / "ctxengine-data"),
        )
        self.model_server: subprocess.Popen[str] | None = None
        self.ctxengine_config = root / "ctxengine.toml"
        self.ctxengine_config.write_text(CTXENGINE_TOML)

    def start_model(self, kill_on: int | None = None) -> None:
        self.stop_model()
        command = [str(self.python), str(SCRIPTED), str(self.requests), str(TOOL_ROUNDS)]
        if kill_on is not None:
            command += ["--kill-on", str(kill_on), str(self.root)]
        self.model_server = subprocess.Popen(
            command, stdout=subprocess.PIPE, text=True, env=self.env
        )
        assert self.model_server.stdout
        port = int(self.model_server.stdout.readline())
        self._write_config(port)

    def stop_model(self) -> None:
        if self.model_server is not None:
            self.model_server.kill()
            self.model_server.wait(10)
            self.model_server = None

    def _write_config(self, port: int) -> None:
        config = json.loads(self.config_path.read_text()) if self.config_path.exists() else {}
        config.update(
            update={"checkOnStart": False},
            telemetry={"enabled": False},
            agents={"defaults": {"model": {"primary": "scripted/scripted"}}},
        )
        model = {
            "id": "scripted",
            "name": "Scripted",
            "reasoning": False,
            "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": CONTEXT_WINDOW,
            "maxTokens": 1024,
        }
        config["models"] = {
            "mode": "replace",
            "providers": {
                "scripted": {
                    "baseUrl": f"http://127.0.0.1:{port}/v1",
                    "apiKey": "test-key-not-secret",
                    "api": "openai-completions",
                    "models": [model],
                }
            },
        }
        self.config_path.write_text(json.dumps(config, indent=2))

    def use_engine(self, engine: str) -> Path:
        """Point the plugin at ``engine``, with a store of its own; returns the store path."""
        store = self.root / f"transcripts-{engine}.sqlite"
        config = json.loads(self.config_path.read_text())
        entry = (
            config.setdefault("plugins", {})
            .setdefault("entries", {})
            .setdefault("ctxengine", {"enabled": True})
        )
        entry["config"] = {
            "command": [str(self.env_dir / "bin" / "ctxengine"), "serve"],
            "engine": engine,
            "args": ["--store", str(store), "--context-length", str(CONTEXT_WINDOW)],
            "env": {"CTXENGINE_CONFIG": str(self.ctxengine_config)},
        }
        self.config_path.write_text(json.dumps(config, indent=2))
        return store

    def run(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.node), str(self.openclaw), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            cwd=self.root,
        )

    def agent(self, session_id: str, message: str) -> subprocess.CompletedProcess[str]:
        return self.run("agent", "--local", "--session-id", session_id, "--message", message)

    def requests_log(self) -> list[dict]:
        if not self.requests.exists():
            return []
        return [json.loads(line) for line in self.requests.read_text().splitlines()]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    python = framework_python("gateway")  # skips locally / fails under CI when absent
    env_dir = python.parent.parent
    stage = env_dir / "plugin"
    message = f"{stage} not built: run bash scripts/gateway-env.sh"
    if not (stage / "dist" / "index.js").exists():
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    gw = Gateway(tmp_path_factory.mktemp("gateway"), env_dir, python)
    gw.start_model()
    installed = gw.run("plugins", "install", "-l", str(stage), "--force", "--accept-capabilities")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Linked plugin path" in installed.stdout + installed.stderr
    yield gw
    gw.stop_model()
    assert_no_escape(gw.env)


def _committed_turns(store: Path, session_id: str) -> list[dict]:
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT body FROM messages WHERE session_id = ? ORDER BY row_id", (session_id,)
        ).fetchall()
    return [json.loads(body) for (body,) in rows]


def test_the_plugin_type_checks_against_the_gateways_declarations(gateway):
    build = gateway.env_dir / "plugin-build"
    for name in ("tsconfig.json", "package.json", "openclaw.plugin.json"):
        shutil.copy(PLUGIN_SRC / name, build / name)
    shutil.rmtree(build / "src")
    shutil.copytree(PLUGIN_SRC / "src", build / "src")
    checked = subprocess.run(
        [str(gateway.node), "node_modules/typescript/bin/tsc", "-p", "tsconfig.json",
         "--incremental", "--tsBuildInfoFile", ".tsbuildinfo"],
        cwd=build, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    options = json.loads((PLUGIN_SRC / "tsconfig.json").read_text())["compilerOptions"]
    assert options["strict"] is True and options.get("skipLibCheck") is False
    for source in (PLUGIN_SRC / "src").glob("*.ts"):
        code = source.read_text()
        assert not re.search(r"(:\s*any\b|\bas any\b|<any>)", code), f"`any` in {source.name}"


def test_the_gateway_reports_our_engine_in_its_slot(gateway):
    gateway.use_engine("lcm")
    inspected = gateway.run("plugins", "inspect", "ctxengine", "--runtime", "--json")
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    assert report["plugin"]["status"] == "loaded"
    assert report["plugin"]["contextEngineIds"] == ["ctxengine"]
    assert report["plugin"]["activationReason"] == "selected context engine slot"
    config = json.loads(gateway.config_path.read_text())
    assert config["plugins"]["slots"]["contextEngine"] == "ctxengine"


@pytest.mark.parametrize("engine", ["lcm", "legacy"])
def test_gateway_turns_run_through_our_engine(gateway, engine):
    """Two turns of the real gateway: assemble, tool loop, commitTurn, our compaction.

    The lcm run also kills ``ctxengine serve`` mid-turn: the plugin restarts it and
    retries, so the turn completes with our engine (no fallback to the gateway's own).
    """
    kill = engine == "lcm"
    gateway.start_model(kill_on=2 if kill else None)
    store = gateway.use_engine(engine)
    session = f"e2e-{engine}"
    before = len(gateway.requests_log())
    done = gateway.agent(session, "Read the notes, then answer.")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "Reply" in done.stdout
    assert 'degraded to "legacy"' not in output
    requests = gateway.requests_log()[before:]
    assert len(requests) == TOOL_ROUNDS + 1  # the tool loop, then the answer
    if kill:
        # Killed while the gateway waited for the model; the turn is committed below by
        # a server the plugin started again ("restarting it and retrying" on stderr when
        # the call that met the dead server was the plugin's own).
        assert any(r["killed"] for r in requests), "the server was not killed"
    # A second turn: the history outgrows our engine's threshold again while it is
    # committed (compaction also runs inside each turn's tool loop).
    gateway.start_model()
    again = gateway.agent(session, "Once more, please.")
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    turns = 2
    rows = _committed_turns(store, session)  # every version of every message
    originals = {r["gateway_ref"]: r for r in rows if "gateway_ref" in r}
    roles = [originals[ref]["role"] for ref in sorted(originals)]
    assert roles.count("tool") == TOOL_ROUNDS * turns and roles[0] == "user"
    assert len({r["gateway_turn"] for r in rows if r.get("gateway_turn")}) == turns
    # What our engine made of it, as the next turn's assemble will see it.
    data = gateway.root / "ctxengine-data"
    client = StdioClient(
        gateway.root, engine, "--store", str(store), "--data-dir", str(data),
        "--config", str(gateway.ctxengine_config), "--context-length", "400000",
    )  # fmt: skip
    try:  # a budget this large compacts nothing now: what we see is what the turn left
        assembled = client.call(
            "assemble", sessionId=session, historyCount=len(originals), tokenBudget=390_000
        )
        status = client.call("status", sessionId=session)
    finally:
        client.close()
    assert status["seen"] == len(originals)
    assert assembled["messages"][-1]["role"] == "assistant"
    # The tool outputs (~NOTE_TOKENS each) outgrew the gateway's budget: our engine
    # compacted while the turn was committed.
    stored_tokens = turns * TOOL_ROUNDS * NOTE_TOKENS
    assert assembled["estimatedTokens"] < 0.75 * stored_tokens, assembled["estimatedTokens"]
    if engine == "lcm":
        assert status["engine_status"]["context_summaries_by_depth"], status

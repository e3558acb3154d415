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
import signal
import socket
import sqlite3
import stat
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from support.frameworks import REPO, framework_python
from support.network import NETGUARD_DIR, assert_no_escape, guarded_env

from .client import StdioClient

PLUGIN_SRC = REPO / "integrations" / "openclaw"
SCRIPTED = Path(__file__).with_name("scripted_openai.py")
#: ``chat_server.py``, the HTTP side of the scripted model.
SUPPORT = REPO / "tests" / "support"
ENGINES = Path(__file__).with_name("engines")
TOOL_ROUNDS = 6
#: Each tool call reads a note of about this many tokens: the turn outgrows the window.
NOTE_TOKENS = 2000
#: The window the gateway is told for the scripted model: small, so our engines compact.
CONTEXT_WINDOW = 32_000
#: A fact told in the first turn; the second turn's lcm_grep must find it.
FACT = "the launch code is ZEBRA4417"
#: Our engines' settings for a short turn: a short protected tail, small LCM chunks.
CTXENGINE_TOML = """
[engines.lcm]
fresh_tail_messages = 4
leaf_chunk_tokens = 256
[engines.legacy]
protect_first_n = 1
tail_min_messages = 2
"""


class Serve:
    """A ``ctxengine serve`` the test started; stopped (and its exit checked) by ``stop``."""

    def __init__(self, process: subprocess.Popen[str], store: Path) -> None:
        self.process = process
        self.store = store

    def stop(self) -> str:
        self.process.send_signal(signal.SIGINT)
        try:
            _, stderr = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
        return stderr


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

    def start_model(self, kill_on: int | None = None, rounds: int = TOOL_ROUNDS) -> None:
        self.stop_model()
        command = [str(self.python), str(SCRIPTED), str(self.requests), str(rounds)]
        if kill_on is not None:
            command += ["--kill-on", str(kill_on), str(self.root)]
        env = {**self.env, "PYTHONPATH": os.pathsep.join([str(SUPPORT), self.env["PYTHONPATH"]])}
        self.model_server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
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

    def install_plugin(self) -> None:
        """``openclaw plugins install -l`` of the staged plugin: it links and selects it."""
        stage = self.env_dir / "plugin"
        installed = self.run(
            "plugins", "install", "-l", str(stage), "--force", "--accept-capabilities"
        )
        assert installed.returncode == 0, installed.stdout + installed.stderr
        assert "Linked plugin path" in installed.stdout + installed.stderr

    def another(self, root: Path) -> Gateway:
        """A second gateway (its own state: one state has one owner process), same config."""
        other = Gateway(root, self.env_dir, self.python)
        other.config_path.write_text(self.config_path.read_text())
        other.install_plugin()
        return other

    def connect_to(self, connect: dict[str, str]) -> None:
        """Point the plugin at a running ``ctxengine serve`` (it starts none)."""
        config = json.loads(self.config_path.read_text())
        config["plugins"]["entries"]["ctxengine"]["config"] = {"connect": connect}
        self.config_path.write_text(json.dumps(config, indent=2))

    def serve(self, engine: str, *where: str, env: dict[str, str] | None = None) -> Serve:
        """``ctxengine serve`` started by the test (as an operator would), not by the plugin."""
        store = self.root / f"shared-{engine}.sqlite"
        command = [
            str(self.env_dir / "bin" / "ctxengine"), "serve", *where, "--engine", engine,
            "--store", str(store), "--context-length", str(CONTEXT_WINDOW),
            "--config", str(self.ctxengine_config),
        ]  # fmt: skip
        process = subprocess.Popen(
            command, stderr=subprocess.PIPE, text=True, env={**self.env, **(env or {})}
        )
        return Serve(process, store)

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

    def agent_process(self, session_id: str, message: str) -> subprocess.Popen[str]:
        """An agent run in the background (several gateway processes at once)."""
        return subprocess.Popen(
            [str(self.node), str(self.openclaw), "agent", "--local", "--session-id", session_id,
             "--message", message],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, cwd=self.root,
        )  # fmt: skip

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
    gw.install_plugin()
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
    done = gateway.agent(session, f"Read the notes, then answer. Remember: {FACT}.")
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
    before = len(gateway.requests_log())
    # The model's first call this turn is our engine's lcm_grep (when it is offered).
    again = gateway.agent(session, f"Once more, please. lcm_grep:{FACT.split()[-1]}")
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    second = gateway.requests_log()[before:]
    offered = set(second[0]["tools"])
    if engine == "lcm":  # LCM's tools reach the gateway's model ...
        assert {"lcm_grep", "lcm_describe", "lcm_expand"} <= offered, offered
        # ... and lcm_grep, run by our engine through the server, found the first turn's fact
        # (the current turn is not committed yet: the hit is history).
        results = [m for r in second for m in r["messages"] if m.get("role") == "tool"]
        assert any(FACT in json.dumps(m["content"]) for m in results), results[:1]
    else:
        assert not offered & {"lcm_grep", "lcm_describe", "lcm_expand"}
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


def _wait_for_socket(path: Path, serve: Serve) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert serve.process.poll() is None, serve.stop()
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(path))
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"ctxengine serve did not listen on {path}: {serve.stop()}")


def _rpc_over_socket(path: Path, method: str, **params: object) -> dict:
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(path))
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        client.sendall(json.dumps(request).encode() + b"\n")
        return json.loads(client.makefile("rb").readline())


def test_two_gateway_processes_share_one_server_over_the_socket(gateway, tmp_path):
    """Two gateway processes at once, each connected to one ``ctxengine serve --socket``."""
    gateway.start_model(rounds=1)
    gateway.use_engine("lcm")
    directory = gateway.root / "run"
    directory.mkdir(mode=0o700)
    path = directory / "bridge.sock"
    maintained = gateway.root / "maintain.log"
    serve = gateway.serve(
        "counting",  # legacy, counting its maintain runs (tests/bridge/engines)
        "--socket",
        str(path),
        env={"CTXENGINE_PLUGINS_DIR": str(ENGINES), "CTXENGINE_TEST_MAINTAIN_LOG": str(maintained)},
    )
    try:
        _wait_for_socket(path, serve)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # no other user reads a session
        gateway.connect_to({"socket": str(path)})
        second = gateway.another(tmp_path)
        runs = {
            name: gw.agent_process(f"shared-{name}", f"Hello from gateway {name}.")
            for name, gw in (("a", gateway), ("b", second))
        }
        for run in runs.values():
            stdout, stderr = run.communicate(timeout=240)
            assert run.returncode == 0, (stdout + stderr)[-4000:]
            assert "Reply" in stdout and 'degraded to "legacy"' not in stdout + stderr
            assert "retrying" not in stderr  # one server, never restarted by the plugin
        assert serve.process.poll() is None
        runs = [json.loads(line) for line in maintained.read_text().splitlines()]
        for name in ("a", "b"):  # both turns are in the one server, each in its own session
            status = _rpc_over_socket(path, "status", sessionId=f"shared-{name}")["result"]
            assert status["seen"] >= 3 and status["engine"] == "counting", status
            # maintain ran once per call of the gateway's (after the turn, and after
            # bootstrap), never again at our turn end.
            mine = [r["gateway"] for r in runs if r["session"] == f"shared-{name}"]
            assert mine == [True] * status["maintainCalls"] and mine, (mine, status)
    finally:
        stderr = serve.stop()
    assert "Traceback" not in stderr, stderr[-4000:]
    stored = {row["gateway_ref"] for row in _committed_turns(serve.store, "shared-b")}
    assert len(stored) >= 3
    assert_no_escape(second.env)


def _http_status(port: int, token: str) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/", body, {"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())["result"]


def test_http_needs_the_right_token(gateway):
    """``connect: {http, tokenFile}``: a wrong token is refused, the right one works."""
    gateway.start_model(rounds=1)
    gateway.use_engine("lcm")
    token = "right-token-" + "x" * 20
    serve = gateway.serve("lcm", "--http", "127.0.0.1:0", env={"CTXENGINE_BRIDGE_TOKEN": token})
    try:
        assert serve.process.stderr
        line = serve.process.stderr.readline()
        port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))  # type: ignore[union-attr]
        token_file = gateway.root / "token"
        token_file.write_text("wrong-token-" + "y" * 20)
        token_file.chmod(0o600)
        gateway.connect_to({"http": f"127.0.0.1:{port}", "tokenFile": str(token_file)})
        refused = gateway.agent("http-refused", "Hello over HTTP.")
        output = refused.stdout + refused.stderr
        assert "refused the HTTP token" in output, output[-4000:]
        assert _http_status(port, token)["sessions"] == 0  # nothing reached a session
        token_file.write_text(token)
        done = gateway.agent("http-ok", "Hello over HTTP.")
        output = done.stdout + done.stderr
        assert done.returncode == 0 and "Reply" in done.stdout, output[-4000:]
        assert 'degraded to "legacy"' not in output
        assert _http_status(port, token)["sessions"] == 1
        token_file.chmod(0o644)  # a token file others can read is refused
        exposed = gateway.agent("http-exposed", "Hello over HTTP.")
        assert "is open to other users" in exposed.stdout + exposed.stderr
    finally:
        serve.stop()

"""Cost of the gateway bridge per lifecycle call: ``ctxengine serve`` on stdio vs in process.

One session holds ~32k tokens of history (the legacy engine, a window large enough
that nothing compacts). Each round makes the same calls both ways, interleaved:

* ``assemble``: in process ``Session.build_request()``; over the bridge the JSON-RPC
  ``assemble`` (no history sent; the ~32k-token context comes back in the gateway's
  shape, unchanged messages as ``{"$ref": n}`` that the client resolves from what it
  sent, as the plugin does; ``--no-refs`` sends every message back in full);
* ``afterTurn``: a user message and a reply committed, then the turn ends; in
  process ``add_messages`` + ``record_response`` + ``finish_turn``;
* ``info``: a bare round trip.

The overhead of a call is the bridge's p50 minus the in-process p50. Target
(issue 20): at most 1 ms per lifecycle call at p50. The client here is Python; the
gateway plugin does the same JSON work in node.

    .venv/bin/python benchmarks/bench_bridge.py [--rounds 200] [--tokens 32000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ctxengine_host.gateway_bridge.shapes import to_openai
from ctxengine_host.runtime.host import ContextHost

TARGET_MS = 1.0
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def user(i: int, words: int) -> dict[str, Any]:
    text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(words))
    return {"role": "user", "content": f"q{i} {text}", "timestamp": i}


def assistant(i: int, words: int) -> dict[str, Any]:
    text = " ".join(WORDS[(i * 3 + k) % len(WORDS)] for k in range(words))
    usage = {
        "input": 100,
        "output": 20,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 120,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": f"a{i} {text}"}],
        "api": "openai-completions",
        "provider": "bench",
        "model": "m",
        "usage": usage,
        "stopReason": "stop",
        "timestamp": i,
    }


def history(tokens: int) -> list[dict[str, Any]]:
    """Turns of ~160 tokens each until ~``tokens``."""
    return [m for i in range(max(1, tokens // 160)) for m in (user(i, 70), assistant(i, 70))]


class Server:
    def __init__(self, tmp: Path) -> None:
        exe = Path(sys.executable).with_name("ctxengine")
        self.process = subprocess.Popen(
            [
                str(exe),
                "serve",
                "--engine",
                "legacy",
                "--store",
                str(tmp / "bridge.sqlite"),
                "--data-dir",
                str(tmp / "data"),
                "--context-length",
                "400000",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any]) -> Any:
        assert self.process.stdin and self.process.stdout
        self.next_id += 1
        line = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params},
            separators=(",", ":"),
        )
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["result"]

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(30)


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=32_000)
    parser.add_argument("--no-refs", action="store_true", help="full messages back")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    seed = history(args.tokens)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        host = ContextHost(
            "legacy",
            store_path=tmp / "inproc.sqlite",
            data_dir=tmp / "d",
            context_length=400_000,
            observers=[],
        )
        session = host.open_session("inproc")
        session.add_messages([to_openai(m, i) for i, m in enumerate(seed)])
        server = Server(tmp)
        server.call("initialize", {"protocolVersion": "1.0"})
        server.call(
            "afterTurn", {"sessionId": "bridge", "newMessages": seed, "prePromptMessageCount": 0}
        )
        context = server.call("assemble", {"sessionId": "bridge", "historyCount": len(seed)})
        sent = list(seed)  # what the client sent, by gateway index (the plugin's refs)

        def bridge_assemble() -> list[dict[str, Any]]:
            params: dict[str, Any] = {
                "sessionId": "bridge",
                "historyCount": 0,
                "tokenBudget": 390_000,
            }
            if not args.no_refs:
                params["refRange"] = [0, len(sent)]
            result = server.call("assemble", params)
            return [sent[m["$ref"]] if "$ref" in m else m for m in result["messages"]]

        times: dict[str, list[float]] = {k: [] for k in ("assemble", "afterTurn", "info")}
        local: dict[str, list[float]] = {k: [] for k in ("assemble", "afterTurn")}
        for r in range(args.rounds):
            n = len(seed) // 2 + r
            turn = [user(n, 8), assistant(n, 8)]
            local["assemble"].append(timed(session.build_request))

            def local_turn(turn: list[dict[str, Any]] = turn) -> None:
                converted = [to_openai(m) for m in turn]
                session.add_messages(converted[:1])
                session.record_response(converted[1], None)
                session.finish_turn()

            local["afterTurn"].append(timed(local_turn))
            times["assemble"].append(timed(bridge_assemble))
            times["afterTurn"].append(
                timed(
                    lambda turn=turn: server.call(
                        "afterTurn", {"sessionId": "bridge", "newMessages": turn}
                    )
                )
            )
            sent.extend(turn)
            times["info"].append(timed(lambda: server.call("info", {})))
        server.close()
        host.close()
    p50 = {k: statistics.median(v) for k, v in times.items()}
    local_p50 = {k: statistics.median(v) for k, v in local.items()}
    overhead = {k: p50[k] - local_p50.get(k, 0.0) for k in p50}
    result = {
        "rounds": args.rounds,
        "refs": not args.no_refs,
        "context_tokens": context["estimatedTokens"],
        "context_messages": len(context["messages"]),
        "bridge_p50_ms": p50,
        "in_process_p50_ms": local_p50,
        "overhead_p50_ms": overhead,
        "target_ms": TARGET_MS,
        "ok": all(v <= TARGET_MS for v in overhead.values()),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"context: {result['context_messages']} messages, ~{result['context_tokens']} tokens")
        for name in p50:
            print(
                f"{name:10s} bridge p50 {p50[name]:7.3f} ms   in process "
                f"{local_p50.get(name, 0.0):7.3f} ms   overhead {overhead[name]:6.3f} ms"
            )
        print(
            f"target: overhead <= {TARGET_MS} ms per call at p50: "
            f"{'met' if result['ok'] else 'NOT met'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

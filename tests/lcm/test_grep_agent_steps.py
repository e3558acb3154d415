"""An lcm_grep hit in an agent's tool loop carries the steps next to it (attached.py): the
results a thought reasons about, a call's results, and the bare calls that carry its
thought on. The sessions are our own, in the shape of a shell agent's trajectory."""

from __future__ import annotations

import json

from conftest import make_engine, uid


def grep(engine, pattern: str, **args) -> dict:
    return json.loads(engine.handle_tool_call("lcm_grep", {"pattern": pattern, **args}))


def step(thought: str, command: str) -> dict:
    return {
        "role": "assistant",
        "content": thought,
        "message_uid": uid(),
        "tool_calls": [
            {
                "id": f"call_{uid()[:8]}",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
            }
        ],
    }


def output(call: dict, text: str) -> dict:
    return {
        "role": "tool",
        "tool_call_id": call["tool_calls"][0]["id"],
        "content": f"<returncode>0</returncode>\n<output>\n{text}</output>",
        "message_uid": uid(),
    }


def task(text: str) -> dict:
    return {"role": "user", "content": text, "message_uid": uid()}


def test_a_thought_carries_the_results_it_reasons_about(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    run = step("Let me print what the helper gives for three.", 'python -c "print(halve(3))"')
    react = step(
        "So it returns about 1.5 rather than exactly 1.5: a rounding artefact.",
        "grep -n halve x.py",
    )
    engine.ingest(
        "s1",
        [task("Fix the halving helper."), run, output(run, "1.4999999999999998\n"), react,
         output(react, "12:def halve(n):\n")],
    )  # fmt: skip
    hit = next(r for r in grep(engine, "rounding artefact")["results"] if r["role"] == "assistant")
    assert "1.4999999999999998" in hit["after_results"][0]["snippet"]
    assert hit["tool_results"][0]["snippet"].endswith("12:def halve(n):\n</output>")
    engine.dispose()


def test_bare_calls_after_a_hit_carry_its_thought_on(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    announce = step(
        "Now add the missing codes to the retry list in the client settings:",
        "cp client.toml client.toml.bak",
    )
    edit = step("", "sed -i 's/retry_on = \\[500\\]/retry_on = [500, 502, 503]/' client.toml")
    check = step("Let me look at the result.", "grep -n retry_on client.toml")
    engine.ingest(
        "s1",
        [task("Retry the gateway errors too."), announce, output(announce, ""), edit,
         output(edit, ""), check, output(check, "7:retry_on = [500, 502, 503]\n")],
    )  # fmt: skip
    hit = next(
        r for r in grep(engine, "missing codes")["results"] if "missing codes" in r["snippet"]
    )
    assert len(hit["then"]) == 1  # up to the next thought
    assert "[500, 502, 503]" in hit["then"][0]["snippet"]
    assert hit["then"][0]["tool_results"][0]["id"].startswith("msg_")
    engine.dispose()


def test_a_result_carries_the_step_that_acts_on_it(tmp_path, database):
    """The words of a question are in what the agent read (a helper's docstring), the
    value in what it ran next: the result hit carries the next step and its output."""
    engine = make_engine(tmp_path, database=database)
    read = step("Let me read the helper.", "sed -n '1,9p' units.py")
    docs = 'def fahr(c):\n    """Temperature in Fahrenheit from Celsius."""\n'
    run = step("So it just scales and shifts. Let me try it:", 'python -c "print(fahr(-40.1))"')
    engine.ingest(
        "s1",
        [task("Check the unit helpers."), read, output(read, docs), run,
         output(run, "-40.18000000000001\n")],
    )  # fmt: skip
    results = grep(engine, "temperature celsius helper", scope="messages")["results"]
    hit = next(r for r in results if r["role"] == "tool")
    assert "Temperature in Fahrenheit" in hit["snippet"]
    (after,) = hit["next_step"]
    assert after["snippet"].startswith("So it just scales")
    assert "-40.18000000000001" in after["tool_results"][0]["snippet"]
    engine.dispose()


def test_an_item_too_large_for_the_room_left_is_kept_without_its_steps(tmp_path, database):
    engine = make_engine(tmp_path, database=database, tool_output_max_chars=1_000)
    first = step("Build the parser module first.", "make parser")
    second = step("Now regenerate the reference pages of the parser with sphinx.", "make html")
    log = "compiling unit... ok\n" * 40
    engine.ingest("s1", [task("Build it."), first, output(first, log), second, output(second, log)])
    results = grep(engine, "parser", scope="messages")["results"]
    assert len(results) == 2
    assert "tool_results" in results[0] and "tool_results" not in results[1]
    engine.dispose()


def test_an_attached_message_is_shown_once_per_search(tmp_path, database):
    """The output between two hits follows the first and precedes the second: its text is
    shown under the first only, the second names it by id."""
    engine = make_engine(tmp_path, database=database)
    run = step("Print what the halving helper gives.", 'python -c "print(half_of(3))"')
    react = step("The halving helper is off by a rounding artefact.", "grep -n half_of x.py")
    printed = output(run, "1.4999999999999998\n")
    engine.ingest("s1", [task("Fix it."), run, printed, react, output(react, "12:def half_of")])
    results = grep(engine, "halving helper", scope="messages")["results"]
    attached = [e for r in results for k in ("tool_results", "after_results") for e in r.get(k, [])]
    shown = next(e["id"] for e in attached if "1.4999999999999998" in e.get("snippet", ""))
    of_printed = [e for e in attached if e["id"] == shown]
    assert len(of_printed) == 2 and sum("snippet" in e for e in of_printed) == 1
    assert json.dumps(results).count("1.4999999999999998") == 1
    engine.dispose()


def test_answers_without_tool_use_cost_no_look_up(tmp_path, database, monkeypatch):
    engine = make_engine(tmp_path, database=database)
    answer = {"role": "assistant", "content": "The cache holds 512 entries.", "message_uid": uid()}
    engine.ingest("s1", [task("How large is the cache?"), answer])
    looked_up: list[object] = []
    monkeypatch.setattr(engine.store, "messages_by_id", lambda ids: looked_up.append(ids) or {})
    assert grep(engine, "cache entries", scope="messages")["count"] == 2
    assert looked_up == []
    engine.dispose()

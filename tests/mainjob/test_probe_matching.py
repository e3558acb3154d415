"""Probe answers are matched against decoded text, and verbatim recovery accepts any
message that holds the answer."""

from __future__ import annotations

import json

from ctxengine_host.replay import ReplayOptions, replay_file
from ctxengine_host.replay.probes import check_probes, searchable_text
from ctxengine_host.replay.sessionfile import parse_session

ANSWER = 'Zoë "Z" Ång'
QUESTION = "Who owns the billing exporter?"


def session_lines(filler_turns: int = 30) -> list[dict]:
    note = json.dumps({"note": f"owner of the billing exporter: {ANSWER}"})  # escaped JSON
    lines: list[dict] = [
        {"role": "system", "content": "You are an operations assistant."},
        {"role": "user", "content": "Record who is responsible for the billing exporter."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "save_note", "arguments": note},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "saved"},
        {"role": "assistant", "content": f"Recorded: the billing exporter belongs to {ANSWER}."},
    ]
    for n in range(filler_turns):
        words = " ".join(f"log{n}x{i}" for i in range(120))
        lines += [
            {"role": "user", "content": f"Summarise batch {n}: {words}"},
            {"role": "assistant", "content": f"Batch {n} looks normal: {words[:300]}"},
        ]
    return lines


def test_an_escaped_answer_in_tool_arguments_is_found():
    message = session_lines(0)[2]
    assert ANSWER not in message["tool_calls"][0]["function"]["arguments"]  # JSON-escaped
    assert ANSWER in searchable_text(message)
    parsed = parse_session("".join(json.dumps(m) + "\n" for m in session_lines(0)), "s.jsonl")
    document = {
        "probes": [{"id": "p1", "question": QUESTION, "answer": ANSWER, "message_index": 2}]
    }
    probes, problems = check_probes(document, parsed)
    assert problems == [] and probes[0].turn == 1


def test_lcm_recovers_the_answer_verbatim_from_whichever_message_holds_it(tmp_path):
    path = tmp_path / "owners.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in session_lines()))
    probes = {"probes": [{"id": "p1", "question": QUESTION, "answer": ANSWER, "message_index": 2}]}
    (tmp_path / "owners.probes.json").write_text(json.dumps(probes))
    options = ReplayOptions(engine="lcm", context_length=9000, out_dir=str(tmp_path / "run"))
    report = replay_file(path, options)
    assert report.summary()["compactions"] > 0
    (probe,) = report.probes
    assert probe.search_found, probe
    assert probe.expand_verbatim, probe


def test_the_pieces_holding_an_answer_are_those_a_piece_by_piece_search_finds():
    """Pieces are searched joined (one scan per answer): an occurrence never spans two
    pieces, each holding piece is listed once, and odd answers fall back to piece by piece."""
    from ctxengine_host.replay.probing import SessionPieces

    pieces = ["ab", "", "xabx ab", "a", "b", "ab\0ab", "zz ab", "ba"]
    joined = SessionPieces(pieces)
    for answer in ["ab", "a", "b", "ba", "x", "abab", "ab\0ab", "\0", "", "zz ab", "nothing"]:
        assert joined.holding(answer) == [p for p in pieces if answer in p], answer
    assert SessionPieces([]).holding("ab") == []

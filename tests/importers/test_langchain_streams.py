"""``ctxengine convert --from langchain`` on what LangGraph streams.

``stream_mode="values"`` writes the whole state after every step, and
``stream_mode="messages"`` one ``AIMessageChunk`` per token: saved as they come, both
held the conversation many times over (every state appended, every chunk a message).
The samples are written here in LangChain's ``dumpd`` / ``messages_to_dict`` forms, in
the shapes LangGraph JS and langchain-core write them.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxengine_host.replay.sessionfile import load_session

from .test_convert import convert, converted, roles

STATE_REPEATS = "repeated messages of successive states (merged by id)"
CHUNKS_JOINED = "streamed chunks joined into the message they are part of"


def dumped(kind: str, **kwargs) -> dict:
    """A message as ``langchain_core.load.dumpd`` writes it."""
    return {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", kind],
            "kwargs": kwargs}  # fmt: skip


def ai_chunk(message_id: str, content: object = (), **fields) -> dict:
    """One ``AIMessageChunk`` of a stream, with the fields LangChain JS writes for it."""
    fields = {"tool_call_chunks": [], "tool_calls": [], "invalid_tool_calls": [], **fields}
    content = list(content) if isinstance(content, tuple) else content
    return dumped("AIMessageChunk", id=message_id, content=content, additional_kwargs={},
                  response_metadata={"model_provider": "openai"}, **fields)  # fmt: skip


def call_part(index: int, args: str, name: str | None = None, call_id: str | None = None):
    """A ``tool_call_chunk`` and what LangChain parsed from it alone (``{}`` while empty,
    else an invalid call: a part of the arguments is not JSON)."""
    part = {"type": "tool_call_chunk", "args": args, "index": index}
    if name:
        part.update(name=name, id=call_id)
        parsed = {"tool_calls": [{"name": name, "args": {}, "id": call_id, "type": "tool_call"}]}
        return {"tool_call_chunks": [part], **parsed}
    invalid = {"name": "", "args": args, "error": "Malformed args.", "type": "invalid_tool_call"}
    return {"tool_call_chunks": [part], "invalid_tool_calls": [invalid]}


def test_a_values_stream_is_its_final_state(tmp_path):
    """Each line is the state after a step; a message keeps its id from state to state,
    and a step may rewrite one (here a review edits the call's arguments)."""
    asked = dumped("HumanMessage", id="h1", content="When is high tide in Brest?")
    call = {"name": "get_tide", "args": {"port": "Brest"}, "id": "call_t1", "type": "tool_call"}
    planned = dumped("AIMessageChunk", id="run-a1", content=[], tool_calls=[call],
                     tool_call_chunks=[], invalid_tool_calls=[])  # fmt: skip
    edited_call = {**call, "args": {"port": "Brest", "day": "monday"}}
    edited = {**planned, "kwargs": {**planned["kwargs"], "tool_calls": [edited_call]}}
    result = dumped("ToolMessage", id="t1", content="06:12 and 18:40", tool_call_id="call_t1",
                    name="get_tide", status="success")  # fmt: skip
    answer = dumped("AIMessageChunk", id="run-a2", content="High tide is at 06:12.",
                    tool_calls=[], tool_call_chunks=[], invalid_tool_calls=[])  # fmt: skip
    states = [[asked], [asked, planned], [asked, edited, result], [asked, edited, result, answer]]
    source = tmp_path / "values.jsonl"
    source.write_text("".join(json.dumps({"messages": s}) + "\n" for s in states))
    report = convert("langchain", source, tmp_path / "lc.jsonl")
    parsed = load_session(tmp_path / "lc.jsonl")
    assert roles(parsed) == ["user", "assistant", "tool", "assistant"]
    (made,) = parsed.messages[1]["tool_calls"]
    assert json.loads(made["function"]["arguments"]) == {"port": "Brest", "day": "monday"}
    assert parsed.messages[3]["content"] == "High tide is at 06:12."
    assert report["dropped"][STATE_REPEATS] == 1 + 2 + 3
    assert report["repaired"] == {}


def test_streamed_chunks_are_joined_into_their_message(tmp_path):
    """The message events of a LangGraph run (``stream_mode="messages"``): each chunk had
    become an assistant message of its own, and calls whose arguments were split over
    ``tool_call_chunks`` were lost as invalid (each part alone is not JSON). OpenAI's
    Responses API gives one chunk the provider's message id (``msg_…``) where the others
    carry LangChain's run id: it is part of the same message."""
    first, second = "run-019b2888-ee10", "run-019b2889-0b71"
    usage = {"input_tokens": 40, "output_tokens": 30, "total_tokens": 70}
    tide = dumped("ToolMessage", id="run-t1", content="06:12", tool_call_id="call_t1")
    rain = dumped("ToolMessage", id="run-w1", content="rain", tool_call_id="call_w1")
    stream = [
        ai_chunk(first),
        ai_chunk(first, **call_part(1, "", "get_tide", "call_t1")),
        ai_chunk(first, **call_part(1, '{"port"')),
        ai_chunk(first, **call_part(1, ': "Brest"}')),
        ai_chunk(first, **call_part(2, "", "get_weather", "call_w1")),
        ai_chunk(first, **call_part(2, '{"city": "Bre')),
        ai_chunk(first, **call_part(2, 'st"}')),
        ai_chunk(first, **call_part(3, "", "get_moon", "call_m1")),
        ai_chunk(first, **call_part(3, '{"date": "mon')),  # the stream broke off here
        ai_chunk(first, usage_metadata=usage),
        tide,
        rain,
        ai_chunk(second),
        ai_chunk("msg_07c65bfd"),
        ai_chunk(second, [{"type": "text", "text": "High tide", "index": 0}]),
        ai_chunk(second, [{"type": "text", "text": " at 06:12,", "index": 0}]),
        ai_chunk(second, [{"type": "text", "text": " bring a coat.", "index": 0}]),
    ]
    report, parsed = converted(tmp_path, "langchain", stream, "chunks")
    assert roles(parsed) == ["user", "assistant", "tool", "tool", "assistant"]
    calls = parsed.messages[1]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_t1", "call_w1"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"port": "Brest"}, {"city": "Brest"}
    ]  # fmt: skip
    assert parsed.messages[4]["content"] == [
        {"type": "text", "text": "High tide at 06:12, bring a coat."}
    ]
    assert report["dropped"][CHUNKS_JOINED] == (10 - 1) + (5 - 1)
    assert report["dropped"]["invalid tool calls"] == 1  # the call cut short
    # LangGraph streams what the graph's nodes say, not its input
    assert report["repaired"] == {"conversations that did not open with a user message": 1}


def test_streamed_text_chunks_of_python_langchain(tmp_path: Path):
    """langchain-core's ``messages_to_dict`` of streamed chunks (string content): one
    answer, and the next answer (another id) stays a message of its own."""

    def chunk(message_id: str, text: str) -> dict:
        data = {"content": text, "additional_kwargs": {}, "response_metadata": {},
                "type": "AIMessageChunk", "name": None, "id": message_id, "example": False,
                "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": None,
                "tool_call_chunks": []}  # fmt: skip
        return {"type": "AIMessageChunk", "data": data}

    asked = {"type": "human", "data": {"content": "Tide?", "type": "human", "id": "h1"}}
    stream = [asked, *(chunk("run-1", t) for t in ["", "High", " tide", " at 06:12."])]
    stream += [chunk("run-2", t) for t in ["Anything", " else?"]]
    report, parsed = converted(tmp_path, "langchain", stream, "py")
    assert roles(parsed) == ["user", "assistant", "assistant"]
    assert [m["content"] for m in parsed.messages[1:]] == ["High tide at 06:12.", "Anything else?"]
    assert report["dropped"][CHUNKS_JOINED] == 3 + 1

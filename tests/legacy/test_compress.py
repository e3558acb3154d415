"""The legacy engine's compaction: validity, what is kept, rolling summaries, failures."""

from __future__ import annotations

import json

from ctxengine_host.contract.messages import content_text
from ctxengine_host.contract.models import CompactResult
from ctxengine_host.summarizer import SummarizerError
from ctxengine_legacy.summary_message import MARKER, is_summary_message

from .conftest import Conversation, assert_valid, filler_log, long_session

FACTS = {
    3: "For the record, the staging database listens on port 47113 and nothing else.",
    9: "Decision: we use the message broker NATS JetStream for the billing jobs.",
    15: "The nightly export config lives at deploy/export/nightly-v7.toml from now on.",
}


def _text(messages) -> str:
    return "\n".join(content_text(m) for m in messages)


def test_compress_returns_a_shorter_valid_sequence_with_one_marked_summary(make_engine):
    engine = make_engine(window=16384)
    messages = long_session(40, FACTS)
    result = engine.compress(messages)
    assert isinstance(result, CompactResult)
    assert result.ok and result.compacted
    assert result.tokens_after < result.tokens_before * 0.6
    assert result.tokens_after < engine.threshold_tokens
    assert_valid(result.messages)
    summaries = [m for m in result.messages if is_summary_message(m)]
    assert len(summaries) == 1
    assert summaries[0]["role"] == "user"
    assert summaries[0]["content"].startswith(MARKER)
    assert len(summaries[0]["message_uid"]) == 32
    assert result.messages[0] == messages[0]  # the system prompt is untouched


def test_head_and_the_latest_turn_are_kept_verbatim(make_engine):
    engine = make_engine(window=16384)
    messages = long_session(40, FACTS)
    result = engine.compress(messages)
    out = result.messages
    assert out[1:4] == messages[1:4]  # protect_first_n = 3 after the system prompt
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    assert out[-(len(messages) - last_user) :] == messages[last_user:]
    assert out[-1] == messages[-1]


def test_planted_facts_survive_in_the_summary(make_engine):
    engine = make_engine(window=16384)
    result = engine.compress(long_session(40, FACTS))
    text = _text(result.messages)
    for needle in ("47113", "NATS JetStream", "deploy/export/nightly-v7.toml"):
        assert needle in text


def test_a_second_compaction_updates_the_summary_and_keeps_earlier_facts(make_engine):
    engine = make_engine(window=16384)
    first = engine.compress(long_session(40, FACTS)).messages
    uid = next(m["message_uid"] for m in first if is_summary_message(m))
    later = {
        2: "Heads-up: the billing API freeze begins March 14; plan around it.",
        5: "For the record, the staging database port changed: set staging_db_port=47999.",
    }
    grown = first + long_session(40, later)[1:]
    second = engine.compress(grown)
    assert second.compacted
    assert_valid(second.messages)
    summaries = [m for m in second.messages if is_summary_message(m)]
    assert len(summaries) == 1
    assert summaries[0]["message_uid"] == uid  # the same logical message, updated
    text = _text(second.messages)
    for needle in ("NATS JetStream", "deploy/export/nightly-v7.toml", "March 14", "47999"):
        assert needle in text


def test_a_superseded_value_is_dropped_from_the_rolling_summary(make_engine):
    engine = make_engine(window=16384)
    first = engine.compress(
        long_session(40, {4: "Config: set export_batch_size=250 in deploy values."})
    ).messages
    assert "export_batch_size=250" in _text(first)
    grown = first + long_session(40, {6: "Config: set export_batch_size=900 from now on."})[1:]
    text = _text(engine.compress(grown).messages)
    assert "export_batch_size=900" in text
    assert "export_batch_size=250" not in text


def test_focus_topic_steers_a_tight_summary(make_engine):
    facts = {
        i: f"Note that the {topic} service stores its state in bucket s3://{topic}-state-{i}."
        for i, topic in enumerate(["billing", "search", "auth", "ingest", "reports"] * 4)
    }
    messages = long_session(30, facts)
    plain = make_engine(window=16384, summary_target_tokens=90).compress(messages)
    focused = make_engine(window=16384, summary_target_tokens=90).compress(
        messages, focus_topic="search state bucket"
    )
    summary = next(content_text(m) for m in focused.messages if is_summary_message(m))
    plain_summary = next(content_text(m) for m in plain.messages if is_summary_message(m))
    assert summary.count("search-state") > plain_summary.count("search-state")
    assert "search state bucket" in summary


def test_tool_call_groups_are_never_split(make_engine):
    engine = make_engine(window=8192, tail_min_messages=1)
    for turns in (12, 17, 23, 31):
        result = engine.compress(long_session(turns))
        assert_valid(result.messages)
        for index, message in enumerate(result.messages):
            if message.get("tool_calls"):
                ids = [c["id"] for c in message["tool_calls"]]
                following = result.messages[index + 1 : index + 1 + len(ids)]
                assert [m.get("tool_call_id") for m in following] == ids


def test_a_long_final_tool_loop_restates_the_last_user_request(make_engine):
    convo = Conversation().user("Hi.").assistant("Hello.").user("Read the README.")
    convo.assistant("It describes the workers.")
    convo.user("Please migrate every worker to the v2 queue API, one by one.")
    for step in range(30):
        convo.tool_round([("read_file", {"path": f"src/w{step}.py"}, filler_log(step, 80))])
    convo.assistant("Done with the first pass.")
    engine = make_engine(window=8192)
    result = engine.compress(convo.messages)
    assert result.compacted
    assert_valid(result.messages)
    summary = next(content_text(m) for m in result.messages if is_summary_message(m))
    assert "migrate every worker to the v2 queue API" in summary
    assert "Latest user request (verbatim)" in summary


def test_summarizer_failure_leaves_messages_unchanged_and_reports_why(make_engine):
    def failing(content, target_tokens, focus_topic=None, previous=None):
        raise SummarizerError("HTTP 401 from the summarizer; check the key")

    engine = make_engine(window=16384, summarize=failing)
    result = engine.compress(long_session(40, FACTS))
    assert not result.ok and not result.compacted
    assert result.messages is None
    status = engine.get_status()
    assert "HTTP 401" in status["last_error"]
    assert engine.compression_count == 0


def test_two_ineffective_compactions_stop_triggering_until_history_grows(make_engine):
    def failing(content, target_tokens, focus_topic=None, previous=None):
        raise SummarizerError("quota exhausted")

    engine = make_engine(window=16384, summarize=failing)
    messages = long_session(40)
    over = engine.threshold_tokens + 10
    assert engine.should_compress(over)
    engine.compress(messages)
    assert engine.should_compress(over)
    engine.compress(messages)
    assert not engine.should_compress(over)
    assert engine.get_status()["paused_until_tokens"] > over
    assert engine.should_compress(engine.get_status()["paused_until_tokens"])
    engine.on_session_reset()
    assert engine.should_compress(over)


def test_an_effective_compaction_resets_the_pause(make_engine, service):
    calls = {"n": 0}

    def flaky(content, target_tokens, focus_topic=None, previous=None):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise SummarizerError("temporarily broken")
        return service.summarize(content, target_tokens, focus_topic, previous)

    engine = make_engine(window=16384, summarize=flaky)
    messages = long_session(40)
    engine.compress(messages)
    engine.compress(messages)
    assert engine.get_status()["paused_until_tokens"] is not None
    assert engine.compress(messages, force=True).compacted
    assert engine.get_status()["paused_until_tokens"] is None
    assert engine.compression_count == 1


def test_pruning_alone_when_it_brings_the_history_far_enough_down(make_engine):
    big = filler_log(1, 900)
    convo = Conversation().user("Read the three logs and tell me what broke.")
    for name in ("a", "b", "c"):
        convo.tool_round([("read_file", {"path": f"logs/{name}.log"}, big + name)])
    convo.assistant("Nothing broke; the jobs ran.").user("Thanks, now check the config.")
    convo.assistant("The config is fine.")
    engine = make_engine(window=32768, tail_min_messages=2, protect_first_n=0)
    result = engine.compress(convo.messages)
    assert result.compacted and result.reason.startswith("pruned")
    assert_valid(result.messages)
    assert not any(is_summary_message(m) for m in result.messages)
    pruned = [m for m in result.messages if m.get("role") == "tool"]
    assert all(content_text(m).startswith("[Pruned tool output] read_file(") for m in pruned)


def test_identical_long_outputs_are_deduplicated_before_summarizing(make_engine):
    seen = {}

    def spy(content, target_tokens, focus_topic=None, previous=None):
        seen["content"] = content
        return make_engine().context.summarize(content, target_tokens, focus_topic, previous)

    same = filler_log(3, 120)
    convo = Conversation().user("Run the suite until it is green.")
    for _ in range(6):
        convo.tool_round([("run_tests", {"target": "tests/"}, same)])
        convo.assistant("Still red, retrying.").user("Keep going.")
    for turn in range(8):
        convo.tool_round([("read_file", {"path": f"src/m{turn}.py"}, filler_log(turn, 40))])
        convo.assistant(f"Module {turn} read.").user("Next.")
    convo.assistant("All green.")
    engine = make_engine(window=8192, summarize=spy, prune_only_goal_fraction=0.0)
    result = engine.compress(convo.messages)
    assert result.compacted
    duplicates = [m for m in seen["content"] if content_text(m).startswith("[Duplicate output")]
    assert duplicates
    assert "run_tests(target=tests/)" in content_text(duplicates[0])


def test_the_protected_head_is_never_pruned(make_engine):
    big = filler_log(1, 900)  # ~19,000 tokens: under a quarter of the threshold at 256k
    convo = Conversation().user("Read the logs.")
    for name in ("a", "b", "c"):
        convo.tool_round([("read_file", {"path": f"logs/{name}.log"}, big + name)])
    convo.assistant("Read them.").user("Thanks.").assistant("Welcome.")
    engine = make_engine(window=262144, tail_min_messages=2, tail_token_fraction=0.01)
    result = engine.compress(convo.messages)
    assert result.compacted
    assert result.messages[:4] == convo.messages[:4]


def test_a_head_output_too_large_for_the_tail_is_described_not_kept(make_engine):
    """A single agent loop: the first call's huge output would sit in every request."""
    big = filler_log(1, 900)  # ~19,000 tokens at a 32k window
    convo = Conversation().user("Read the logs.")
    for name in ("a", "b", "c", "d"):
        convo.tool_round([("read_file", {"path": f"logs/{name}.log"}, big + name)])
    convo.assistant("Read them.")
    result = make_engine(window=32768, tail_min_messages=2).compress(convo.messages)
    assert result.compacted
    assert result.messages[:3] == convo.messages[:3]  # the task and the first call
    assert content_text(result.messages[3]).startswith("[Pruned tool output] read_file(")
    assert result.tokens_after < 24576


def test_long_tool_call_arguments_are_shortened_to_valid_json(make_engine):
    patch = "\n".join(f"+line {i} of a very long patch" for i in range(400))
    convo = Conversation().user("Apply the big patch.")
    convo.tool_round([("edit_file", {"path": "src/big.py", "patch": patch}, "applied")])
    for turn in range(6):
        convo.assistant(f"Step {turn}.").user(f"Continue with {turn}.")
        convo.tool_round([("read_file", {"path": f"src/m{turn}.py"}, filler_log(turn, 400))])
    convo.assistant("Done.")
    engine = make_engine(window=32768, tail_min_messages=2, protect_first_n=0)
    result = engine.compress(convo.messages)
    assert result.reason.startswith("pruned")
    call = result.messages[2]["tool_calls"][0]["function"]
    args = json.loads(call["arguments"])
    assert args["path"] == "src/big.py"
    assert len(call["arguments"]) <= 1000
    assert "chars]" in args["patch"]


def test_nothing_to_compact_in_a_short_history(make_engine):
    engine = make_engine()
    messages = Conversation().user("hi").assistant("hello").messages
    result = engine.compress(messages)
    assert result.ok and not result.compacted
    assert result.messages is None


def test_compress_honours_a_past_deadline(make_engine):
    engine = make_engine(window=16384, prune_only_goal_fraction=0.0)
    result = engine.compress(long_session(40), deadline=0.0)
    assert not result.compacted and "deadline" in result.reason


def test_forced_compaction_gets_an_oversized_history_under_the_threshold(make_engine):
    convo = Conversation().user("Dump every log you can find.")
    for step in range(4):
        convo.tool_round([("read_file", {"path": f"logs/{step}.log"}, filler_log(step, 500))])
        convo.assistant(f"Log {step} read.").user("More.")
    convo.tool_round([("read_file", {"path": "logs/huge.log"}, filler_log(99, 2500))])
    convo.assistant("That one is huge.")
    engine = make_engine(window=16384, prune_only_goal_fraction=0.0)
    result = engine.compress(convo.messages, force=True)
    assert result.compacted
    assert result.tokens_after < engine.threshold_tokens
    assert_valid(result.messages)


def test_forced_compaction_clips_a_giant_output_when_there_is_no_middle(make_engine):
    convo = Conversation().user("Cat the whole log.")
    convo.tool_round([("read_file", {"path": "logs/all.log"}, filler_log(5, 2500))])
    engine = make_engine(window=16384)
    assert not engine.compress(convo.messages).compacted
    result = engine.compress(convo.messages, force=True)
    assert result.compacted and result.reason == "clipped oversized tool outputs"
    assert result.tokens_after < engine.threshold_tokens
    assert_valid(result.messages)
    assert "tokens clipped" in content_text(result.messages[-1])


def test_a_new_engine_instance_recognizes_an_earlier_summary_by_its_marker(make_engine):
    first = make_engine(window=16384).compress(long_session(40, FACTS)).messages
    uid = next(m["message_uid"] for m in first if is_summary_message(m))
    grown = first + long_session(40)[1:]
    second = make_engine(window=16384).compress(grown).messages  # e.g. after a restart
    summaries = [m for m in second if is_summary_message(m)]
    assert [m["message_uid"] for m in summaries] == [uid]
    assert "47113" in content_text(summaries[0])

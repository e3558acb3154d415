"""The LCM DAG invariants checked with plain SQL, on PostgreSQL or a SQLite file (independent
of the store code).

Every stored message is reachable from its conversation's active context exactly once,
in sequence order; every summary exactly once and covering messages; the running totals
match the items.
"""

from __future__ import annotations

from typing import Any


def check_lcm_invariants(conn: Any, prefix: str = "lcm_", mark: str = "%s") -> dict[str, int]:
    """On PostgreSQL (defaults) or on an LCM SQLite file (``prefix=""``, ``mark="?"``)."""

    def q(sql: str, params: tuple = ()) -> Any:
        return conn.execute(sql.replace("lcm_", prefix).replace("%s", mark), params)

    totals = {"conversations": 0, "messages": 0, "summaries": 0}
    conversations = q(
        "SELECT id, context_tokens, message_count FROM lcm_conversations ORDER BY id"
    ).fetchall()
    for conv_id, context_tokens, message_count in conversations:
        totals["conversations"] += 1
        items = q(
            "SELECT kind, ref_id, token_count FROM lcm_context_items WHERE conversation_id=%s "
            "ORDER BY ordinal",
            (conv_id,),
        ).fetchall()
        assert context_tokens == sum(t for _, _, t in items), f"{conv_id}: running total drifted"
        messages: list[int] = []
        summaries: list[int] = []
        stack = [(kind, ref) for kind, ref, _ in reversed(items)]
        while stack:
            kind, ref = stack.pop()
            if kind == "message":
                messages.append(ref)
                continue
            summaries.append(ref)
            (skind,) = q("SELECT kind FROM lcm_summaries WHERE id=%s", (ref,)).fetchone()
            if skind == "leaf":
                rows = q(
                    "SELECT message_id FROM lcm_summary_messages WHERE summary_id=%s ORDER BY ord",
                    (ref,),
                ).fetchall()
                assert rows, f"leaf summary {ref} has no sources"
                messages.extend(r[0] for r in rows)
            else:
                rows = q(
                    "SELECT source_id FROM lcm_summary_sources WHERE summary_id=%s ORDER BY ord",
                    (ref,),
                ).fetchall()
                assert rows, f"condensed summary {ref} has no sources"
                stack.extend(("summary", r[0]) for r in reversed(rows))
        stored = [
            r[0]
            for r in q(
                "SELECT id FROM lcm_messages WHERE conversation_id=%s ORDER BY seq", (conv_id,)
            )
        ]
        assert len(stored) == message_count, f"{conv_id}: message_count drifted"
        assert messages == stored, f"{conv_id}: messages not reachable exactly once, in order"
        every = {
            r[0] for r in q("SELECT id FROM lcm_summaries WHERE conversation_id=%s", (conv_id,))
        }
        assert sorted(summaries) == sorted(every), f"{conv_id}: orphan or shared summary"
        empty = q(
            "SELECT id FROM lcm_summaries WHERE conversation_id=%s AND descendant_messages <= 0",
            (conv_id,),
        ).fetchall()
        assert not empty, f"{conv_id}: summaries {empty} cover no messages"
        totals["messages"] += len(stored)
        totals["summaries"] += len(every)
    return totals

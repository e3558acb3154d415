def estimate_tokens(messages):
    return sum(len(str(m.get("content") or "")) // 3 + 8 for m in messages)


def _blocks(messages):
    blocks = []
    for message in messages:
        if message.get("role") == "tool" and blocks and blocks[-1][0].get("tool_calls"):
            blocks[-1].append(message)
        else:
            blocks.append([message])
    return blocks


def newest_that_fit(messages, budget):
    """The system prompt, the first user message (the task) and the newest whole blocks.

    Whole blocks only: a tool call is never kept without its results or the other way
    round, and the task stays even when one long tool loop is the whole history.
    """
    head = [m for m in messages[:1] if m.get("role") == "system"]
    blocks = _blocks(messages[len(head) :])
    task = blocks.pop(0) if blocks and blocks[0][0].get("role") == "user" else []
    used = estimate_tokens(head) + estimate_tokens(task)
    kept = []
    for block in reversed(blocks):
        cost = estimate_tokens(block)
        if kept and used + cost > budget:
            break
        kept.insert(0, block)
        used += cost
    return head + task + [m for block in kept for m in block]

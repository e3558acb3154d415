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
    head = [m for m in messages[:1] if m.get("role") == "system"]
    used = estimate_tokens(head)
    kept = []
    for block in reversed(_blocks(messages[len(head) :])):
        cost = estimate_tokens(block)
        if kept and used + cost > budget:
            break
        kept.insert(0, block)
        used += cost
    tail = [m for block in kept for m in block]
    while len(tail) > 1 and tail[0].get("role") != "user":
        tail = tail[1:]
    return head + tail

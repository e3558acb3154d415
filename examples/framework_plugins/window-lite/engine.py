import json

from agent.context_compressor import resolve_model_threshold
from agent.context_engine import ContextEngine

from .window import estimate_tokens, newest_that_fit


class WindowLiteEngine(ContextEngine):
    def __init__(self, context_length=200000):
        self.context_length = context_length
        self.threshold_percent = 0.75
        self.threshold_tokens = int(context_length * self.threshold_percent)
        self.turns_seen = 0

    @property
    def name(self):
        return "window-lite"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0) or 0
        self.last_completion_tokens = usage.get("completion_tokens", 0) or 0
        self.last_total_tokens = usage.get("total_tokens", 0) or (
            self.last_prompt_tokens + self.last_completion_tokens
        )

    def should_compress(self, prompt_tokens=None):
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return bool(self.threshold_tokens) and tokens >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None):
        kept = newest_that_fit(messages, self.threshold_tokens // 2)
        if len(kept) < len(messages):
            self.compression_count += 1
        return kept

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=0,
    ):
        if not budget_tokens or estimate_tokens(request_messages) <= budget_tokens:
            return None
        return newest_that_fit(request_messages, budget_tokens)

    def on_turn_complete(self, messages, usage=None, **kwargs):
        self.turns_seen += 1

    def update_model(
        self, model, context_length, base_url="", api_key="", provider="", api_mode=""
    ):
        self.context_length = context_length
        percent = resolve_model_threshold(
            model, self.model_thresholds, self.threshold_percent, provider
        )
        self.threshold_tokens = int(context_length * percent)

    def get_tool_schemas(self):
        return [
            {
                "name": "window_stats",
                "description": "How many turns the engine has seen",
                "parameters": {"type": "object", "properties": {}, "required": []},
            }
        ]

    def handle_tool_call(self, name, args, **kwargs):
        if name == "window_stats":
            return json.dumps({"turns_seen": self.turns_seen})
        return json.dumps({"error": f"Unknown tool: {name}"})

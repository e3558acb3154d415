"""``[engines.legacy]``: the legacy engine's config block, validated by pydantic."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LegacyConfig(BaseModel):
    """Budget and pruning knobs of the legacy engine (defaults suit most windows)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    threshold_percent: float = Field(0.75, gt=0, le=1)
    protect_first_n: int = Field(3, ge=0, description="messages kept after the system prompt")
    tail_token_fraction: float = Field(0.20, gt=0, lt=1, description="of the threshold")
    tail_min_messages: int = Field(4, ge=1)
    summary_target_tokens: int | None = Field(None, gt=0, description="None: a fraction")
    summary_target_fraction: float = Field(0.15, gt=0, lt=1, description="of the threshold")
    prune_tool_output_tokens: int = Field(400, gt=0, description="older outputs above this")
    dedupe_min_tokens: int = Field(100, gt=0)
    max_tool_argument_chars: int = Field(1000, gt=0)
    prune_only_goal_fraction: float = Field(
        0.5, ge=0, lt=1, description="pruning alone suffices below this share of the threshold"
    )
    min_savings_fraction: float = Field(
        0.10, ge=0, lt=1, description="a compaction saving less counts as ineffective"
    )
    max_ineffective_compactions: int = Field(2, ge=1)
    max_summary_token_ratio: float = Field(
        1.0,
        gt=0,
        description="summary tokens written per session, at most this times its own tokens",
    )

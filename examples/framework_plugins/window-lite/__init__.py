"""window-lite: a context engine plugin."""

from .commands import handle_window_stats
from .engine import WindowLiteEngine


def register(ctx):
    ctx.register_context_engine(WindowLiteEngine(context_length=200000))
    ctx.register_command("window-stats", handle_window_stats, description="Window stats")

def handle_window_stats(args=None):
    return "window-lite is active"

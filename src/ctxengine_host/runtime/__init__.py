"""The runtime: ``ContextHost``, ``Session`` and the parts that run a turn.

A session's parts (assembly, compaction, maintenance, sub-agents, views) see the session
and the host through the narrow protocols in ``runtime.parts``, never by importing
``runtime.session`` or ``runtime.host``; isolation (threads and worker processes) lives
here too. Token counting is shared with the summarizer: ``ctxengine_host.tokens``.
"""

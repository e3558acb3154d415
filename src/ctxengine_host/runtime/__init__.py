"""The runtime: ``ContextHost``, ``Session`` and the parts that run a turn.

A session's parts (assembly, compaction, maintenance, live view, sub-agents) see the
session through the narrow protocols in ``runtime.parts``, never by importing
``runtime.session``; isolation, process isolation and token counting live here too.
"""

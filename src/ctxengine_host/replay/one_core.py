"""Run a replay on one CPU core.

A replay is one logical thread of work that hops between the caller and the
runtime's engine workers (every engine call keeps its timeout, so it runs on a
worker thread). On several cores each hop wakes a thread on another core and
hands the GIL across cores, which costs more than the call itself for the
engine's small calls. Pinned to one core, the hops stay cheap; nothing a replay
does runs in parallel, so it loses nothing. Linux only; elsewhere, and for a
process already limited to one core, it changes nothing.

Pinned, its threads also run as a batch (``SCHED_BATCH``, no privilege needed): a
thread woken by a hand-off no longer preempts the thread that woke it, which still
holds the GIL and would only be switched back to once the woken one blocked on it.
That took about 13,000 involuntary context switches out of a 500-turn replay (787
left) and a third of the time of each hop.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Field 39 of /proc/<pid>/stat (1-based): the CPU the thread last ran on.
_PROCESSOR_FIELD = 39
_TASKS = Path("/proc/self/task")


def current_cpu() -> int | None:
    """The CPU this thread last ran on, or None where the system does not say."""
    try:
        stat = Path("/proc/thread-self/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = stat.rpartition(")")[2].split()
    try:
        return int(fields[_PROCESSOR_FIELD - 3])
    except (IndexError, ValueError):
        return None


def _thread_ids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(_TASKS)]
    except OSError:
        return [0]


def _place_threads(cpus: set[int], policy: int | None) -> None:
    """Every thread of the process, not only the caller (Linux affinity and scheduling
    policy are per thread; threads started later inherit the caller's). ``policy`` None
    leaves each thread's own."""
    for tid in _thread_ids():
        try:
            os.sched_setaffinity(tid, cpus)
            if policy is not None:
                os.sched_setscheduler(tid, policy, os.sched_param(0))
        except OSError:  # the thread ended meanwhile
            continue


@contextmanager
def on_one_core(enabled: bool = True) -> Iterator[None]:
    """Pin the process to the core it runs on for the block, its threads run as a batch;
    then restore its CPUs and policy."""
    if not enabled or not hasattr(os, "sched_setaffinity"):
        yield
        return
    allowed = os.sched_getaffinity(0)
    if len(allowed) <= 1:
        yield
        return
    # A policy other than the default (real-time, idle) was someone's choice: kept.
    batch = os.sched_getscheduler(0) == os.SCHED_OTHER
    cpu = current_cpu()
    pinned = {cpu} if cpu is not None and cpu in allowed else {min(allowed)}
    _place_threads(pinned, os.SCHED_BATCH if batch else None)
    try:
        yield
    finally:
        # Threads started inside the block inherited the one core: restore them too.
        _place_threads(allowed, os.SCHED_OTHER if batch else None)

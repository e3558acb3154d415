"""The contract: what an engine is written against.

The hook specifications, the ``ContextEngine`` base class, the models exchanged with the
host, the parameter rule, ``EngineContext``, and the message helpers engines share. Nothing
here imports the runtime, the stores, discovery or the command line (tests/host_core/
test_layering.py checks it), so an engine author reads only this folder.
"""

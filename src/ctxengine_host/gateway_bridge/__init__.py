"""``ctxengine serve``: the selected engine offered to the TypeScript gateway over JSON-RPC.

The gateway's ``contextEngine`` slot holds our plugin (integrations/openclaw); the
plugin forwards every lifecycle call here. :mod:`.protocol` is the wire format,
:mod:`.shapes` converts the gateway's ``AgentMessage`` to and from our OpenAI-format
messages, :mod:`.sessions` maps the lifecycle onto :class:`ctxengine_host.Session`,
:mod:`.server` dispatches requests, :mod:`.transports` carries them (stdio, a unix
socket, 127.0.0.1 HTTP). The protocol is documented in docs/bridge.md.
"""

from .protocol import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION"]

"""The ``tonk.v1`` gRPC protocol: generated code (``sdk.protocol.tonk.v1``) plus its names.

The generated modules are rebuilt by ``scripts/gen_proto.py`` from ``protos/``; never edit them
by hand (a test fails when they are stale).
"""

from __future__ import annotations

from typing import Final

from sdk.protocol.tonk.v1 import bot_pb2, bot_pb2_grpc, link_pb2

PROTOCOL_VERSION: Final = "tonk.v1"
SERVICE_NAME: Final = "tonk.v1.BotService"
#: The service the arena's gateway serves to bots that connect out (link.proto).
LINK_SERVICE_NAME: Final = "tonk.v1.BotLinkService"
#: The gateway's internal relay for match workers (link.proto; not for bots).
RELAY_SERVICE_NAME: Final = "tonk.v1.GatewayRelayService"

__all__ = [
    "LINK_SERVICE_NAME",
    "PROTOCOL_VERSION",
    "RELAY_SERVICE_NAME",
    "SERVICE_NAME",
    "bot_pb2",
    "bot_pb2_grpc",
    "link_pb2",
]

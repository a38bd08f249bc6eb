"""The ``tonk.v1`` gRPC protocol: generated code (``sdk.protocol.tonk.v1``) plus its names.

The generated modules are rebuilt by ``scripts/gen_proto.py`` from ``protos/``; never edit them
by hand (a test fails when they are stale).
"""

from __future__ import annotations

from typing import Final

from sdk.protocol.tonk.v1 import bot_pb2, bot_pb2_grpc

PROTOCOL_VERSION: Final = "tonk.v1"
SERVICE_NAME: Final = "tonk.v1.BotService"

__all__ = ["PROTOCOL_VERSION", "SERVICE_NAME", "bot_pb2", "bot_pb2_grpc"]

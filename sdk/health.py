"""``python -m sdk.health HOST:PORT``: ask a bot's standard gRPC health service whether it
is serving (exit 0) or not (exit 1). Used by container health checks and the arena."""

from __future__ import annotations

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check_health(address: str, timeout_s: float = 3.0, service: str = "") -> bool:
    """True when the server at ``address`` reports SERVING within ``timeout_s``."""
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m sdk.health HOST:PORT", file=sys.stderr)
        return 2
    ok = check_health(args[0])
    print("SERVING" if ok else "NOT SERVING")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Started inside the sandbox, with only the standard library and the SDK: serve the bot
class ``argv[1]`` on the Unix socket ``$TONK_SOCKET`` until the sandbox ends.

It runs as ``python -I -S launcher.py MODULE:CLASS`` (no user site, no environment-given
paths); the bot's own code and dependencies come first on the path, then the SDK. It must
not import the arena: the arena is not in the sandbox.
"""

import os
import signal
import sys


def main() -> int:
    entry = sys.argv[1]
    sys.path[:0] = ["/bot/code", "/bot/deps", "/opt/tonk/site"]
    from sdk.players import load_bot_class
    from sdk.server import start_server

    bot_class = load_bot_class(entry)
    running = start_server(bot_class, unix_socket=os.environ["TONK_SOCKET"], max_workers=4)
    print(f"serving {entry} on {os.environ['TONK_SOCKET']}", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: running.stop(0))
    running.server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())

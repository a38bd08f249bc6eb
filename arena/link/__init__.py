"""Connect-out bots (protos/tonk/v1/link.proto): the gateway that holds their connections,
the store's directory of gateways and connections, and the referee's player that relays
each call through the gateway holding the bot (docs/protocol.md, "Connecting out")."""

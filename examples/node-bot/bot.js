// A minimal Tonk Arena bot in JavaScript (Node 18+), written from protos/tonk/v1/bot.proto
// and docs/protocol.md alone: no generated code, no Tonk library. It loads the .proto at
// startup with @grpc/proto-loader and serves tonk.v1.BotService plus the standard health
// service (the arena checks it before entering the bot and before each match).
//
//   npm ci
//   node bot.js --port 50052            # then: tonk play 127.0.0.1:50052 random
//
// Options: --host (default 127.0.0.1; 0.0.0.0 to accept other machines), --port (default
// 50051). TONK_PROTOS names the folder holding tonk/v1/bot.proto (default: ../../protos).
"use strict";

const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTOCOL_VERSION = "tonk.v1";
const protosDir = process.env.TONK_PROTOS || path.join(__dirname, "..", "..", "protos");

// keepCase: the fields keep the .proto's snake_case names; oneofs: each oneof gets a field
// naming its member (action.kind is "drop", "draw", "meld", "layoff" or "discard").
const definition = protoLoader.loadSync(
  [path.join(protosDir, "tonk", "v1", "bot.proto"), path.join(__dirname, "health.proto")],
  { keepCase: true, enums: String, longs: String, defaults: true, oneofs: true },
);
const proto = grpc.loadPackageDefinition(definition);

// --- The strategy: all of it is in decide() -----------------------------------------------

// A card is rank then suit ("10s", "Qh", "Ac"); aces count 1, faces 10.
function points(card) {
  const rank = card.slice(0, -1).toUpperCase();
  if (rank === "A") return 1;
  if (rank === "J" || rank === "Q" || rank === "K") return 10;
  return Number(rank === "T" ? 10 : rank);
}

// Returns an index into observation.legal_actions, which lists every legal action in a
// stable order (docs/protocol.md): at the start of a turn drop, draw stock, draw discard;
// after the draw every meld, every lay-off, every discard.
function decide(obs) {
  const legal = obs.legal_actions;
  const find = (test) => legal.findIndex(test);
  if (obs.phase === "PHASE_START") {
    const total = obs.hand.reduce((sum, card) => sum + points(card), 0);
    const drop = find((a) => a.kind === "drop");
    if (drop >= 0 && total <= 5) return drop; // go down with a very low hand
    const stock = find((a) => a.kind === "draw" && a.draw.source === "DRAW_SOURCE_STOCK");
    return stock >= 0 ? stock : legal.length - 1;
  }
  // After the draw: the meld or lay-off that sheds the most points, else discard the highest
  // card we may. Melds and lay-offs do not end the turn: we are asked again afterwards.
  let best = -1;
  let bestPoints = -1;
  legal.forEach((action, i) => {
    let shed = -1;
    if (action.kind === "meld") shed = action.meld.cards.reduce((s, c) => s + points(c), 0);
    if (action.kind === "layoff") shed = points(action.layoff.card);
    if (shed > bestPoints) [best, bestPoints] = [i, shed];
  });
  if (best >= 0) return best;
  legal.forEach((action, i) => {
    if (action.kind === "discard" && points(action.discard.card) > bestPoints) {
      [best, bestPoints] = [i, points(action.discard.card)];
    }
  });
  return best >= 0 ? best : 0;
}

// --- The service --------------------------------------------------------------------------

const botService = {
  GetInfo(call, reply) {
    reply(null, {
      name: "node-example",
      version: "0.1.0",
      author: "Tonk Arena examples",
      protocol_version: PROTOCOL_VERSION,
      language: `javascript (node ${process.versions.node})`,
      // The arena's claim code for this bot's address, to be registered there (docs/protocol.md).
      claim: process.env.TONK_CLAIM || "",
    });
  },
  // Every observation is complete, so this bot keeps no state between calls.
  StartMatch(call, reply) {
    reply(null, {});
  },
  Decide(call, reply) {
    try {
      reply(null, { action_index: decide(call.request.observation) });
    } catch (err) {
      reply({ code: grpc.status.INTERNAL, details: String(err && err.stack ? err.stack : err) });
    }
  },
  EndHand(call, reply) {
    reply(null, {});
  },
  EndMatch(call, reply) {
    reply(null, {});
  },
};

const SERVING = new Set(["", "tonk.v1.BotService"]);
const healthService = {
  Check(call, reply) {
    if (!SERVING.has(call.request.service)) {
      reply({ code: grpc.status.NOT_FOUND, details: `unknown service ${call.request.service}` });
      return;
    }
    reply(null, { status: "SERVING" });
  },
  Watch(call) {
    const known = SERVING.has(call.request.service);
    call.write({ status: known ? "SERVING" : "SERVICE_UNKNOWN" }); // and stay open until cancelled
  },
};

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

function main() {
  const host = option("host", "127.0.0.1");
  const port = Number(option("port", "50051"));
  const server = new grpc.Server();
  server.addService(proto.tonk.v1.BotService.service, botService);
  server.addService(proto.grpc.health.v1.Health.service, healthService);
  const where = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  server.bindAsync(where, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) {
      console.error(`cannot listen on ${where}: ${err.message}`);
      process.exit(1);
    }
    console.log(`node-example serving tonk.v1.BotService on ${where}`);
  });
  const stop = () => {
    server.tryShutdown(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref(); // calls still open after 2 s are dropped
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

if (require.main === module) main();

module.exports = { decide, points };

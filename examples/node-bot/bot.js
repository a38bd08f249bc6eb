// A minimal Tonk Arena bot in JavaScript (Node 18+), written from protos/tonk/v1/bot.proto
// and docs/protocol.md alone: no generated code, no Tonk library. It loads the .proto at
// startup with @grpc/proto-loader and serves tonk.v1.BotService plus the standard health
// service (the arena checks it before entering the bot and before each match).
//
//   npm ci
//   node bot.js --port 50052            # then: tonk play 127.0.0.1:50052 random
//
// Options: --host (default 127.0.0.1; 0.0.0.0 to accept other machines), --port (default
// 50051), or --socket PATH to listen on a Unix socket instead (what the arena does when it
// runs an uploaded copy in its sandbox: tonk.toml's command). TONK_PROTOS names the folder
// holding tonk/v1/bot.proto (default: ./protos, a copy uploads carry, else ../../protos).
//
// Or connect out, listening on nothing (protos/tonk/v1/link.proto, docs/protocol.md
// "Connecting out"): the bot opens one stream to the arena's gateway and answers the calls
// that come over it.
//
//   node bot.js --connect --arena http://127.0.0.1:8000 --token TOKEN --name my-node-bot
//
// (--capacity: matches at once, default 4; --link HOST:PORT skips asking the arena where its
// gateway is; TONK_ARENA and TONK_TOKEN work as the options.)
"use strict";

const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTOCOL_VERSION = "tonk.v1";
const fs = require("fs");
const ownProtos = path.join(__dirname, "protos");
const protosDir =
  process.env.TONK_PROTOS ||
  (fs.existsSync(path.join(ownProtos, "tonk", "v1", "bot.proto")) ? ownProtos : path.join(__dirname, "..", "..", "protos"));

// keepCase: the fields keep the .proto's snake_case names; oneofs: each oneof gets a field
// naming its member (action.kind is "drop", "draw", "meld", "layoff" or "discard").
const definition = protoLoader.loadSync(
  [
    path.join(protosDir, "tonk", "v1", "bot.proto"),
    path.join(protosDir, "tonk", "v1", "link.proto"),
    path.join(__dirname, "health.proto"),
  ],
  { keepCase: true, enums: String, longs: String, defaults: true, oneofs: true, includeDirs: [protosDir] },
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

const INFO = {
  name: "node-example",
  version: "0.1.0",
  author: "Tonk Arena examples",
  protocol_version: PROTOCOL_VERSION,
  language: `javascript (node ${process.versions.node})`,
  // The arena's claim code for this bot's address, to be registered there (docs/protocol.md).
  claim: process.env.TONK_CLAIM || "",
};

const botService = {
  GetInfo(call, reply) {
    reply(null, INFO);
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
  EndDeal(call, reply) {
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
  const socket = option("socket", process.env.TONK_SOCKET || "");
  const where = socket ? `unix:${socket}` : host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
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

// --- Connecting out ------------------------------------------------------------------------

// Refusals that retrying cannot fix (a bad token, a name that is not ours...): stop.
const FINAL = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.PERMISSION_DENIED,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.INVALID_ARGUMENT,
]);

// Each call is one LinkCall with exactly one request; the reply carries the same call_id and
// the response of the same kind (or an error status).
function answer(call) {
  const reply = { call_id: call.call_id };
  try {
    switch (call.request) {
      case "get_info":
        reply.get_info = INFO;
        break;
      case "decide":
        reply.decide = { action_index: decide(call.decide.observation) };
        break;
      case "start_match":
      case "end_hand":
      case "end_match":
      case "end_deal":
        reply[call.request] = {};
        break;
      default: // a call this bot does not know (a newer arena)
        reply.error = { code: grpc.status.UNIMPLEMENTED, message: `unknown call ${call.request}` };
    }
  } catch (err) {
    delete reply.decide;
    reply.error = { code: grpc.status.INTERNAL, message: String(err && err.stack ? err.stack : err) };
  }
  return reply;
}

async function gatewayOf(arena) {
  const response = await fetch(`${arena.replace(/\/+$/, "")}/api/v1/`);
  const body = await response.json();
  if (!body.link || !body.link.address) throw new Error(`the arena at ${arena} advertises no gateway`);
  return body.link.address;
}

async function connect() {
  const arena = option("arena", process.env.TONK_ARENA || "");
  const token = option("token", process.env.TONK_TOKEN || "");
  const name = option("name", INFO.name);
  const capacity = Number(option("capacity", "4"));
  if (!token || (!arena && !option("link", ""))) {
    console.error("--connect needs --token (or TONK_TOKEN) and --arena (or TONK_ARENA)");
    process.exit(2);
  }
  const address = option("link", "") || (await gatewayOf(arena));
  let backoff = 500;
  let stopping = false;
  let current = null;
  const stop = () => {
    stopping = true;
    if (current) current.cancel();
    setTimeout(() => process.exit(0), 500).unref();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const open = () => {
    const client = new proto.tonk.v1.BotLinkService(address, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${token}`);
    const stream = client.Connect(metadata); // no deadline: the stream is the whole session
    current = stream;
    stream.write({ hello: { bot_name: name, capacity, info: INFO } });
    stream.on("data", (message) => {
      if (message.message === "welcome") {
        backoff = 500;
        console.log(`${name} connected to ${address} (${message.welcome.connection_id})`);
      } else if (message.message === "call") {
        stream.write({ reply: answer(message.call) });
      } else if (message.message === "notice") {
        console.warn(`arena notice ${message.notice.kind}: ${message.notice.message}`);
      }
    });
    stream.on("error", (err) => {
      client.close();
      if (stopping) return;
      if (FINAL.has(err.code)) {
        console.error(`the arena refused ${name}: ${err.details || err.message}`);
        process.exit(1);
      }
      const wait = backoff * (0.5 + Math.random() / 2);
      console.warn(`link lost (${err.details || err.message}); reconnecting in ${Math.round(wait)} ms`);
      setTimeout(open, wait);
      backoff = Math.min(backoff * 2, 30000);
    });
    stream.on("end", () => stream.end());
  };
  open();
}

if (require.main === module) {
  if (process.argv.includes("--connect")) {
    connect().catch((err) => {
      console.error(String(err && err.message ? err.message : err));
      process.exit(1);
    });
  } else {
    main();
  }
}

module.exports = { decide, points };

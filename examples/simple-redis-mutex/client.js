#!/usr/bin/env node
// A locksim client in Node.js: the npm package simple-redis-mutex (over
// node-redis 5, which it requires) as a lock of its own,
// simple-redis-mutex, like locksim's redis (one node), speaking locksim
// worker protocol v2 (docs/protocol.md in the locksim repository), with
// the npm package pg for the protected storage. The harness starts it as
// a scenario's client_cmd, e.g.
//
//   client_cmd: [node, examples/simple-redis-mutex/client.js]
//
// The library's lease is SET NX PX with a random value, released by a
// token-checked script; its fencing token is an INCR on the same node,
// sent after the SET as a request of its own (README.md). The protocol's
// plumbing (lines, clock, storage, fences) is ../node-common/locksim.js.
// stdout carries protocol lines only; logs go to stderr.
"use strict";

const L = require("../node-common/locksim");

const { event, mono, noLease } = L;

const [redis, mutex, pg] = L.load("simple-redis-mutex", __dirname, ["redis", "simple-redis-mutex", "pg"]);

const versionOf = (pkg) => L.versionOf(__dirname, pkg);
const log = (msg) => process.stderr.write(`simple-redis-mutex: ${msg}\n`);

const OWN = { name: "simple-redis-mutex", like: "redis", servers: "redis" };

// What the hello says this client covers (docs/protocol.md, "The hello
// line"): its own lock, like redis, on Redis. The fence redis-incr is the
// library's own fencing token (an INCR on the node after the grant), and
// postgres the storage's sequence. No extend and no watchdog: the
// library's refreshTimeout renews only to the acquire's timeout and says
// nothing of its outcome.
const hello = {
  protocol: L.PROTOCOL,
  name: `simple-redis-mutex: simple-redis-mutex ${versionOf("simple-redis-mutex")}, redis (node-redis) ${versionOf("redis")}, pg ${versionOf("pg")}, Node ${process.version}`,
  locks: L.PROTOCOL >= 2 ? [OWN] : ["redis"],
  ops: L.PROTOCOL >= 2 ? ["acquire", "release", "write"] : ["acquire", "release"],
};
// What simple-redis-mutex promises its users, each in its own words at
// 3.0.0, word for word (markdown's links and backticks left out), with the address that
// says so (README.md, "What the library promises"). Not the validity of a
// lease at acquire: "Application logic should not depend on lock timeout".
const SRC = "https://github.com/AmrSaber/simple-redis-mutex/blob/v3.0.0/readme.md";
hello.promises = [
  {
    property: "exclusion",
    quote: "Implements distributed mutex lock using redis as described in redis docs.",
    source: `${SRC}#simple-redis-mutex`,
  },
  {
    property: "token-release",
    quote:
      "It's also taken into consideration that an expired lock cannot be released so it does not release the lock from another holder.",
    source: `${SRC}#double-releasing`,
  },
  {
    property: "fencing-token",
    quote:
      "A fencing token is an increasing number that is used to identify the order at which locks are acquired, and is used for further safety with writes in distributed systems.",
    source: `${SRC}#fencing-token`,
  },
  {
    property: "expiry",
    quote: "Lock timeout is used to expire the lock if it's not been released before timeout. This is to prevent crashed processes holding the lock indefinitely.",
    source: `${SRC}#lock`,
  },
  {
    property: "prompt-release",
    quote: "Also, Redis Pub/Sub is used so that released lock can be immediately acquired by another waiting process instead of depending on polling.",
    source: `${SRC}#simple-redis-mutex`,
  },
  {
    property: "progress",
    quote: "lock: which attempts to acquire the lock in a blocking way, if lock is already acquired, it blocks until lock is available.",
    source: `${SRC}#usage`,
  },
];
if (L.PROTOCOL >= 2) {
  Object.assign(hello, {
    storage_modes: L.STORAGE_MODES,
    fences: ["postgres", "redis-incr"],
    acquire_wait: true, // lock() with failAfter = the command's wait
  });
}

// ---- state ------------------------------------------------------------------

let cfg = null; // init's fields
let node = null; // {name, redis}: the one node
let timeoutMs = 200; // the per-request bound (init's node_timeout)
const leases = new Map(); // key -> {release, token, fence}
let store = null; // the protected storage (L.Storage), when init names one

// bounded settles p within timeoutMs, else rejects.
function bounded(p, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${timeoutMs}ms`)), timeoutMs);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// ---- commands ---------------------------------------------------------------

async function init(id, cmd) {
  const i = cmd.init;
  // init names the lock by the name the hello gave it.
  L.checkInit("simple-redis-mutex", i, { ...hello, locks: [OWN.name, "redis"] });
  cfg = i;
  const c = i.config || {};
  if (!c.redis || c.redis.length !== 1) throw new Error(`simple-redis-mutex runs on one Redis node, not ${(c.redis || []).length}`);
  if (c.node_timeout) timeoutMs = L.nsToMs(c.node_timeout);
  const n = c.redis[0];
  const at = n.addr.lastIndexOf(":");
  const client = redis.createClient({
    socket: {
      host: n.addr.slice(0, at),
      port: Number(n.addr.slice(at + 1)),
      connectTimeout: Math.max(timeoutMs, 1000),
      reconnectStrategy: () => 20,
    },
    disableClientInfo: true,
  });
  client.on("error", (err) => log(`node ${n.name}: ${err.message}`));
  node = { name: n.name, redis: client };
  try {
    await client.connect();
    // The library's first tryLock opens its subscriber (a duplicate
    // connection, for its release notices): open it before the story
    // starts, with a try on a lock no story takes, set here first so that
    // the try fails and draws no fencing token from the library's counter.
    await client.set("@simple-redis-mutex:lock-locksim:warm-up", "locksim", { PX: 5000 });
    await mutex.tryLock(client, "locksim:warm-up", { timeout: 1000 });
  } catch (err) {
    throw new Error(`node ${n.name} (${n.addr}): ${err.message}`);
  }
  if (i.storage) {
    store = new L.Storage(pg, i.storage, i.storage_mode, log);
    await store.conn();
  }
}

// acquire is tryLock (one attempt: SET NX PX, then, if granted, INCR of
// the library's fencing counter) or, with the command's wait, lock with
// failAfter = the wait (pollingInterval 50 ms, besides the library's
// release notices).
async function acquire(id, cmd) {
  const key = cmd.key;
  const ttlMs = L.nsToMs(cmd.ttl);
  event(id, { type: "invoke", op: "acquire", key, ttl: cmd.ttl });
  const r = node.redis;
  // The value the library sets is its lease's token; the view of the
  // client below reads it from the SET that won, and the lease's end is
  // the TTL counted from the moment that SET was sent (the library keeps
  // no lease time of its own: its caller knows the TTL it asked for).
  let value = null;
  let start = 0n;
  const view = Object.create(r);
  view.set = (k, v, o) => {
    const sent = mono();
    return r.set(k, v, o).then((res) => {
      if (res === "OK") [value, start] = [v, sent];
      return res;
    });
  };
  let got, release;
  try {
    if (cmd.wait) {
      release = await bounded(mutex.lock(view, key, { timeout: ttlMs, pollingInterval: 50, failAfter: L.nsToMs(cmd.wait) }), "lock");
      got = true;
    } else {
      [got, release] = await bounded(mutex.tryLock(view, key, { timeout: ttlMs }), "tryLock");
    }
  } catch (err) {
    if (/could not be acquired/.test(err.message)) {
      event(id, { type: "fail", op: "acquire", key, reason: "held", detail: `simple-redis-mutex: ${err.message}` });
    } else {
      event(id, { type: "info", op: "acquire", key, detail: `simple-redis-mutex: ${err.message}` });
    }
    return;
  }
  if (!got) {
    event(id, { type: "fail", op: "acquire", key, reason: "held", detail: "simple-redis-mutex: tryLock: SET NX found the key set" });
    return;
  }
  let t = mono();
  let fence = 0;
  if (cfg.fence === "redis-incr") fence = release.fencingToken;
  else if (cfg.fence) {
    try {
      fence = await L.drawFence(cfg.fence, store, [node], [node.name]);
    } catch (err) {
      await release().catch(() => {});
      event(id, { type: "info", op: "acquire", key, detail: `fencing token: ${err.message} (lock released)` });
      return;
    }
    t = mono();
  }
  const token = String(value);
  leases.set(key, { release, token, fence });
  const e = { t, type: "ok", op: "acquire", key, token, ttl: cmd.ttl, nodes: [node.name], lease_end: start + BigInt(cmd.ttl) };
  if (fence) e.fence = fence;
  event(id, e);
}

// release calls the release function: the library's script deletes the
// key (and publishes a notice) only if it holds this lease's value. It
// answers nothing either way, so the client asks the node first whether
// the key still holds the value, for the event's outcome; the library's
// own release decides.
async function release(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.token : undefined;
  event(id, { type: "invoke", op: "release", key, token });
  if (!l) return noLease(id, "release", key);
  leases.delete(key);
  let held;
  try {
    held = (await bounded(node.redis.get(`@simple-redis-mutex:lock-${key}`), "GET")) === l.token;
    await bounded(l.release(), "release");
  } catch (err) {
    event(id, { type: "info", op: "release", key, token, detail: `simple-redis-mutex: ${err.message}` });
    return;
  }
  if (held) event(id, { type: "ok", op: "release", key, token });
  else event(id, { type: "fail", op: "release", key, token, reason: "not-held", detail: "simple-redis-mutex: the key no longer held this lease's value" });
}

function write(id, cmd) {
  return L.write(id, cmd, leases.get(cmd.key), store, null);
}

// ---- main -------------------------------------------------------------------

L.serve("simple-redis-mutex", hello, { init, acquire, release, write }, () => {
  if (node) node.redis.destroy();
  if (store) store.close();
});

#!/usr/bin/env node
// A locksim client in Node.js: the npm package redis-lock (over
// node-redis 4, which it requires) as a lock of its own, redis-lock, like
// locksim's redis (one node), speaking locksim worker protocol v2
// (docs/protocol.md in the locksim repository), with the npm package pg
// for the protected storage. The harness starts it as a scenario's
// client_cmd, e.g.
//
//   client_cmd: [node, examples/redis-lock/client.js]
//
// redis-lock stores no token: the key's value is the lease's end by the
// taker's Date.now(), and the release deletes the key if Date.now() is
// still before that end, whoever holds it (README.md). The protocol's
// plumbing (lines, clock, storage, fences) is ../node-common/locksim.js.
// stdout carries protocol lines only; logs go to stderr.
"use strict";

const L = require("../node-common/locksim");

const { event, mono, noLease } = L;

const [redis, redisLock, pg] = L.load("redis-lock", __dirname, ["redis", "redis-lock", "pg"]);

const versionOf = (pkg) => L.versionOf(__dirname, pkg);
const log = (msg) => process.stderr.write(`redis-lock: ${msg}\n`);

// RETRY_DELAY is the library's default pause between two attempts of an
// acquire that waits (redis-lock's DEFAULT_RETRY_DELAY).
const RETRY_DELAY = 50;

// What the hello says this client covers (docs/protocol.md, "The hello
// line"): its own lock, like redis, on Redis; no extend (the library has
// none) and no watchdog.
const hello = {
  protocol: L.PROTOCOL,
  name: `redis-lock: redis-lock ${versionOf("redis-lock")}, redis (node-redis) ${versionOf("redis")}, pg ${versionOf("pg")}, Node ${process.version}`,
  locks: L.PROTOCOL >= 2 ? [{ name: "redis-lock", like: "redis", servers: "redis" }] : ["redis"],
  ops: L.PROTOCOL >= 2 ? ["acquire", "release", "write"] : ["acquire", "release"],
};
// What redis-lock promises its users, each in its own words at 1.0.0,
// word for word (markdown's backticks left out), with the address that
// says so (README.md, "What the library promises"). The repository has no tags: the address is the
// commit that made 1.0.0 ("semver major bump").
const SRC = "https://github.com/errorception/redis-lock/blob/89b6acfc1fca2c5d5ae3e2313227976ce5cf85dc/README.md";
hello.promises = [
  {
    property: "exclusion",
    quote: "It's not possible for two functions to acquire the same lock at any point in time, except if the timeout is breached.",
    source: `${SRC}#details`,
  },
  {
    property: "token-release",
    quote: "Returns a done async function which releases the lock (or do nothing if timeout has already released it)",
    source: `${SRC}#locklockname-timeout--5000-done`,
  },
  {
    property: "expiry",
    quote: "The maximum time (in ms) to hold the lock for. If this time is exceeded, the lock is automatically released to prevent deadlocks.",
    source: `${SRC}#locklockname-timeout--5000-done`,
  },
  {
    property: "prompt-release",
    quote:
      "If two functions happen to ask for a lock simultaneously, the execution of the second function is deferred until the first function has released its lock or has timed out.",
    source: `${SRC}#details`,
  },
  {
    property: "progress",
    quote:
      "If two functions happen to ask for a lock simultaneously, the execution of the second function is deferred until the first function has released its lock or has timed out.",
    source: `${SRC}#details`,
  },
];
if (L.PROTOCOL >= 2) {
  Object.assign(hello, {
    storage_modes: L.STORAGE_MODES,
    fences: ["postgres", "redis-incr"],
    check_lease: true,
    client_clock: true,
    acquire_wait: true, // the library's own retries, every RETRY_DELAY, for the command's wait
  });
}

// ---- state ------------------------------------------------------------------

let cfg = null; // init's fields
let node = null; // {name, redis}: the one node
let timeoutMs = 200; // the per-request bound (init's node_timeout)
const leases = new Map(); // key -> {done, token, end, fence}
let store = null; // the protected storage (L.Storage), when init names one

// bounded settles p within timeoutMs, else rejects: node-redis 4 has no
// per-command timeout. The command stays in node-redis's queue and is
// still answered in order; only the wait for it is cut short.
function bounded(p) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs}ms`)), timeoutMs);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// leaseEnd is the CLOCK_MONOTONIC instant of a lease's end by Date.now()
// (the value redis-lock stored), as the two clocks stand now.
function leaseEnd(end) {
  return mono() + BigInt(Math.round(end - Date.now())) * 1000000n;
}

// ---- commands ---------------------------------------------------------------

async function init(id, cmd) {
  const i = cmd.init;
  // init names the lock by the name the hello gave it.
  L.checkInit("redis-lock", i, { ...hello, locks: hello.locks.map((l) => l.name || l) });
  cfg = i;
  const c = i.config || {};
  if (!c.redis || c.redis.length !== 1) throw new Error(`redis-lock runs on one Redis node, not ${(c.redis || []).length}`);
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
  } catch (err) {
    throw new Error(`node ${n.name} (${n.addr}): ${err.message}`);
  }
  if (i.storage) {
    store = new L.Storage(pg, i.storage, i.storage_mode, log);
    await store.conn();
  }
}

// acquire calls redis-lock's lock(key, ttl), which tries SET
// lock.<key> <Date.now() + ttl + 1> PX ttl NX and, while that fails, tries
// again every RETRY_DELAY for ever. The library is handed a view of the
// client (attempts, below) that sees each attempt's answer: a refusal
// (the key is set) ends the acquire once the command's wait has run out
// (at once without one); an error (a connection a failover closed, say)
// is left to the library's loop for the per-request bound (node_timeout)
// or the wait, whichever is longer, as go-redis retries a request whose
// connection broke. The view then answers the library's next attempt
// with a promise that never settles, which ends its loop.
async function acquire(id, cmd) {
  const key = cmd.key;
  const ttlMs = L.nsToMs(cmd.ttl);
  event(id, { type: "invoke", op: "acquire", key, ttl: cmd.ttl });
  const start = mono();
  const until = start + BigInt(cmd.wait || 0); // for a refusal
  const errUntil = start + BigInt(Math.max(Number(cmd.wait || 0), timeoutMs * 1e6)); // for an error
  const real = node.redis;
  let value = null; // what the winning SET stored: the lease's end
  let last = null; // the last attempt's failure
  let stop = null;
  const view = {
    // redis-lock checks that it was given node-redis 4 by this name.
    get v4() {
      return real.v4;
    },
    set(name, v, opts) {
      if (!stop) return new Promise(() => {});
      return bounded(real.set(name, v, opts)).then(
        (r) => {
          if (r !== null) value = v;
          else {
            last = { reason: "held", detail: `SET ${name} NX: the key exists` };
            if (mono() >= until) stop(last);
          }
          return r;
        },
        (err) => {
          last = { detail: `SET ${name} NX: ${err.message}` };
          if (mono() >= errUntil) stop(last);
          throw err;
        },
      );
    },
    del: (name) => bounded(real.del(name)),
  };
  let done;
  try {
    done = await new Promise((resolve, reject) => {
      stop = (why) => {
        stop = null;
        reject(why);
      };
      redisLock(view, RETRY_DELAY)(key, ttlMs).then(resolve, reject);
    });
  } catch (why) {
    stop = null;
    if (why instanceof Error) why = { detail: why.message };
    // A SET that failed without an answer may have set the key: unknown.
    event(id, { type: why.reason ? "fail" : "info", op: "acquire", key, reason: why.reason, detail: `redis-lock: ${why.detail}` });
    return;
  }
  stop = null;
  let t = mono();
  const end = Number(value);
  let fence = 0;
  if (cfg.fence) {
    try {
      fence = await L.drawFence(cfg.fence, store, [node], [node.name]);
    } catch (err) {
      // No token, no lease: give the lock back, as locksim's Go worker
      // does; the outcome of the acquire is unknown to the story.
      await done().catch(() => {});
      event(id, { type: "info", op: "acquire", key, detail: `fencing token: ${err.message} (lock released)` });
      return;
    }
    t = mono();
  }
  // The lease's token is the value stored: redis-lock has no other.
  const token = String(value);
  leases.set(key, { done, token, end, fence });
  const e = { t, type: "ok", op: "acquire", key, token, ttl: cmd.ttl, nodes: [node.name], lease_end: leaseEnd(end) };
  if (fence) e.fence = fence;
  event(id, e);
}

// release calls the function lock resolved with: DEL lock.<key> when
// Date.now() is before the stored end, nothing otherwise. The DEL
// deletes whatever lease holds the key.
async function release(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.token : undefined;
  event(id, { type: "invoke", op: "release", key, token });
  if (!l) return noLease(id, "release", key);
  leases.delete(key);
  let n;
  try {
    n = await l.done();
  } catch (err) {
    event(id, { type: "info", op: "release", key, token, detail: `redis-lock: DEL: ${err.message}` });
    return;
  }
  if (n === undefined) {
    event(id, { type: "fail", op: "release", key, token, reason: "expired", detail: "redis-lock: Date.now() is past the lease's end, so it sent nothing" });
  } else if (Number(n) > 0) {
    event(id, { type: "ok", op: "release", key, token, detail: "redis-lock: DEL deleted the key (whoever held it)" });
  } else {
    event(id, { type: "fail", op: "release", key, token, reason: "not-held", detail: "redis-lock: DEL found no key" });
  }
}

// stillHeld is the careful client's check before it writes, by the
// library's own measure, the one its release uses: Date.now() before the
// stored end. It returns why the lease ran out, or null.
function stillHeld(key) {
  return (l) => {
    if (leases.get(key) !== l) return "the lease is gone";
    if (l.end > Date.now()) return null;
    return "the lease had run out by redis-lock's end (Date.now())";
  };
}

function write(id, cmd) {
  return L.write(id, cmd, leases.get(cmd.key), store, cfg.check_lease ? stillHeld(cmd.key) : null);
}

// ---- main -------------------------------------------------------------------

L.serve("redis-lock", hello, { init, acquire, release, write }, () => {
  if (node) node.redis.disconnect().catch(() => {});
  if (store) store.close();
});

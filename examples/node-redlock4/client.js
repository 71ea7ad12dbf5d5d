#!/usr/bin/env node
// A locksim client in Node.js: the npm package redlock 4 (the version of
// its `latest` tag, the one most Node.js code runs; over ioredis) as
// locksim's lock redlock (five nodes) and redis (one node, the same
// algorithm), speaking locksim worker protocol v2 (docs/protocol.md in
// the locksim repository), with the npm package pg for the protected
// storage. The harness starts it as a scenario's client_cmd, e.g.
//
//   client_cmd: [node, examples/node-redlock4/client.js]
//
// redlock 4's API is not v5's (../node-common/redlock.js): lock(resource,
// ttl) and lockWithOptions, Lock.unlock and Lock.extend, one LockError
// that says neither how each node voted nor why, and no auto-extension.
// So this file keeps its own account of the votes (below) and has no
// watchdog. The protocol's plumbing (lines, clock, storage, fences, the
// per-node connections) is ../node-common/locksim.js. stdout carries
// protocol lines only; logs go to stderr.
"use strict";

const L = require("../node-common/locksim");

const { event, mono, noLease } = L;

const [Redis, Redlock, pg] = L.load("node-redlock4", __dirname, ["ioredis", "redlock", "pg"]);

const { LockError } = Redlock;
const versionOf = (pkg) => L.versionOf(__dirname, pkg);
const log = (msg) => process.stderr.write(`node-redlock4: ${msg}\n`);

// Redlock's settings. retryCount 0: try once, as every lock of locksim
// does (the package's default is 10 retries). The rest are the package's
// defaults, spelled out: the drift allowance is driftFactor * ttl + 2 ms.
const SETTINGS = { driftFactor: 0.01, retryCount: 0, retryDelay: 200, retryJitter: 100 };

// What the hello says this client covers (docs/protocol.md, "The hello
// line"). redlock 4 has no auto-extension, so no watchdog.
const hello = {
  protocol: L.PROTOCOL,
  name: `node-redlock4: redlock ${versionOf("redlock")}, ioredis ${versionOf("ioredis")}, pg ${versionOf("pg")}, Node ${process.version}`,
  locks: ["redlock", "redis"], // Redlock over N nodes; N = 1 is the single-node lock
  ops: L.PROTOCOL >= 2 ? ["acquire", "release", "extend", "write"] : ["acquire", "release", "extend"],
};
// What redlock 4.2.0 promises its users, each in its own words at that
// version, word for word (markdown's links left out), with the address that
// says so (README.md, "What the library promises").
const SRC = "https://github.com/mike-marcacci/node-redlock/blob/v4.2.0";
hello.promises = [
  {
    property: "exclusion",
    quote:
      "This is a node.js implementation of the redlock algorithm for distributed redis locks. It provides strong guarantees in both single-redis and multi-redis environments, and provides fault tolerance through use of multiple independent redis instances or clusters.",
    source: `${SRC}/README.md#redlock`,
  },
  {
    property: "token-release",
    quote: "Only remove entries for *this* lock value.",
    source: `${SRC}/redlock.js#L26-L38`,
  },
  {
    property: "validity-at-acquire",
    quote: "SUCCESS: there is concensus and the lock is not expired",
    source: `${SRC}/redlock.js#L413-L420`,
  },
  {
    property: "prompt-release",
    quote: "This method unlocks the provided lock from all servers still persisting it.",
    source: `${SRC}/redlock.js#L225-L230`,
  },
  {
    property: "expiry",
    quote: "It is safe to re-attempt an unlock or to ignore the error, as the lock will automatically expire after its timeout.",
    source: `${SRC}/redlock.js#L225-L230`,
  },
];
if (L.PROTOCOL >= 2) {
  Object.assign(hello, {
    storage_modes: L.STORAGE_MODES,
    fences: L.FENCES,
    check_lease: true,
    client_clock: true,
    acquire_wait: true, // the command's wait as retryCount (below)
  });
}

// ---- state ------------------------------------------------------------------

let cfg = null; // init's fields
let redlock = null;
let nodes = []; // [{name, redis}] in the order the harness gave them
const leases = new Map(); // key -> {lock, token, fence}
let store = null; // the protected storage (L.Storage), when init names one

// ---- the votes ----------------------------------------------------------------

// redlock 4 counts votes inside its callbacks and tells the caller only
// that it won or lost. Votes wraps redlock's one door to the servers,
// _executeScript (redlock.js, Redlock.prototype._executeScript), to keep
// each node's answer: tallies[script] is the latest round of that script
// (lockScript, extendScript, unlockScript), one call per server, sent
// together (servers.forEach), so a round full of calls starts the next.
// Each entry of a round's answers is {err, res} by client. Nothing is
// changed in what is sent or in how redlock decides.
function countVotes(r) {
  const execute = r._executeScript;
  r.tallies = {};
  r._executeScript = function (server, name, args, callback) {
    let t = this.tallies[name];
    if (!t || t.sent === this.servers.length) t = this.tallies[name] = { sent: 0, answers: new Map() };
    t.sent++;
    return execute.call(this, server, name, args, (err, res) => {
      t.answers.set(server, { err, res });
      callback(err, res);
    });
  };
}

// round is the latest round of script, answered by every node, as votes:
// the names of the nodes that voted for (redlock's own test: a reply equal
// to the number of resources, here 1), and why each other node did not.
function round(script) {
  const t = redlock.tallies[script];
  const out = { for: [], against: new Map(), silent: 0 };
  if (!t) return out;
  for (const n of nodes) {
    const a = t.answers.get(n.redis);
    if (!a) continue;
    if (a.res === 1 || a.res === "1") out.for.push(n.name);
    else if (a.err) {
      out.against.set(n.name, a.err.message);
      out.silent++;
    } else out.against.set(n.name, script === "lockScript" ? "locked" : "not held");
  }
  return out;
}

function describe(v) {
  const parts = [];
  if (v.for.length) parts.push(`for: ${v.for.join(",")}`);
  for (const [name, why] of v.against) parts.push(`${name}: ${why}`);
  return parts.join("; ");
}

// leaseEnd is the CLOCK_MONOTONIC instant at which redlock's lease ends.
// redlock times a lease by Date.now() (expiration = start + ttl - drift,
// in wall-clock ms): that instant, as the two clocks stand now.
function leaseEnd(lock) {
  return mono() + BigInt(Math.round(lock.expiration - Date.now())) * 1000000n;
}

// ---- commands ---------------------------------------------------------------

async function init(id, cmd) {
  const i = cmd.init;
  L.checkInit("node-redlock4", i, hello);
  cfg = i;
  nodes = L.connectNodes(Redis, i.config, log);
  redlock = new Redlock(
    nodes.map((n) => n.redis),
    SETTINGS,
  );
  redlock.on("clientError", (err) => log(`redlock clientError: ${err.message}`));
  countVotes(redlock);
  // Open every connection and load redlock's three scripts (sent by
  // EVALSHA, with EVAL on NOSCRIPT) before the story starts, so that the
  // first acquire pays for neither the dial nor the scripts inside the
  // per-node timeout; the same for the storage's connection.
  await Promise.all(
    nodes.map((n) =>
      L.openNode(n, async (redis) => {
        for (const s of Object.values(redlock.scripts)) await redis.script("LOAD", s.value);
      }),
    ),
  );
  if (i.storage) {
    store = new L.Storage(pg, i.storage, i.storage_mode, log);
    await store.conn();
  }
}

// acquire takes key with lock (one attempt) or lockWithOptions (the
// command's wait as retryCount = ceil(wait / retryDelay), 200 ms ± 100 ms
// apart). redlock 4 grants a lock only if a quorum voted for it and its
// expiration (the attempt's Date.now() + ttl - drift) is still ahead of
// Date.now() when the last node has answered (redlock.js, _lock's loop).
async function acquire(id, cmd) {
  const key = cmd.key;
  const ttlMs = L.nsToMs(cmd.ttl);
  event(id, { type: "invoke", op: "acquire", key, ttl: cmd.ttl });
  redlock.tallies = {};
  let lock;
  try {
    if (cmd.wait) lock = await redlock.lockWithOptions(key, ttlMs, { retryCount: Math.ceil(L.nsToMs(cmd.wait) / SETTINGS.retryDelay) });
    else lock = await redlock.lock(key, ttlMs);
  } catch (err) {
    return acquireFailed(id, key, err);
  }
  let t = mono();
  const end = leaseEnd(lock);
  const granted = round("lockScript").for;
  let fence = 0;
  if (cfg.fence) {
    try {
      fence = await L.drawFence(cfg.fence, store, nodes, granted);
    } catch (err) {
      // No token, no lease: give the lock back, as locksim's Go worker
      // does; the outcome of the acquire is unknown to the story.
      let undo = "lock released";
      try {
        await lock.unlock();
      } catch (rerr) {
        undo = `and releasing the lock: ${rerr.message}`;
      }
      event(id, { type: "info", op: "acquire", key, detail: `fencing token: ${err.message} (${undo})` });
      return;
    }
    t = mono();
  }
  leases.set(key, { lock, token: lock.value, fence });
  const e = { t, type: "ok", op: "acquire", key, token: lock.value, ttl: cmd.ttl, nodes: granted, lease_end: end };
  if (fence) e.fence = fence;
  event(id, e);
}

// acquireFailed reports a refused acquire from redlock's LockError and the
// votes of its last attempt: a quorum that voted for a lock whose
// expiration had passed is the validity check's refusal.
function acquireFailed(id, key, err) {
  const t = mono();
  if (!(err instanceof LockError)) {
    event(id, { t, type: "info", op: "acquire", key, detail: `redlock: ${err.message}` });
    return;
  }
  const v = round("lockScript");
  const quorum = Math.floor(nodes.length / 2) + 1;
  let reason = "quorum";
  if (v.for.length >= quorum) reason = "validity";
  else if (v.silent === 0) reason = "held";
  else if (v.silent === nodes.length) reason = "timeout";
  event(id, {
    t,
    type: "fail",
    op: "acquire",
    key,
    reason,
    nodes: v.for.length ? v.for : undefined,
    detail: `redlock: LockError: ${err.message} (${describe(v)})`,
  });
}

// release is Lock.unlock: the unlock script on every node, a quorum of
// deletions or a LockError. In the protocol a release is ok when the
// lease's key was deleted wherever it was still held (at least one node).
async function release(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.token : undefined;
  event(id, { type: "invoke", op: "release", key, token });
  if (!l) return noLease(id, "release", key);
  leases.delete(key);
  redlock.tallies = {};
  try {
    await l.lock.unlock();
    event(id, { type: "ok", op: "release", key, token });
  } catch (err) {
    const t = mono();
    if (!(err instanceof LockError)) {
      event(id, { t, type: "info", op: "release", key, token, detail: `redlock: ${err.message}` });
      return;
    }
    const v = round("unlockScript");
    event(id, {
      t,
      type: v.for.length > 0 ? "ok" : "fail",
      op: "release",
      key,
      token,
      reason: v.for.length > 0 ? undefined : "not-held",
      detail: `redlock: LockError: ${err.message} (${describe(v)})`,
    });
  }
}

// extend is Lock.extend: refused without a request when the lease's
// expiration is behind Date.now() (a LockError whose attempts are 0),
// else the extend script, which sets the key's TTL where it still holds
// this lease's value, under the same quorum and validity rule as an
// acquire.
async function extend(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.token : undefined;
  event(id, { type: "invoke", op: "extend", key, token, ttl: cmd.ttl });
  if (!l) return noLease(id, "extend", key);
  redlock.tallies = {};
  try {
    await l.lock.extend(L.nsToMs(cmd.ttl));
    const t = mono();
    const e = { t, type: "ok", op: "extend", key, token, ttl: cmd.ttl, nodes: round("extendScript").for, lease_end: leaseEnd(l.lock) };
    event(id, e);
  } catch (err) {
    const t = mono();
    if (!(err instanceof LockError)) {
      event(id, { t, type: "info", op: "extend", key, token, detail: `redlock: ${err.message}` });
      return;
    }
    if (err.attempts === 0) {
      event(id, { t, type: "fail", op: "extend", key, token, reason: "expired", detail: `redlock: ${err.message}` });
      return;
    }
    const v = round("extendScript");
    event(id, { t, type: "fail", op: "extend", key, token, reason: "not-held", detail: `redlock: LockError: ${err.message} (${describe(v)})` });
  }
}

// stillHeld is the careful client's check before it writes, by redlock's
// own measure: the lease's expiration (start + ttl - drift, by Date.now())
// is still ahead. It returns why the lease ran out, or null.
function stillHeld(key) {
  return (l) => {
    if (leases.get(key) !== l) return "the lease is gone";
    if (l.lock.expiration > Date.now()) return null;
    return "the lease had run out by redlock's expiration (Date.now())";
  };
}

function write(id, cmd) {
  return L.write(id, cmd, leases.get(cmd.key), store, cfg.check_lease ? stillHeld(cmd.key) : null);
}

// ---- main -------------------------------------------------------------------

L.serve("node-redlock4", hello, { init, acquire, release, extend, write }, () => {
  for (const n of nodes) n.redis.disconnect();
  if (store) store.close();
});

#!/usr/bin/env node
// A locksim client in Node.js: the npm package redis-semaphore (over
// ioredis), its Mutex as locksim's lock redis (one node) and its
// RedlockMutex as lock redlock (five nodes), speaking locksim worker
// protocol v2 (docs/protocol.md in the locksim repository), with the npm
// package pg for the protected storage. The harness starts it as a
// scenario's client_cmd, e.g.
//
//   client_cmd: [node, examples/redis-semaphore/client.js]
//
// stdout carries protocol lines only; logs go to stderr. The protocol's
// plumbing (lines, clock, storage, fences) is ../node-common/locksim.js.
"use strict";

const L = require("../node-common/locksim");

const [Redis, { Mutex, RedlockMutex }, { delIfEqualLua }, { expireIfEqualLua }, pg] = L.load("redis-semaphore", __dirname, [
  "ioredis",
  "redis-semaphore",
  "redis-semaphore/lib/mutex/release",
  "redis-semaphore/lib/mutex/refresh",
  "pg",
]);

const versionOf = (pkg) => L.versionOf(__dirname, pkg);

const log = (msg) => process.stderr.write(`redis-semaphore: ${msg}\n`);
const { event, mono, noLease } = L;

// What this program covers (docs/protocol.md, "The hello line"). No
// extend: redis-semaphore renews a lock only for the lockTimeout it was
// made with (its refresh), never for another ttl. No lease check: the
// library keeps no lease time on the client (isAcquired turns false only
// when a refresh finds the lock gone). No client clock: it reads
// Date.now() only for acquireTimeout, never to time a lease.
const hello = {
  protocol: L.PROTOCOL,
  name: `redis-semaphore: redis-semaphore ${versionOf("redis-semaphore")}, ioredis ${versionOf("ioredis")}, pg ${versionOf("pg")}, Node ${process.version}`,
  locks: ["redis", "redlock"],
  ops: L.PROTOCOL >= 2 ? ["acquire", "release", "write"] : ["acquire", "release"],
};
// What redis-semaphore promises its users, for its Mutex (lock redis) and
// RedlockMutex (lock redlock, "Distributed `Mutex` version", with the
// Mutex's options), each in its own words at 5.8.0, word for word
// (markdown's links and backticks left out), with the address that says
// so (README.md, "What the library promises").
const SRC = "https://github.com/swarthy/redis-semaphore/blob/v5.8.0/README.md";
hello.promises = [
  {
    property: "exclusion",
    quote: "Mutex and Semaphore implementations based on Redis ready for distributed systems",
    source: `${SRC}#redis-semaphore`,
  },
  {
    // RedlockMutex's section points at the Redis page's Redlock
    // algorithm, whose step 3 refuses a majority won after the validity
    // ran out: a promise of its redlock lock only.
    property: "validity-at-acquire",
    quote: "See The Redlock algorithm",
    source: `${SRC}#redlockmutex`,
    locks: ["redlock"],
  },
  {
    property: "token-release",
    quote: "It's safe to always call release, because if lock is no longer belongs to this mutex, .release() will have no effect",
    source: `${SRC}#example-with-lost-lock-handling`,
  },
  {
    property: "renewal",
    quote: "auto-refresh interval; to disable auto-refresh behaviour set 0",
    source: `${SRC}#mutex`,
  },
  {
    property: "loss-notice",
    quote: "called when lock loss is detected due refresh cycle; default onLockLost throws unhandled LostLockError",
    source: `${SRC}#mutex`,
  },
  {
    property: "expiry",
    quote: "time after mutex will be auto released (expired)",
    source: `${SRC}#mutex`,
  },
];
if (L.PROTOCOL >= 2) {
  Object.assign(hello, {
    storage_modes: L.STORAGE_MODES,
    fences: L.FENCES,
    watchdogs: ["token"], // the library's own refresh (refreshInterval): a Lua GET == identifier, then PEXPIRE
    check_lease: false,
    client_clock: false,
  });
}

// ---- state ------------------------------------------------------------------

let cfg = null;
let nodes = []; // [{name, redis}] in init's order
let store = null;
// leases: key -> {mutex, token, fence, watch}: the Mutex or RedlockMutex
// held, its identifier, its fencing token, and with the watchdog the
// acquire's command id (renewals are its notes).
const leases = new Map();

// ---- what each node answered ------------------------------------------------

// The library keeps no account of which node said what: RedlockMutex
// counts its nodes' answers and swallows their errors (catch(() => 0)).
// So each node is handed to it as a recording client: the commands the
// library sends (SET NX, and its two scripts, by EVALSHA or EVAL) go to
// the node's ioredis client unchanged, and each answer is kept, numbered,
// with the kind of request it answered.
let seq = 0;
let answers = []; // {seq, node, kind: "set" | "refresh" | "del", value | err}

function recording(n) {
  const r = n.redis;
  const keep = (kind, p) =>
    p.then(
      (value) => {
        answers.push({ seq: ++seq, node: n.name, kind, value });
        return value;
      },
      (err) => {
        answers.push({ seq: ++seq, node: n.name, kind, err });
        throw err;
      },
    );
  // The scripts: delIfEqual has (key, identifier), expireIfEqual (key,
  // identifier, lockTimeout).
  const kindOf = (args) => (args.length - 2 >= 3 ? "refresh" : "del");
  return {
    options: r.options,
    set: (...a) => keep("set", r.set(...a)),
    evalsha: (...a) => keep(kindOf(a), r.evalsha(...a)),
    eval: (...a) => keep(kindOf(a), r.eval(...a)),
    get: (...a) => r.get(...a),
    zrem: (...a) => r.zrem(...a),
  };
}

// since returns each node's last answer of kind after mark (a seq), in
// init's order: [{node, value | err}].
function since(mark, kind) {
  const last = new Map();
  for (const a of answers) if (a.seq > mark && a.kind === kind) last.set(a.node, a);
  if (answers.length > 10000) answers = answers.filter((a) => a.seq > mark);
  return nodes.filter((n) => last.has(n.name)).map((n) => last.get(n.name));
}

// granted lists the nodes whose answer says yes: SET NX answered OK, a
// script answered 1.
const yes = (a) => !a.err && (a.value === "OK" || Number(a.value) === 1);
const granted = (as) => as.filter(yes).map((a) => a.node);

function describe(as) {
  return as
    .map((a) => `${a.node}: ${a.err ? a.err.message : a.value === null ? "locked" : String(a.value)}`)
    .join("; ");
}

// ---- the library's own refresh (the watchdog) ----------------------------------

// watched makes the lock class report each of its refreshes as a renew
// note of the acquire's command. Lock._processRefresh, the library's
// setInterval callback, calls this._refresh(): true renews; false makes it
// stop refreshing and call onLockLost. A refresh that throws (the single
// node's script timing out) escapes _processRefresh as an unhandled
// rejection, which would end the process; here the note says so, and the
// refresh is taken as failed to answer (the lease kept, the next refresh
// tried), as in a program that handles unhandled rejections.
function watched(Base) {
  return class extends Base {
    async _refresh() {
      const l = this.locksim;
      if (!l) return super._refresh();
      const mark = seq;
      const note = { type: "note", op: "renew", key: l.key, token: this.identifier };
      let ok;
      try {
        ok = await super._refresh();
      } catch (err) {
        note.t = mono();
        note.reason = err.message === "Command timed out" ? "timeout" : undefined;
        note.nodes = granted(since(mark, "refresh"));
        note.detail = `redis-semaphore refresh: ${err.message} (unhandled by the library: kept, refreshed again in ${this._refreshTimeInterval}ms)`;
        event(l.id, note);
        return true;
      }
      note.t = mono();
      const as = since(mark, "refresh");
      note.nodes = granted(as);
      if (ok) {
        note.ttl = BigInt(this._acquireOptions.lockTimeout) * 1000000n;
        note.detail = `redis-semaphore refresh: PEXPIRE ${this._acquireOptions.lockTimeout}ms where the key holds the identifier (${describe(as)})`;
      } else {
        note.reason = "not-held";
        note.detail = `redis-semaphore refresh: lock lost (${describe(as)})`;
      }
      event(l.id, note);
      return ok;
    }
  };
}

const WatchedMutex = watched(Mutex);
const WatchedRedlockMutex = watched(RedlockMutex);

// ---- commands -----------------------------------------------------------------

async function init(id, cmd) {
  const i = cmd.init;
  L.checkInit("redis-semaphore", i, hello);
  const want = i.lock === "redis" ? 1 : null;
  nodes = L.connectNodes(Redis, i.config, log);
  if (want && nodes.length !== want) throw new Error(`lock redis runs on one Redis node, got ${nodes.length}`);
  cfg = i;
  for (const n of nodes) n.client = recording(n);
  // Open every connection and run the library's two scripts once (on a
  // key no story uses), so that the first acquire pays for neither the
  // dial nor the NOSCRIPT round trip.
  await Promise.all(
    nodes.map((n) =>
      L.openNode(n, async (redis) => {
        await delIfEqualLua(redis, ["locksim:warm-up", "-"]);
        await expireIfEqualLua(redis, ["locksim:warm-up", "-", 1]);
      }),
    ),
  );
  if (i.storage) {
    store = new L.Storage(pg, i.storage, i.storage_mode, log);
    await store.conn();
  }
}

// newMutex makes the library's lock for one acquire: one attempt
// (acquireAttemptsLimit 1, and no wait after it: retryInterval 0), the
// story's ttl as lockTimeout, and the library's auto-refresh only with
// the story's watchdog (refreshInterval 0 turns it off; the library's
// default refreshes every 0.8 x lockTimeout).
function newMutex(key, ttlMs, onLockLost) {
  const every = cfg.watchdog ? Math.max(1, Math.round((cfg.watchdog_every ? Number(cfg.watchdog_every) / 1e6 : ttlMs / 3))) : 0;
  const options = { lockTimeout: ttlMs, acquireAttemptsLimit: 1, retryInterval: 0, refreshInterval: every, onLockLost };
  if (cfg.lock === "redis") return new WatchedMutex(nodes[0].client, key, options);
  return new WatchedRedlockMutex(
    nodes.map((n) => n.client),
    key,
    options,
  );
}

async function acquire(id, cmd) {
  const key = cmd.key;
  const ttlMs = L.nsToMs(cmd.ttl);
  const start = mono();
  event(id, { t: start, type: "invoke", op: "acquire", key, ttl: cmd.ttl });
  let lease = null;
  // onLockLost: a refresh found the lock gone; the note said so. The
  // client's belief ends (the library stops refreshing); a later write
  // is no-lease. (The library's default rethrows the LostLockError from
  // its timer: an uncaught exception.)
  const m = newMutex(key, ttlMs, () => {
    if (lease && leases.get(key) === lease) leases.delete(key);
  });
  const mark = seq;
  let ok;
  try {
    ok = await m.tryAcquire();
  } catch (err) {
    // The single node's SET failed (a timeout, a dropped connection): it
    // may have taken effect, and the library does not undo it.
    event(id, { type: "info", op: "acquire", key, detail: `redis-semaphore: ${err.message}` });
    return;
  }
  let t = mono();
  const as = since(mark, "set");
  const nodesFor = granted(as);
  if (!ok) {
    const silent = as.filter((a) => a.err).length;
    const reason = silent === 0 ? "held" : silent === as.length ? "timeout" : "quorum";
    event(id, {
      t,
      type: "fail",
      op: "acquire",
      key,
      reason,
      nodes: nodesFor.length ? nodesFor : undefined,
      detail: `redis-semaphore: not acquired (${describe(as)})${cfg.lock === "redlock" ? "; the library deleted its partial grants" : ""}`,
    });
    return;
  }
  let fence = 0;
  if (cfg.fence) {
    try {
      fence = await L.drawFence(cfg.fence, store, nodes, nodesFor);
    } catch (err) {
      // No token, no lease: give the lock back, as locksim's Go worker
      // does; the outcome of the acquire is unknown to the story.
      let undo = "lock released";
      try {
        await m.release();
      } catch (rerr) {
        undo = `and releasing the lock: ${rerr.message}`;
      }
      event(id, { type: "info", op: "acquire", key, detail: `fencing token: ${err.message} (${undo})` });
      return;
    }
    t = mono();
  }
  lease = { mutex: m, token: m.identifier, fence, key };
  leases.set(key, lease);
  if (cfg.watchdog) m.locksim = { id, key };
  const e = { t, type: "ok", op: "acquire", key, token: m.identifier, ttl: cmd.ttl, nodes: nodesFor };
  if (fence) e.fence = fence;
  if (cfg.watchdog) {
    // With a watchdog the client believes it holds the lock until it
    // releases it, or a refresh finds it gone.
    e.detail = `redis-semaphore: refreshed every ${m._refreshTimeInterval}ms until released`;
  } else {
    // The library keeps no lease time of its own: the lease lasts the
    // lockTimeout, counted from before the SET was sent (for RedlockMutex
    // too: it neither subtracts the time the quorum took nor a drift).
    e.lease_end = start + BigInt(cmd.ttl);
  }
  event(id, e);
}

async function release(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.token : undefined;
  event(id, { type: "invoke", op: "release", key, token });
  if (!l) return noLease(id, "release", key);
  leases.delete(key);
  l.mutex.locksim = null; // a refresh still in flight is the library's, not a renewal to report
  const mark = seq;
  try {
    // release stops the refresh, then deletes the key where it holds the
    // identifier (RedlockMutex: on every node, errors swallowed). It
    // reports nothing: the answers say whether any node still held it.
    await l.mutex.release();
  } catch (err) {
    event(id, { type: "info", op: "release", key, token, detail: `redis-semaphore: ${err.message}` });
    return;
  }
  const as = since(mark, "del");
  const freed = granted(as);
  const answered = as.filter((a) => !a.err).length;
  const e = { type: "ok", op: "release", key, token, detail: `redis-semaphore: release (${describe(as)})` };
  // As locksim's Redlock: not held when no node that answered held it;
  // unknown when none answered.
  if (freed.length === 0) {
    if (answered > 0) Object.assign(e, { type: "fail", reason: "not-held" });
    else e.type = "info";
  }
  event(id, e);
}

function write(id, cmd) {
  return L.write(id, cmd, leases.get(cmd.key), store, null);
}

L.serve("redis-semaphore", hello, { init, acquire, release, write }, () => {
  for (const l of leases.values()) l.mutex.stopRefresh();
  for (const n of nodes) n.redis.disconnect();
  if (store) store.close();
});

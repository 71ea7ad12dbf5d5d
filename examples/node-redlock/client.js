#!/usr/bin/env node
// A locksim client in Node.js: the npm package redlock (v5, over ioredis)
// speaking locksim worker protocol v2 (docs/protocol.md in the locksim
// repository), with the npm package pg for the protected storage. The
// harness starts it as a scenario's client_cmd, e.g.
//
//   client_cmd: [node, examples/node-redlock/client.js]
//
// It prints its hello line, reads one command a line on stdin (init, then
// acquire, release, extend, write) and answers with history events stamped
// with process.hrtime.bigint(), which on Linux is CLOCK_MONOTONIC in
// nanoseconds (libuv's uv_hrtime), the clock the harness stamps with.
// stdout carries protocol lines only; logs go to stderr.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

let Redis, Redlock, ExecutionError, ResourceLockedError, pg;
try {
  Redis = require("ioredis");
  const redlock = require("redlock");
  Redlock = redlock.default;
  ExecutionError = redlock.ExecutionError;
  ResourceLockedError = redlock.ResourceLockedError;
  pg = require("pg");
} catch (err) {
  // No hello line: the harness reports that this program exited before
  // it, quoting this line.
  process.stderr.write(
    `node-redlock: error: cannot load redlock, ioredis and pg (${err.message}); ` +
      `install them with: npm ci --prefix ${path.relative(process.cwd(), __dirname) || "."}\n`,
  );
  process.exit(1);
}

// versionOf reads an installed package's version (redlock's package.json
// is not among its exports, so it is read from the file).
function versionOf(pkg) {
  try {
    const file = path.join(__dirname, "node_modules", pkg, "package.json");
    return JSON.parse(fs.readFileSync(file, "utf8")).version.replace(/^v/, "");
  } catch {
    return "?";
  }
}

// Redlock's settings. retryCount 0: try once, as every lock of locksim
// does (a step is one attempt; the npm package's default is 10 retries,
// 200 ms apart, with 100 ms of jitter). The rest are the package's
// defaults, spelled out: the drift allowance is driftFactor * ttl + 2 ms.
// automaticExtensionThreshold is set per lease by the watchdog (below).
const SETTINGS = {
  driftFactor: 0.01,
  retryCount: 0,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500,
};

// What the hello says this client covers (docs/protocol.md, "The hello
// line"). A harness that speaks only v1 (LOCKSIM_PROTOCOL=1) is greeted
// with a v1 hello: acquire, release and extend.
const HARNESS = Number(process.env.LOCKSIM_PROTOCOL || "1");
const PROTOCOL = HARNESS >= 2 ? 2 : 1;
const LOCKS = ["redlock", "redis"]; // Redlock over N nodes; N = 1 is the single-node lock
const OPS = PROTOCOL >= 2 ? ["acquire", "release", "extend", "write"] : ["acquire", "release", "extend"];
const STORAGE_MODES = ["plain", "fenced", "fenced-write", "token-cas", "idempotent"];
const FENCES = ["postgres", "redis-incr", "redlock-incr"];
const WATCHDOGS = ["token"]; // redlock's own auto-extension (using)
const FENCE_KEY = "locksim:fence";

// ---- output ---------------------------------------------------------------

// send writes one protocol line. BigInt values (CLOCK_MONOTONIC
// nanoseconds) are written as JSON integers, exactly: a double cannot
// hold them once the machine has been up for 104 days.
function send(obj) {
  const line = JSON.stringify(obj, (k, v) => (typeof v === "bigint" ? `\u0000${v}\u0000` : v)).replace(
    /"\\u0000(-?\d+)\\u0000"/g,
    "$1",
  );
  process.stdout.write(line + "\n");
}

process.stdout.on("error", () => process.exit(0)); // the harness has gone

function log(msg) {
  process.stderr.write(`node-redlock: ${msg}\n`);
}

const mono = () => process.hrtime.bigint();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- state ----------------------------------------------------------------

let cfg = null; // init's fields
let redlock = null;
let nodes = []; // [{name, redis}] in the order the harness gave them
// leases: key -> {lock, fence, watched}: the redlock Lock held (for a
// lease the watchdog renews, the latest one it renewed to), its fencing
// token, and the watchdog's handle ({id, signal, release, done}) or null.
const leases = new Map();
let store = null; // the protected storage (Storage), when init names one

function event(id, e) {
  if (e.t === undefined) e.t = mono();
  send({ id, event: e });
}

// names lists the nodes of a set of clients, in the harness's order.
function names(clients) {
  return nodes.filter((n) => clients.has(n.redis)).map((n) => n.name);
}

// votes is redlock's account of one attempt, once every node has
// answered or timed out: the stats of the last attempt, or null.
async function votes(attempts) {
  if (!attempts || attempts.length === 0) return null;
  return await attempts[attempts.length - 1];
}

// describe says how each node voted, for an event's detail.
function describe(stats) {
  if (!stats) return "";
  const parts = [];
  const f = names(stats.votesFor);
  if (f.length) parts.push(`for: ${f.join(",")}`);
  for (const n of nodes) {
    const err = stats.votesAgainst.get(n.redis);
    if (err) parts.push(`${n.name}: ${err.name === "ResourceLockedError" ? "locked" : err.message}`);
  }
  return parts.join("; ");
}

// silent counts the nodes whose vote against was an error (a timeout, a
// dropped connection) rather than a refusal: they did not answer.
function silent(stats) {
  let n = 0;
  for (const err of stats.votesAgainst.values()) if (!(err instanceof ResourceLockedError)) n++;
  return n;
}

const nsToMs = (ns) => Math.max(1, Math.round(Number(ns) / 1e6));

// leaseEnd is the CLOCK_MONOTONIC instant at which redlock's lease ends.
// redlock times a lease by Date.now() (expiration = start + ttl - drift,
// in wall-clock ms): that instant, as the two clocks stand now.
function leaseEnd(lock) {
  const now = mono();
  return now + BigInt(Math.round(lock.expiration - Date.now())) * 1000000n;
}

// ---- the library's own renewal --------------------------------------------

// LocksimRedlock is redlock, watched: redlock.using acquires through
// this.acquire and auto-extends through lock.extend, which calls
// this.extend; the overrides hand the client the lock using acquired and
// report each of using's extensions as it happens (a renew note). The
// client's own commands call Redlock's methods directly.
class LocksimRedlock extends Redlock {
  async acquire(resources, duration, settings) {
    const lock = await super.acquire(resources, duration, settings);
    if (this.onAcquire) this.onAcquire(lock);
    return lock;
  }

  async extend(existing, duration, settings) {
    const l = leases.get(existing.resources[0]);
    const w = l && l.watched;
    if (!w || l.lock.value !== existing.value) return super.extend(existing, duration, settings);
    const key = existing.resources[0];
    const note = { type: "note", op: "renew", key, token: existing.value };
    try {
      const next = await super.extend(existing, duration, settings);
      note.t = mono();
      const stats = await votes(next.attempts);
      l.lock = next;
      note.ttl = BigInt(duration) * 1000000n;
      note.nodes = stats ? names(stats.votesFor) : undefined;
      note.detail = `redlock using: extended for ${duration}ms`;
      event(w.id, note);
      return next;
    } catch (err) {
      note.t = mono();
      if (err instanceof ExecutionError && err.attempts.length === 0) {
        // redlock would not extend a lease its own (wall) clock says has
        // run out; using gives up and aborts its signal.
        note.reason = "expired";
        note.detail = `redlock using: ${err.message}`;
      } else if (err instanceof ExecutionError) {
        const stats = await votes(err.attempts);
        note.reason = "not-held";
        note.nodes = stats && stats.votesFor.size ? names(stats.votesFor) : undefined;
        note.detail = `redlock using: ExecutionError: ${err.message} (${describe(stats)})`;
      } else {
        note.detail = `redlock using: ${err.message}`;
      }
      event(w.id, note);
      throw err;
    }
  }
}

// acquireWatched takes key for ttlMs with redlock.using, redlock's
// auto-extending lock: it resolves once using has acquired it, with the
// watchdog's handle, and rejects as redlock.acquire would. using extends
// the lease automaticExtensionThreshold before its expiration; the
// threshold is set so that it extends every watchdog_every (redlock needs
// it 100 ms below the ttl, so at most every 100 ms).
function acquireWatched(id, key, ttlMs) {
  const every = cfg.watchdog_every ? Number(cfg.watchdog_every) / 1e6 : ttlMs / 3;
  const threshold = Math.max(0, Math.min(Math.round(ttlMs - every), ttlMs - 100));
  let acquired = null;
  redlock.onAcquire = (lock) => {
    acquired = lock;
  };
  return new Promise((resolve, reject) => {
    const w = { id };
    w.done = redlock.using([key], ttlMs, { automaticExtensionThreshold: threshold }, (signal) => {
      redlock.onAcquire = null;
      w.signal = signal;
      resolve({ lock: acquired, watched: w });
      // The routine runs until the client releases the lease.
      return new Promise((release) => {
        w.release = release;
      });
    });
    // Before the routine: the acquire failed. After it: the release's
    // outcome, which release() reads from w.done.
    w.done.catch((err) => {
      redlock.onAcquire = null;
      reject(err);
    });
  });
}

// ---- the protected storage ------------------------------------------------

// Storage is the client's handle on the protected counter: one pg
// connection through this client's own proxy, opened again after it
// broke (the error is the operation's that met it). The SQL is the
// protocol's (docs/protocol.md, "The protected storage").
class Storage {
  constructor(url, mode) {
    this.mode = mode || "plain";
    this.config = pgConfig(url);
    this.client = null;
  }

  async conn() {
    if (this.client && !this.broken) return this.client;
    if (this.client) this.client.end().catch(() => {});
    const c = new pg.Client(this.config);
    this.broken = false;
    c.on("error", (err) => {
      log(`storage: ${err.message}`);
      this.broken = true;
    });
    c.on("end", () => {
      this.broken = true;
    });
    this.client = c;
    try {
      await c.connect();
    } catch (err) {
      this.broken = true;
      throw new Error(`storage: ${err.message}`);
    }
    return c;
  }

  async query(what, sql, args) {
    const c = await this.conn();
    try {
      return await c.query(sql, args);
    } catch (err) {
      throw new Error(`storage ${what}: ${err.message}`);
    }
  }

  // read opens a critical section: claim the row for token (token-cas)
  // and read the counter, raising the fence to fence (fenced).
  async read(token, fence) {
    if (this.mode === "token-cas") {
      if (!token) throw new Error("storage claim: empty token");
      const r = await this.query("claim", "UPDATE counter SET owner = $1 WHERE id = 1", [token]);
      if (r.rowCount !== 1) throw new Error("storage claim: counter row missing");
    }
    let r;
    if (this.mode === "fenced" && fence > 0) {
      r = await this.query("read", "UPDATE counter SET fence = GREATEST(fence, $1) WHERE id = 1 RETURNING value", [fence]);
    } else {
      r = await this.query("read", "SELECT value FROM counter WHERE id = 1", []);
    }
    if (r.rows.length !== 1) throw new Error("storage read: counter row missing");
    return Number(r.rows[0].value);
  }

  // write stores value as the mode allows: true accepted, false refused
  // by the storage; an error when the outcome is unknown.
  async write(read, value, fence, token) {
    let r;
    switch (this.mode) {
      case "plain":
        r = await this.query("write", "UPDATE counter SET value = $1 WHERE id = 1", [value]);
        if (r.rowCount !== 1) throw new Error("storage write: counter row missing");
        return true;
      case "fenced":
      case "fenced-write":
        r = await this.query("write", "UPDATE counter SET value = $1, fence = $2 WHERE id = 1 AND fence <= $2", [value, fence]);
        return r.rowCount === 1;
      case "token-cas":
        r = await this.query("write", "UPDATE counter SET value = $1 WHERE id = 1 AND owner = $2", [value, token]);
        return r.rowCount === 1;
      case "idempotent":
        return await this.writeOnce(read, value);
    }
    throw new Error(`storage: unknown mode ${this.mode}`);
  }

  // writeOnce is idempotent mode's write: the run (job, period = the
  // value read) and the counter update commit together, or not at all.
  async writeOnce(read, value) {
    await this.query("write", "BEGIN", []);
    try {
      const r = await this.query("write", "INSERT INTO runs (job, period) VALUES ($1, $2) ON CONFLICT (job, period) DO NOTHING", [
        "counter",
        String(read),
      ]);
      if (r.rowCount === 0) {
        await this.query("write", "ROLLBACK", []);
        return false;
      }
      const u = await this.query("write", "UPDATE counter SET value = $1 WHERE id = 1", [value]);
      if (u.rowCount !== 1) throw new Error("storage write: counter row missing");
      await this.query("write", "COMMIT", []);
      return true;
    } catch (err) {
      if (!this.broken) await this.query("write", "ROLLBACK", []).catch(() => {});
      throw err;
    }
  }

  close() {
    if (this.client) this.client.end().catch(() => {});
  }
}

// pgConfig turns the harness's postgres:// URL into pg's config: the
// parameters pg has no name for (idle_session_timeout, ...) are server
// settings, sent at start-up as options (-c name=value).
function pgConfig(url) {
  const u = new URL(url);
  const config = {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: decodeURIComponent(u.pathname.replace(/^\//, "")) || undefined,
    ssl: false,
  };
  const options = [];
  for (const [k, v] of u.searchParams) {
    if (k === "sslmode") continue;
    if (k === "connect_timeout") config.connectionTimeoutMillis = Number(v) * 1000;
    else options.push(`-c ${k}=${v}`);
  }
  if (options.length) config.options = options.join(" ");
  return config;
}

// ---- fencing tokens --------------------------------------------------------

// drawFence hands a granted lease its fencing token from init's source:
// nextval('fence_seq') in the storage, INCR on the first node, or INCR
// on every node that granted it, the largest count.
async function drawFence(granted) {
  switch (cfg.fence) {
    case "postgres": {
      const r = await store.query("fence", "SELECT nextval('fence_seq') AS v", []);
      return Number(r.rows[0].v);
    }
    case "redis-incr":
      return Number(await nodes[0].redis.incr(FENCE_KEY));
    case "redlock-incr": {
      let best = 0;
      const errs = [];
      for (const name of granted) {
        const n = nodes.find((x) => x.name === name);
        try {
          best = Math.max(best, Number(await n.redis.incr(FENCE_KEY)));
        } catch (err) {
          errs.push(`node ${name}: ${err.message}`);
        }
      }
      if (best === 0) throw new Error(`fence INCR ${FENCE_KEY}: no node answered: ${errs.join("; ")}`);
      return best;
    }
  }
  return 0;
}

// reconnectOnTimeout closes a node's connection, and opens it again, as
// soon as a command on it times out, as go-redis does. ioredis's
// commandTimeout rejects the command but leaves it in the connection's
// queue, waiting for its reply: on a link that dropped the request (a
// partition), every later reply is matched to the command before it, so
// after the partition heals each command gets the previous one's answer
// and times out itself. Closing the connection fails the commands still
// queued on it (their outcome is unknown, as a timeout's is).
function reconnectOnTimeout(name, redis) {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    const p = send(command, stream);
    command.promise.catch((err) => {
      if (err && err.message === "Command timed out" && redis.status === "ready") {
        log(`node ${name}: ${command.name} timed out: reconnecting`);
        redis.disconnect(true);
      }
    });
    return p;
  };
}

// ---- commands -------------------------------------------------------------

async function init(cmd) {
  const i = cmd.init;
  if (!i) throw new Error("init without config");
  if (!LOCKS.includes(i.lock)) {
    throw new Error(`node-redlock implements ${LOCKS.join(" and ")}, not lock ${i.lock}`);
  }
  const refuse = (what, v, list) => {
    if (v && !list.includes(v)) throw new Error(`node-redlock has no ${what} ${v} (it has ${list.join(", ")})`);
  };
  refuse("storage mode", i.storage_mode, STORAGE_MODES);
  refuse("fence source", i.fence, FENCES);
  refuse("watchdog", i.watchdog, WATCHDOGS);
  if (i.fence === "postgres" && !i.storage) throw new Error("fence postgres needs the storage connection");
  cfg = i;
  const c = i.config || {};
  if (!c.redis || c.redis.length === 0) throw new Error("no Redis nodes in the config");
  const timeout = c.node_timeout ? nsToMs(c.node_timeout) : 200;
  nodes = c.redis.map((n) => {
    const at = n.addr.lastIndexOf(":");
    const redis = new Redis({
      host: n.addr.slice(0, at),
      port: Number(n.addr.slice(at + 1)),
      lazyConnect: true,
      // Each request to one node is bounded by the per-node timeout, as
      // Redlock asks; a request is written at most once.
      commandTimeout: timeout,
      connectTimeout: Math.max(timeout, 1000),
      maxRetriesPerRequest: null,
      autoResendUnfulfilledCommands: false,
      enableReadyCheck: false,
      disableClientInfo: true,
      retryStrategy: () => 20,
    });
    redis.on("error", (err) => log(`node ${n.name}: ${err.message}`));
    reconnectOnTimeout(n.name, redis);
    return { name: n.name, redis };
  });
  redlock = new LocksimRedlock(
    nodes.map((n) => n.redis),
    SETTINGS,
  );
  // Open every connection and load redlock's scripts before the story
  // starts, so that the first acquire does not pay for them inside the
  // per-node timeout; the same for the storage's connection.
  await Promise.all(
    nodes.map(async (n) => {
      try {
        await n.redis.connect();
        for (const s of Object.values(redlock.scripts)) await n.redis.script("LOAD", s.value);
      } catch (err) {
        throw new Error(`node ${n.name} (${n.redis.options.host}:${n.redis.options.port}): ${err.message}`);
      }
    }),
  );
  if (i.storage) {
    store = new Storage(i.storage, i.storage_mode);
    await store.conn();
  }
}

// acquireFailed reports a refused or failed acquire from redlock's error.
async function acquireFailed(id, key, err) {
  const t = mono();
  if (!(err instanceof ExecutionError)) {
    if (err instanceof ResourceLockedError) {
      event(id, { t, type: "fail", op: "acquire", key, reason: "held", detail: `redlock: ${err.message}` });
    } else {
      event(id, { t, type: "info", op: "acquire", key, detail: `redlock: ${err.message}` });
    }
    return;
  }
  // Redlock did not reach a quorum; it has undone its partial grants.
  const stats = await votes(err.attempts);
  let reason = "quorum";
  if (stats) {
    const s = silent(stats);
    if (s === 0) reason = "held";
    else if (s === stats.membershipSize) reason = "timeout";
  }
  event(id, {
    t,
    type: "fail",
    op: "acquire",
    key,
    reason,
    nodes: stats && stats.votesFor.size ? names(stats.votesFor) : undefined,
    detail: `redlock: ExecutionError: ${err.message} (${describe(stats)})`,
  });
}

async function acquire(id, cmd) {
  const key = cmd.key;
  const ttlMs = nsToMs(cmd.ttl);
  event(id, { type: "invoke", op: "acquire", key, ttl: cmd.ttl });
  let lock, watched;
  try {
    if (cfg.watchdog) ({ lock, watched } = await acquireWatched(id, key, ttlMs));
    else lock = await redlock.acquire([key], ttlMs);
  } catch (err) {
    return acquireFailed(id, key, err);
  }
  let t = mono();
  const end = leaseEnd(lock);
  const stats = await votes(lock.attempts);
  const granted = stats ? names(stats.votesFor) : [];
  let fence = 0;
  if (cfg.fence) {
    try {
      fence = await drawFence(granted);
    } catch (err) {
      // No token, no lease: give the lock back, as locksim's Go worker
      // does; the outcome of the acquire is unknown to the story.
      let undo = "lock released";
      try {
        if (watched) {
          watched.release();
          await watched.done;
        } else {
          await Redlock.prototype.release.call(redlock, lock);
        }
      } catch (rerr) {
        undo = `and releasing the lock: ${rerr.message}`;
      }
      event(id, { type: "info", op: "acquire", key, detail: `fencing token: ${err.message} (${undo})` });
      return;
    }
    t = mono();
  }
  leases.set(key, { lock, fence, watched: watched || null });
  const e = { t, type: "ok", op: "acquire", key, token: lock.value, ttl: cmd.ttl, nodes: stats ? granted : undefined };
  if (fence) e.fence = fence;
  if (watched) {
    // With a watchdog the client believes it holds the lock until it
    // releases it, or a renewal finds it gone.
    e.detail = "redlock using: auto-extended until released";
  } else {
    e.lease_end = end;
    if (end <= t) e.detail = "redlock granted a lease whose validity had already run out (redlock 5 does not check it on acquire)";
  }
  event(id, e);
}

// noLease refuses an operation on a lease the client does not hold: it
// sends nothing.
function noLease(id, op, key) {
  event(id, { type: "fail", op, key, reason: "no-lease", detail: "refused by the client: it holds no lease, so it sends nothing" });
}

async function release(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.lock.value : undefined;
  event(id, { type: "invoke", op: "release", key, token });
  if (!l) return noLease(id, "release", key);
  leases.delete(key);
  try {
    if (l.watched) {
      // The routine returns: using stops extending, waits for an
      // extension in flight and releases the lock it holds.
      l.watched.release();
      await l.watched.done;
    } else {
      await Redlock.prototype.release.call(redlock, l.lock);
    }
    event(id, { type: "ok", op: "release", key, token });
  } catch (err) {
    const t = mono();
    if (!(err instanceof ExecutionError)) {
      event(id, { t, type: "info", op: "release", key, token, detail: `redlock: ${err.message}` });
      return;
    }
    // redlock calls a release that deleted the key on fewer than a
    // quorum of nodes an error. In the protocol a release is ok when the
    // lease's key was deleted wherever it was still held (at least one
    // node): the client has given the lock up. None: it was not held.
    const stats = await votes(err.attempts);
    const freed = stats ? stats.votesFor.size : 0;
    event(id, {
      t,
      type: freed > 0 ? "ok" : "fail",
      op: "release",
      key,
      token,
      reason: freed > 0 ? undefined : "not-held",
      detail: `redlock: ExecutionError: ${err.message} (${describe(stats)})`,
    });
  }
}

async function extend(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.lock.value : undefined;
  event(id, { type: "invoke", op: "extend", key, token, ttl: cmd.ttl });
  if (!l) return noLease(id, "extend", key);
  try {
    const next = await Redlock.prototype.extend.call(redlock, l.lock, nsToMs(cmd.ttl));
    const t = mono();
    const end = leaseEnd(next);
    const stats = await votes(next.attempts);
    l.lock = next;
    const e = { t, type: "ok", op: "extend", key, token, ttl: cmd.ttl, nodes: stats ? names(stats.votesFor) : undefined };
    if (!l.watched) e.lease_end = end;
    event(id, e);
  } catch (err) {
    const t = mono();
    if (!(err instanceof ExecutionError)) {
      event(id, { t, type: "info", op: "extend", key, token, detail: `redlock: ${err.message}` });
      return;
    }
    if (err.attempts.length === 0) {
      // redlock refuses, without a request, to extend a lease its own
      // (wall) clock says has run out.
      event(id, { t, type: "fail", op: "extend", key, token, reason: "expired", detail: `redlock: ${err.message}` });
      return;
    }
    const stats = await votes(err.attempts);
    event(id, { t, type: "fail", op: "extend", key, token, reason: "not-held", detail: `redlock: ExecutionError: ${err.message} (${describe(stats)})` });
  }
}

// stillHeld is the careful client's check before it writes, by redlock's
// own measure: the lease's expiration (start + ttl - drift, by
// Date.now()) is still ahead; with the watchdog, using has not given up
// on it (its signal is not aborted) and its latest extension still runs.
function stillHeld(key, l) {
  if (leases.get(key) !== l) return false;
  if (l.watched && l.watched.signal.aborted) return false;
  return l.lock.expiration > Date.now();
}

// write is one critical section on the protected counter: read it (the
// invocation is stamped before the read and sent after it), work for
// cmd.work, check the lease when init says check_lease, write read+1 with
// this lease's fencing token and token. A pause (SIGSTOP) during the work
// delays the write, as in Kleppmann's diagram.
async function write(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.lock.value : undefined;
  const fence = l && l.fence ? l.fence : undefined;
  const invoke = { t: mono(), type: "invoke", op: "write", key, token, fence, unlocked: cmd.unlocked || undefined };
  const done = { type: "fail", op: "write", key, token, fence };
  if (!l && !cmd.unlocked) {
    event(id, invoke);
    return noLease(id, "write", key);
  }
  if (!store) {
    event(id, invoke);
    event(id, { ...done, detail: "this scenario has no protected storage" });
    return;
  }
  let read;
  try {
    read = await store.read(token, fence || 0);
  } catch (err) {
    // Nothing was written: the counter is untouched.
    event(id, invoke);
    event(id, { ...done, reason: "read", detail: err.message });
    return;
  }
  event(id, invoke);
  if (cmd.work) await sleep(Number(cmd.work) / 1e6);
  done.read = read;
  done.wrote = read + 1;
  if (cfg.check_lease && !stillHeld(key, l)) {
    event(id, { ...done, reason: "expired", detail: "not written: the lease had run out by redlock's expiration (Date.now())" });
    return;
  }
  try {
    const accepted = await store.write(read, read + 1, fence || 0, token);
    if (accepted) {
      event(id, { ...done, type: "ok" });
    } else {
      const reason = { fenced: "fence", "fenced-write": "fence", "token-cas": "token", idempotent: "duplicate" }[store.mode];
      event(id, { ...done, reason, detail: `storage (${store.mode}) refused the write` });
    }
  } catch (err) {
    event(id, { ...done, type: "info", detail: err.message });
  }
}

async function handle(line) {
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (err) {
    send({ id: 0, done: true, error: `bad command: ${err.message}` });
    return;
  }
  const id = cmd.id || 0;
  try {
    if (cmd.op === "init") {
      await init(cmd);
    } else if (!redlock) {
      throw new Error(`${cmd.op} before init`);
    } else if (cmd.op === "acquire") {
      await acquire(id, cmd);
    } else if (cmd.op === "release") {
      await release(id, cmd);
    } else if (cmd.op === "extend") {
      await extend(id, cmd);
    } else if (cmd.op === "write" && OPS.includes("write")) {
      await write(id, cmd);
    } else {
      throw new Error(`unknown op ${JSON.stringify(cmd.op)} (node-redlock carries out ${OPS.join(", ")})`);
    }
    send({ id, done: true });
  } catch (err) {
    send({ id, done: true, error: err.message });
  }
}

// ---- main -----------------------------------------------------------------

const hello = {
  protocol: PROTOCOL,
  name: `node-redlock: redlock ${versionOf("redlock")}, ioredis ${versionOf("ioredis")}, pg ${versionOf("pg")}, Node ${process.version}`,
  locks: LOCKS,
  ops: OPS,
};
if (PROTOCOL >= 2) {
  Object.assign(hello, { storage_modes: STORAGE_MODES, fences: FENCES, watchdogs: WATCHDOGS, check_lease: true, client_clock: true });
}
send(hello);

// Stall reports: wake every 10 ms and tell the harness of any span longer
// than 60 ms in which this process did not run (the machine too busy, or
// a pause the story made).
let last = mono();
setInterval(() => {
  const now = mono();
  if (now - last > 60000000n) send({ stall: { from: last, to: now } });
  last = now;
}, 10).unref();

// Commands are carried out one at a time, in order; when stdin closes
// the client finishes what it has, closes its connections and exits.
let queue = Promise.resolve();
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  if (line.trim() === "") return;
  queue = queue.then(() => handle(line));
});
rl.on("close", () => {
  queue.then(() => {
    for (const n of nodes) n.redis.disconnect();
    if (store) store.close();
    process.exit(0);
  });
});

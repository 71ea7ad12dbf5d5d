#!/usr/bin/env node
// A locksim client in Node.js: the npm package redlock (v5, over ioredis)
// speaking locksim worker protocol v1 (docs/protocol.md in the locksim
// repository). The harness starts it as a scenario's client_cmd, e.g.
//
//   client_cmd: [node, examples/node-redlock/client.js]
//
// It prints its hello line, reads one command a line on stdin (init, then
// acquire, release, extend) and answers with history events stamped with
// process.hrtime.bigint(), which on Linux is CLOCK_MONOTONIC in
// nanoseconds (libuv's uv_hrtime), the clock the harness stamps with.
// stdout carries protocol lines only; logs go to stderr.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

const PROTOCOL = 1;

let Redis, Redlock, ExecutionError, ResourceLockedError;
try {
  Redis = require("ioredis");
  const redlock = require("redlock");
  Redlock = redlock.default;
  ExecutionError = redlock.ExecutionError;
  ResourceLockedError = redlock.ResourceLockedError;
} catch (err) {
  // No hello line: the harness reports that this program exited before
  // it, quoting this line.
  process.stderr.write(
    `node-redlock: error: cannot load redlock and ioredis (${err.message}); ` +
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
const SETTINGS = {
  driftFactor: 0.01,
  retryCount: 0,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500,
};

const LOCKS = ["redlock", "redis"]; // Redlock over N nodes; N = 1 is the single-node lock
const OPS = ["acquire", "release", "extend"];

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

// ---- state ----------------------------------------------------------------

let redlock = null;
let nodes = []; // [{name, redis}] in the order the harness gave them
const leases = new Map(); // key -> redlock Lock

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

// ---- commands -------------------------------------------------------------

async function init(cmd) {
  const i = cmd.init;
  if (!i) throw new Error("init without config");
  if (!LOCKS.includes(i.lock)) {
    throw new Error(`node-redlock implements ${LOCKS.join(" and ")}, not lock ${i.lock}`);
  }
  for (const f of ["storage", "fence", "watchdog", "check_lease"]) {
    if (i[f]) throw new Error(`node-redlock does not support ${f} (protocol v1 gives a client program acquire, release and extend)`);
  }
  const cfg = i.config || {};
  if (!cfg.redis || cfg.redis.length === 0) throw new Error("no Redis nodes in the config");
  const timeout = cfg.node_timeout ? nsToMs(cfg.node_timeout) : 200;
  nodes = cfg.redis.map((n) => {
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
    return { name: n.name, redis };
  });
  redlock = new Redlock(
    nodes.map((n) => n.redis),
    SETTINGS,
  );
  // Open every connection and load redlock's scripts before the story
  // starts, so that the first acquire does not pay for them inside the
  // per-node timeout.
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
}

async function acquire(id, cmd) {
  const key = cmd.key;
  event(id, { type: "invoke", op: "acquire", key, ttl: cmd.ttl });
  try {
    const lock = await redlock.acquire([key], nsToMs(cmd.ttl));
    const t = mono();
    const end = leaseEnd(lock);
    const stats = await votes(lock.attempts);
    leases.set(key, lock);
    const e = { t, type: "ok", op: "acquire", key, token: lock.value, ttl: cmd.ttl, lease_end: end, nodes: stats ? names(stats.votesFor) : undefined };
    if (end <= t) {
      e.detail = "redlock granted a lease whose validity had already run out (redlock 5 does not check it on acquire)";
    }
    event(id, e);
  } catch (err) {
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
}

// noLease refuses an operation on a lease the client does not hold: it
// sends nothing.
function noLease(id, op, key) {
  event(id, { type: "fail", op, key, reason: "no-lease", detail: "refused by the client: it holds no lease, so it sends nothing" });
}

async function release(id, cmd) {
  const key = cmd.key;
  const lock = leases.get(key);
  event(id, { type: "invoke", op: "release", key, token: lock ? lock.value : undefined });
  if (!lock) return noLease(id, "release", key);
  leases.delete(key);
  try {
    await redlock.release(lock);
    event(id, { type: "ok", op: "release", key, token: lock.value });
  } catch (err) {
    const t = mono();
    if (!(err instanceof ExecutionError)) {
      event(id, { t, type: "info", op: "release", key, token: lock.value, detail: `redlock: ${err.message}` });
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
      token: lock.value,
      reason: freed > 0 ? undefined : "not-held",
      detail: `redlock: ExecutionError: ${err.message} (${describe(stats)})`,
    });
  }
}

async function extend(id, cmd) {
  const key = cmd.key;
  const lock = leases.get(key);
  event(id, { type: "invoke", op: "extend", key, token: lock ? lock.value : undefined, ttl: cmd.ttl });
  if (!lock) return noLease(id, "extend", key);
  try {
    const next = await redlock.extend(lock, nsToMs(cmd.ttl));
    const t = mono();
    const end = leaseEnd(next);
    const stats = await votes(next.attempts);
    leases.set(key, next);
    event(id, { t, type: "ok", op: "extend", key, token: lock.value, ttl: cmd.ttl, lease_end: end, nodes: stats ? names(stats.votesFor) : undefined });
  } catch (err) {
    const t = mono();
    if (!(err instanceof ExecutionError)) {
      event(id, { t, type: "info", op: "extend", key, token: lock.value, detail: `redlock: ${err.message}` });
      return;
    }
    if (err.attempts.length === 0) {
      // redlock refuses, without a request, to extend a lease its own
      // (wall) clock says has run out.
      event(id, { t, type: "fail", op: "extend", key, token: lock.value, reason: "expired", detail: `redlock: ${err.message}` });
      return;
    }
    const stats = await votes(err.attempts);
    event(id, {
      t,
      type: "fail",
      op: "extend",
      key,
      token: lock.value,
      reason: "not-held",
      detail: `redlock: ExecutionError: ${err.message} (${describe(stats)})`,
    });
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
    } else {
      throw new Error(`unknown op ${JSON.stringify(cmd.op)} (node-redlock carries out ${OPS.join(", ")})`);
    }
    send({ id, done: true });
  } catch (err) {
    send({ id, done: true, error: err.message });
  }
}

// ---- main -----------------------------------------------------------------

send({
  protocol: PROTOCOL,
  name: `node-redlock: redlock ${versionOf("redlock")}, ioredis ${versionOf("ioredis")}, Node ${process.version}`,
  locks: LOCKS,
  ops: OPS,
});

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
    process.exit(0);
  });
});

// The library-independent half of a locksim client in Node.js (locksim
// worker protocol v2, docs/protocol.md): the protocol's lines and clock,
// the command loop with its stall reports, the Redis connections through
// the client's proxies, the protected storage (pg) with its write, and
// the fencing tokens. The client programs of examples/node-redlock,
// examples/node-redlock4, examples/redis-lock, examples/redis-semaphore,
// examples/sesamecare-redlock, examples/simple-redis-mutex and
// examples/node-etcd3 use it; each
// keeps its lock library's part (acquire, release, the watchdog) in its
// own client.js (redis-lock and simple-redis-mutex connect with
// node-redis, which their libraries require, not with connectNodes;
// node-etcd3 talks gRPC to etcd through its library).
//
// It requires no package itself: each program passes its own ioredis and
// pg (installed in its own node_modules), so this folder needs no install.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

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

// mono is CLOCK_MONOTONIC in ns (libuv's uv_hrtime), the harness's clock.
const mono = () => process.hrtime.bigint();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const nsToMs = (ns) => Math.max(1, Math.round(Number(ns) / 1e6));

function event(id, e) {
  if (e.t === undefined) e.t = mono();
  send({ id, event: e });
}

// noLease refuses an operation on a lease the client does not hold: it
// sends nothing.
function noLease(id, op, key) {
  event(id, { type: "fail", op, key, reason: "no-lease", detail: "refused by the client: it holds no lease, so it sends nothing" });
}

// Protocol is what a program's hello can say it covers besides its
// locks: a harness that speaks only v1 (LOCKSIM_PROTOCOL=1) is greeted
// with a v1 hello (acquire, release, extend).
const PROTOCOL = Number(process.env.LOCKSIM_PROTOCOL || "1") >= 2 ? 2 : 1;
const STORAGE_MODES = ["plain", "fenced", "fenced-write", "token-cas", "idempotent"];
const FENCES = ["postgres", "redis-incr", "redlock-incr"];
const FENCE_KEY = "locksim:fence";

// checkInit refuses an init that asks for what the program's hello does
// not list.
function checkInit(prog, i, hello) {
  if (!hello.locks.includes(i.lock)) throw new Error(`${prog} implements ${hello.locks.join(" and ")}, not lock ${i.lock}`);
  const refuse = (what, v, list) => {
    if (v && !(list || []).includes(v)) throw new Error(`${prog} has no ${what} ${v} (it has ${(list || []).join(", ") || "none"})`);
  };
  refuse("storage mode", i.storage_mode, hello.storage_modes);
  refuse("fence source", i.fence, hello.fences);
  refuse("watchdog", i.watchdog, hello.watchdogs);
  if (i.check_lease && !hello.check_lease) throw new Error(`${prog} has no lease check before a write`);
  if (i.fence === "postgres" && !i.storage) throw new Error("fence postgres needs the storage connection");
}

// ---- Redis nodes ------------------------------------------------------------

// connectNodes makes one ioredis client per node of init's config, to
// this client's proxy for the node: each request bounded by the per-node
// timeout (node_timeout, default 200 ms) and written at most once
// (maxRetriesPerRequest null, autoResendUnfulfilledCommands false: one on
// a connection that dies is not sent again, the timeout settles it),
// reconnecting every 20 ms, with no ready check and no CLIENT SETINFO.
function connectNodes(Redis, config, log) {
  const c = config || {};
  if (!c.redis || c.redis.length === 0) throw new Error("no Redis nodes in the config");
  const timeout = c.node_timeout ? nsToMs(c.node_timeout) : 200;
  return c.redis.map((n) => {
    const at = n.addr.lastIndexOf(":");
    const redis = new Redis({
      host: n.addr.slice(0, at),
      port: Number(n.addr.slice(at + 1)),
      lazyConnect: true,
      commandTimeout: timeout,
      connectTimeout: Math.max(timeout, 1000),
      maxRetriesPerRequest: null,
      autoResendUnfulfilledCommands: false,
      enableReadyCheck: false,
      disableClientInfo: true,
      retryStrategy: () => 20,
      // A connection closed after a timeout (reconnectOnTimeout) is
      // destroyed at once: ioredis ends it (a FIN) and destroys it only
      // after disconnectTimeout (2 s by default), and it reconnects only
      // once it is closed. Through a partition the FIN is lost, so the
      // node stayed unreachable for a while after the heal (seen:
      // redlock-incr-fence-sync with redis-semaphore, whose release waits
      // for every node, so that the heal came 2 ms after the timeouts).
      disconnectTimeout: 0,
    });
    redis.on("error", (err) => log(`node ${n.name}: ${err.message}`));
    reconnectOnTimeout(n.name, redis, log);
    return { name: n.name, redis };
  });
}

// openNode connects to a node and runs load (the library's scripts, say)
// before the story starts, so that the first acquire pays for neither the
// dial nor the scripts inside the per-node timeout. A command of load
// that times out is tried again, three times in all: on a busy machine
// the first commands can outlast the per-node timeout, which is meant
// for the story's requests, not for this set-up.
async function openNode(n, load) {
  try {
    await n.redis.connect();
    for (let attempt = 1; ; attempt++) {
      try {
        await load(n.redis);
        return;
      } catch (err) {
        if (attempt >= 3 || err.message !== "Command timed out") throw err;
      }
    }
  } catch (err) {
    throw new Error(`node ${n.name} (${n.redis.options.host}:${n.redis.options.port}): ${err.message}`);
  }
}

// reconnectOnTimeout closes a node's connection, and opens it again, as
// soon as a command on it times out, as go-redis does. ioredis's
// commandTimeout rejects the command but leaves it in the connection's
// queue, waiting for its reply: on a link that dropped the request (a
// partition), every later reply is matched to the command before it, so
// after the partition heals each command gets the previous one's answer
// and times out itself (examples/node-redlock/README.md).
function reconnectOnTimeout(name, redis, log) {
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

// ---- fencing tokens ---------------------------------------------------------

// drawFence hands a granted lease its fencing token from init's source:
// nextval('fence_seq') in the storage, INCR on the first node, or INCR on
// every node that granted it (names), the largest count.
async function drawFence(source, store, nodes, granted) {
  switch (source) {
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

// ---- the protected storage --------------------------------------------------

// Storage is the client's handle on the protected counter: one pg
// connection through this client's own proxy, opened again after it
// broke (the error is the operation's that met it). The SQL is the
// protocol's (docs/protocol.md, "The protected storage").
class Storage {
  constructor(pg, url, mode, log) {
    this.pg = pg;
    this.log = log;
    this.mode = mode || "plain";
    this.config = pgConfig(url);
    this.client = null;
  }

  async conn() {
    if (this.client && !this.broken) return this.client;
    if (this.client) this.client.end().catch(() => {});
    const c = new this.pg.Client(this.config);
    this.broken = false;
    c.on("error", (err) => {
      this.log(`storage: ${err.message}`);
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

// write is one critical section on the protected counter (the protocol's
// write): read it (the invocation is stamped before the read and sent
// after it), work for cmd.work, check the lease when checkLease is given
// (a function of the lease: a string saying why it ran out, or null),
// write read+1 with the lease's fencing token and token. lease is
// {token, fence} or undefined. A pause (SIGSTOP) during the work delays
// the write, as in Kleppmann's diagram.
async function write(id, cmd, lease, store, checkLease) {
  const key = cmd.key;
  const token = lease ? lease.token : undefined;
  const fence = lease && lease.fence ? lease.fence : undefined;
  const invoke = { t: mono(), type: "invoke", op: "write", key, token, fence, unlocked: cmd.unlocked || undefined };
  const done = { type: "fail", op: "write", key, token, fence };
  if (!lease && !cmd.unlocked) {
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
  const expired = checkLease && lease ? checkLease(lease) : null;
  if (expired) {
    event(id, { ...done, reason: "expired", detail: `not written: ${expired}` });
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

// ---- the conversation -------------------------------------------------------

// serve prints the hello, then carries out the commands read on stdin one
// at a time, in order: ops maps an op to async (id, cmd) => void (init's
// gets the command too; every other op waits for init). When stdin closes
// the client finishes what it has, calls close and exits. It also wakes
// every 10 ms and reports any span longer than 60 ms in which this
// process did not run (the machine too busy, or a pause the story made):
// the harness's timing guard reads them.
function serve(prog, hello, ops, close) {
  send(hello);
  let last = mono();
  setInterval(() => {
    const now = mono();
    if (now - last > 60000000n) send({ stall: { from: last, to: now } });
    last = now;
  }, 10).unref();

  let ready = false;
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
        if (!cmd.init) throw new Error("init without config");
        await ops.init(id, cmd);
        ready = true;
      } else if (!ready) {
        throw new Error(`${cmd.op} before init`);
      } else if (hello.ops.includes(cmd.op) && ops[cmd.op]) {
        await ops[cmd.op](id, cmd);
      } else {
        throw new Error(`unknown op ${JSON.stringify(cmd.op)} (${prog} carries out ${hello.ops.join(", ")})`);
      }
      send({ id, done: true });
    } catch (err) {
      send({ id, done: true, error: err.message });
    }
  }

  let queue = Promise.resolve();
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on("line", (line) => {
    if (line.trim() === "") return;
    queue = queue.then(() => handle(line));
  });
  rl.on("close", () => {
    queue.then(() => {
      close();
      process.exit(0);
    });
  });
}

// versionOf is the version of the npm package pkg installed in the
// example folder dir ("?" when it is not), for the hello's name.
function versionOf(dir, pkg) {
  try {
    const file = path.join(dir, "node_modules", pkg, "package.json");
    return JSON.parse(fs.readFileSync(file, "utf8")).version.replace(/^v/, "");
  } catch {
    return "?";
  }
}

// load requires the packages names as the program in dir would (from
// its own node_modules), or ends it with one line saying what to install:
// with no hello line printed, the harness reports that the program exited
// before it, quoting that line.
function load(program, dir, names) {
  const req = require("module").createRequire(path.join(dir, "client.js"));
  try {
    return names.map((n) => req(n));
  } catch (err) {
    process.stderr.write(
      `${program}: error: cannot load ${names.join(", ")} (${err.message.split("\n")[0]}); ` +
        `install them with: npm ci --prefix ${path.relative(process.cwd(), dir) || "."}\n`,
    );
    process.exit(1);
  }
}

module.exports = {
  FENCES,
  PROTOCOL,
  STORAGE_MODES,
  Storage,
  checkInit,
  connectNodes,
  drawFence,
  event,
  load,
  mono,
  noLease,
  nsToMs,
  openNode,
  send,
  serve,
  sleep,
  versionOf,
  write,
};

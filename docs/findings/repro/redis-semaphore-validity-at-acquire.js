#!/usr/bin/env node
// Shows: redis-semaphore 5.8.0 (npm; over ioredis 5.11.1): RedlockMutex's
// acquire returns true once a quorum answered SET NX OK, however long that
// took: it keeps no start time and never compares the time taken with
// lockTimeout. With a slow reply it reports a lock that has already run out,
// and a second client acquires the same mutex while the first believes it
// holds it. (docs/findings/defects/redis-semaphore-validity-at-acquire.yaml)
//
// Story: one Redis node, acquireAttemptsLimit 1, refreshInterval 0 (no
// auto-refresh: with the default one, A would learn of the loss only at its
// first refresh, 800 ms after its acquire, and both hold until then). A talks
// to Redis through a small TCP proxy that holds Redis's replies to A
// 1500 ms; A acquires mutex:demo with lockTimeout 1000 ms (the key is set at
// once, the OK arrives at ~1500 ms, after the key expired). tryAcquire()
// returns true anyway; B (direct) then acquires it too.
//
// Run: node docs/findings/repro/redis-semaphore-validity-at-acquire.js
// Needs redis-server on PATH: the script starts its own (redis-server --port
// PORT --save '' --appendonly no --bind 127.0.0.1, on a free port) and kills
// it at exit. Exit 1 (one line, "both clients held the lock: ...") when the
// defect shows, 0 when it does not, 2 on a setup error.
"use strict";
const net = require("net");
const { spawn } = require("child_process");
const M = "/work/main/examples/redis-semaphore/node_modules/";
const Redis = require(M + "ioredis");
const { RedlockMutex } = require(M + "redis-semaphore");

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

// finish prints the one line, stops redis-server and waits for it to exit
// (so none is left behind, not even a zombie), then exits with code.
let redisProc = null;
let finished = false;
function finish(code, line) {
  if (finished) return;
  finished = true;
  console.log(line);
  if (!redisProc || redisProc.exitCode !== null || redisProc.signalCode !== null) process.exit(code);
  redisProc.once("exit", () => process.exit(code));
  redisProc.kill("SIGTERM");
  setTimeout(() => process.exit(code), 5000);
}

// startRedis runs a throwaway redis-server on a free port and returns the port.
async function startRedis() {
  const port = await new Promise((r) => { const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => r(p)); }); });
  const proc = (redisProc = spawn("redis-server", ["--port", String(port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"], { stdio: "ignore" }));
  proc.on("error", (e) => finish(2, `setup error: redis-server: ${e.message}`));
  process.on("exit", () => proc.kill("SIGTERM"));
  for (let i = 0; i < 100; i++) {
    const up = await new Promise((r) => { const s = net.connect(port, "127.0.0.1", () => { s.end(); r(true); }); s.on("error", () => r(false)); });
    if (up) return port;
    await sleep(50);
  }
  throw new Error("redis-server did not start");
}

// The proxy: 127.0.0.1:<port> forwards to Redis; each chunk going up (to
// Redis) or down (to the client) is held hold.up / hold.down ms, in order.
const hold = { up: 0, down: 0 };
function startProxy(redisPort) {
  const relay = (from, to, dir) => {
    const q = [];
    let timer = null;
    const pump = () => {
      timer = null;
      while (q.length && q[0].at <= Date.now()) to.write(q.shift().buf);
      if (q.length) timer = setTimeout(pump, q[0].at - Date.now());
    };
    from.on("data", (buf) => { q.push({ at: Date.now() + hold[dir], buf }); if (!timer) pump(); });
  };
  return new Promise((resolve) => {
    const srv = net.createServer((c) => {
      const s = net.connect(redisPort, "127.0.0.1");
      relay(c, s, "up");
      relay(s, c, "down");
      for (const x of [c, s]) { x.on("error", () => {}); x.on("close", () => { c.destroy(); s.destroy(); }); }
    });
    srv.listen(0, "127.0.0.1", () => resolve(srv.address().port));
  });
}

async function connect(port) {
  const c = new Redis({ host: "127.0.0.1", port, lazyConnect: true, retryStrategy: () => null });
  c.on("error", () => {});
  await c.connect();
  return c;
}

async function main() {
  const port = await startRedis();
  const proxyPort = await startProxy(port);
  const opts = { lockTimeout: 1000, acquireAttemptsLimit: 1, retryInterval: 0, refreshInterval: 0 };
  const mutexA = new RedlockMutex([await connect(proxyPort)], "demo", opts); // A: through the proxy
  const mutexB = new RedlockMutex([await connect(port)], "demo", opts);

  hold.down = 1500; // Redis's replies to A now take 1500 ms
  const t0 = Date.now();
  const gotA = await mutexA.tryAcquire(); // SET mutex:demo <id> PX 1000 NX
  const tA = Date.now() - t0;
  hold.down = 0;
  if (!gotA) return finish(0, `ok: A's tryAcquire returned false after ${tA} ms: no stale lock reported`);
  const gotB = await mutexB.tryAcquire();
  if (!gotB) return finish(0, `ok: B was refused mutex:demo after A's tryAcquire returned true`);
  return finish(1, `both clients held the lock: A's RedlockMutex tryAcquire (lockTimeout 1000 ms) returned true after ${tA} ms (reply held 1500 ms), already past its lockTimeout, and B then acquired mutex:demo while A held it (isAcquired ${mutexA.isAcquired})`);
}

main().catch((e) => finish(2, `setup error: ${e.message}`));

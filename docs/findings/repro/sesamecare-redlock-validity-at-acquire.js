#!/usr/bin/env node
// Shows: @sesamecare-oss/redlock 1.4.0 (npm; over ioredis 5.11.1) acquire()
// returns a Lock however long the winning attempt took; it never checks
// that the Lock's expiration (start of that attempt + duration - drift) is
// still ahead of Date.now(). With a
// slow reply it hands back a lock that has already run out, and a second
// client acquires the same resource while the first believes it holds it.
// (docs/findings/defects/sesamecare-redlock-validity-at-acquire.yaml)
//
// Story: one Redis node, retryCount 0. A talks to Redis through a small TCP
// proxy that holds Redis's replies to A 1500 ms; A acquires "demo" for
// 1000 ms (the key is set at once, its reply arrives at ~1500 ms, after the
// key expired). acquire() returns a Lock anyway; B (direct) then acquires.
//
// Run: node docs/findings/repro/sesamecare-redlock-validity-at-acquire.js
// Needs redis-server on PATH: the script starts its own (redis-server --port
// PORT --save '' --appendonly no --bind 127.0.0.1, on a free port) and kills
// it at exit. Exit 1 (one line, "both clients held the lock: ...") when the
// defect shows, 0 when it does not, 2 on a setup error.
"use strict";
const net = require("net");
const { spawn } = require("child_process");
const M = "/work/main/examples/sesamecare-redlock/node_modules/";
const Redis = require(M + "ioredis");
const { Redlock } = require(M + "@sesamecare-oss/redlock");

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
  const redlockA = new Redlock([await connect(proxyPort)], { retryCount: 0 }); // A: through the proxy
  const redlockB = new Redlock([await connect(port)], { retryCount: 0 });
  // Warm-up: loads the acquire and release scripts into Redis, so that A's
  // acquire below is one round trip (ioredis's EVALSHA), not EVALSHA,
  // NOSCRIPT, EVAL.
  await (await redlockA.acquire(["warmup"], 1000)).release();

  hold.down = 1500; // Redis's replies to A now take 1500 ms
  const t0 = Date.now();
  let lockA;
  try {
    lockA = await redlockA.acquire(["demo"], 1000);
  } catch (e) {
    return finish(0, `ok: A's acquire failed after ${Date.now() - t0} ms (${e.message}): no stale lock returned`);
  }
  const now = Date.now();
  const tA = now - t0;
  const stale = now - lockA.expiration; // > 0: it had run out when returned
  hold.down = 0;
  try {
    await redlockB.acquire(["demo"], 1000);
  } catch (e) {
    return finish(0, `ok: B was refused "demo" after A's acquire returned (${e.message})`);
  }
  return finish(1, `both clients held the lock: A's acquire("demo", 1000) returned a Lock after ${tA} ms whose expiration had passed ${stale} ms before (reply held 1500 ms), and B then acquired "demo" while A held it`);
}

main().catch((e) => finish(2, `setup error: ${e.message}`));

#!/usr/bin/env node
// Shows: redis-lock 1.0.0 (npm; over node-redis 4.7.1) releases with a plain
// DEL whenever Date.now() is still before the lease's end, with no token. A
// DEL sent in time but delayed in the network past the TTL deletes the NEXT
// holder's key, and a third client then takes the lock beside it.
// (docs/findings/defects/redis-lock-token-release.yaml)
//
// Story: A takes lock.demo (timeout 1000 ms) through a small TCP proxy; at
// 900 ms the proxy starts holding A's requests 600 ms and A releases (its
// DEL reaches Redis at ~1500 ms). B (direct) takes the expired key at
// ~1100 ms; A's DEL deletes it; C (direct) then takes the lock while B holds it.
//
// Run: node docs/findings/repro/redis-lock-token-release.js
// Needs redis-server on PATH: the script starts its own (redis-server --port
// PORT --save '' --appendonly no --bind 127.0.0.1, on a free port) and kills
// it at exit. Exit 1 (one line, "both clients held the lock: ...") when the
// defect shows, 0 when it does not, 2 on a setup error.
"use strict";
const net = require("net");
const { spawn } = require("child_process");
const M = "/work/main/examples/redis-lock/node_modules/";
const redis = require(M + "redis");
const redisLock = require(M + "redis-lock");

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
  const c = redis.createClient({ socket: { host: "127.0.0.1", port, reconnectStrategy: false }, disableClientInfo: true });
  c.on("error", () => {});
  await c.connect();
  return c;
}

async function main() {
  const port = await startRedis();
  const proxyPort = await startProxy(port);
  const lockA = redisLock(await connect(proxyPort)); // A talks through the proxy
  const lockB = redisLock(await connect(port));
  const lockC = redisLock(await connect(port));

  const t0 = Date.now();
  const at = () => Date.now() - t0;
  const doneA = await lockA("demo", 1000); // SET lock.demo <end> PX 1000 NX
  await sleep(900 - at());
  hold.up = 600; // from now on the network delays A's requests 600 ms
  const sentAt = at();
  const del = doneA(); // Date.now() < the lease's end: sends a plain DEL lock.demo
  await sleep(1100 - at());
  await lockB("demo", 5000); // the key expired at ~1000 ms: B takes it
  const tB = at();
  const deleted = await del; // A's DEL lands at ~1500 ms
  const tDel = at();
  const gotC = await Promise.race([lockC("demo", 5000).then(() => true), sleep(1000).then(() => false)]);
  if (gotC) {
    return finish(1, `both clients held the lock: A's release (a plain DEL sent ${sentAt} ms into its 1000 ms lease, delayed 600 ms) landed at ${tDel} ms and deleted the key B took at ${tB} ms (DEL answered ${deleted}); C then took lock.demo at ${at()} ms while B held it`);
  }
  return finish(0, `ok: C was refused lock.demo while B held it (A's DEL answered ${deleted})`);
}

main().catch((e) => finish(2, `setup error: ${e.message}`));

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
// stdout carries protocol lines only; logs go to stderr. This file loads
// redlock; the client, shared with the fork @sesamecare-oss/redlock, is
// ../node-common/redlock.js.
"use strict";

const L = require("../node-common/locksim");
const { serveRedlock } = require("../node-common/redlock");

const [Redis, redlock, pg] = L.load("node-redlock", __dirname, ["ioredis", "redlock", "pg"]);

// versionOf reads an installed package's version (redlock's package.json
// is not among its exports, so it is read from the file).
const versionOf = (pkg) => L.versionOf(__dirname, pkg);

serveRedlock({
  prog: "node-redlock",
  name: `node-redlock: redlock ${versionOf("redlock")}, ioredis ${versionOf("ioredis")}, pg ${versionOf("pg")}, Node ${process.version}`,
  label: "redlock",
  Redis,
  Redlock: redlock.default,
  ExecutionError: redlock.ExecutionError,
  ResourceLockedError: redlock.ResourceLockedError,
  pg,
  // redlock keeps its scripts' text in redlock.scripts.
  loadScripts: async (redis, r) => {
    for (const s of Object.values(r.scripts)) await redis.script("LOAD", s.value);
  },
});

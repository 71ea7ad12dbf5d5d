#!/usr/bin/env node
// A locksim client in Node.js: the npm package @sesamecare-oss/redlock
// (the maintained fork of redlock 5, over ioredis) as locksim's lock
// redlock (five nodes) and redis (one node, the same algorithm), speaking
// locksim worker protocol v2 (docs/protocol.md in the locksim
// repository), with the npm package pg for the protected storage. The
// harness starts it as a scenario's client_cmd, e.g.
//
//   client_cmd: [node, examples/sesamecare-redlock/client.js]
//
// This file loads the fork; the client, shared with
// examples/node-redlock (the same API), is ../node-common/redlock.js.
// stdout carries protocol lines only; logs go to stderr.
"use strict";

const L = require("../node-common/locksim");
const { serveRedlock } = require("../node-common/redlock");

const [Redis, redlock, { ensureCommands }, pg] = L.load("sesamecare-redlock", __dirname, [
  "ioredis",
  "@sesamecare-oss/redlock",
  "@sesamecare-oss/redlock/build/scripts",
  "pg",
]);

const versionOf = (pkg) => L.versionOf(__dirname, pkg);

serveRedlock({
  prog: "sesamecare-redlock",
  name: `sesamecare-redlock: @sesamecare-oss/redlock ${versionOf("@sesamecare-oss/redlock")}, ioredis ${versionOf("ioredis")}, pg ${versionOf("pg")}, Node ${process.version}`,
  label: "sesamecare-redlock",
  Redis,
  Redlock: redlock.Redlock,
  ExecutionError: redlock.ExecutionError,
  ResourceLockedError: redlock.ResourceLockedError,
  pg,
  // The fork defines its three scripts as ioredis commands (sent by
  // EVALSHA): load them, so that no NOSCRIPT round trip falls inside the
  // per-node timeout.
  loadScripts: async (redis) => {
    ensureCommands(redis);
    for (const name of ["acquireLock", "extendLock", "releaseLock"]) await redis.script("LOAD", redis.scriptsSet[name].lua);
  },
});

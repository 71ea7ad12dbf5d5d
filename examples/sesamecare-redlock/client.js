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

// What @sesamecare-oss/redlock promises its users (the hello's promises),
// each in its own words at 1.4.0, word for word (markdown's backticks
// left out), with the address that says so (README.md, "What the library
// promises"). serveRedlock
// (../node-common/redlock.js) puts them in the hello.
const SRC = "https://github.com/sesamecare/redlock/blob/v1.4.0";
const PROMISES = [
  {
    property: "exclusion",
    quote:
      "The purpose of redlock is to provide exclusivity guarantees on a resource over a duration of time, and is not designed to report the ownership status of a resource.",
    source: `${SRC}/README.md#how-do-i-check-if-something-is-locked`,
  },
  {
    // The algorithm it says it implements is the Redis page's Redlock,
    // whose step 3 refuses a majority won after the validity ran out.
    property: "validity-at-acquire",
    quote:
      "This is a Node.js implementation of the redlock algorithm for distributed redis locks.",
    source: `${SRC}/README.md#redlock`,
  },
  {
    property: "token-release",
    quote: "Only remove entries for *this* lock value.",
    source: `${SRC}/src/scripts.ts#L48-L62`,
  },
  {
    property: "renewal",
    quote:
      "The using method wraps and executes a routine in the context of an auto-extending lock, returning a promise of the routine's value.",
    source: `${SRC}/README.md#usage`,
  },
  {
    property: "loss-notice",
    quote:
      "In the case that auto-extension fails, an AbortSignal will be updated to indicate that abortion of the routine is in order, and to pass along the encountered error.",
    source: `${SRC}/README.md#usage`,
  },
  {
    property: "prompt-release",
    quote: "This method unlocks the provided lock from all servers still persisting it.",
    source: `${SRC}/src/index.ts#L249-L255`,
  },
  {
    property: "expiry",
    quote: "It is safe to re-attempt a release or to ignore the error, as the lock will automatically expire after its timeout.",
    source: `${SRC}/src/index.ts#L249-L255`,
  },
];
serveRedlock({
  promises: PROMISES,
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

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

// What redlock promises its users (the hello's promises), each in its own
// words at 5.0.0-beta.2, word for word (markdown's backticks left out),
// with the address that says so (README.md, "What the library
// promises"). serveRedlock
// (../node-common/redlock.js) puts them in the hello.
const SRC = "https://github.com/mike-marcacci/node-redlock/blob/v5.0.0-beta.2";
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
      "This is a node.js implementation of the redlock algorithm for distributed redis locks.",
    source: `${SRC}/README.md#redlock`,
  },
  {
    property: "token-release",
    quote: "Only remove entries for *this* lock value.",
    source: `${SRC}/src/index.ts#L46-L58`,
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
    source: `${SRC}/src/index.ts#L343-L349`,
  },
  {
    property: "expiry",
    quote: "It is safe to re-attempt a release or to ignore the error, as the lock will automatically expire after its timeout.",
    source: `${SRC}/src/index.ts#L343-L349`,
  },
];
serveRedlock({
  promises: PROMISES,
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

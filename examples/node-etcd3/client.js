#!/usr/bin/env node
// A locksim client in Node.js: the npm package etcd3 (Microsoft's etcd v3
// client) and its Lock, as a lock of its own, node-etcd3, like locksim's
// etcd (clientv3's concurrency.Mutex), speaking locksim worker protocol v2
// (docs/protocol.md in the locksim repository), with the npm package pg
// for the protected storage. The harness starts it as a scenario's
// client_cmd, e.g.
//
//   client_cmd: [node, examples/node-etcd3/client.js]
//
// etcd3's Lock (lib/lock.js) grants a lease of its TTL, kept alive in the
// background (lib/lease.js), and puts the lock key on it in a
// transaction that succeeds only if the key has no create revision. The
// lease's loss is an event of the Lease ('lost'), which the Lock neither
// listens to nor passes on: the holder is not told (README.md). The
// Lock has no extend and no check. The protocol's plumbing (lines, clock,
// storage, fences) is ../node-common/locksim.js. stdout carries protocol
// lines only; logs go to stderr.
"use strict";

const L = require("../node-common/locksim");

const { event, mono, noLease } = L;

const [etcd3, pg] = L.load("node-etcd3", __dirname, ["etcd3", "pg"]);

const { Etcd3, EtcdLockFailedError, EtcdLeaseInvalidError, GRPCDeadlineExceededError } = etcd3;
const versionOf = (pkg) => L.versionOf(__dirname, pkg);
const log = (msg) => process.stderr.write(`node-etcd3: ${msg}\n`);

const OWN = { name: "node-etcd3", like: "etcd", servers: "etcd" };

// What the hello says this client covers (docs/protocol.md, "The hello
// line"): its own lock, like etcd. No extend (the Lock has none: its
// lease's keepalive runs by itself), no watchdog to report, no lease check
// (the Lock says nothing of its lease), no wait (acquire tries once). The
// fence: postgres, or, without one, the lock key's create revision.
const hello = {
  protocol: L.PROTOCOL,
  name: `node-etcd3: etcd3 ${versionOf("etcd3")}, @grpc/grpc-js ${versionOf("@grpc/grpc-js")}, pg ${versionOf("pg")}, Node ${process.version}`,
  locks: L.PROTOCOL >= 2 ? [OWN] : ["etcd"],
  ops: L.PROTOCOL >= 2 ? ["acquire", "release", "write"] : ["acquire", "release"],
};
// What etcd3's Lock promises its users, each in the library's own words
// at 1.1.2 (its doc comments), word for word (markdown's backticks left
// out), with the address that says so (README.md, "What the library
// promises"). Not that the holder is
// told of a lost lease: the Lock's comment warns that "the caller may lose
// the lock while operations may still be running".
const SRC = "https://github.com/microsoft/etcd3/blob/v1.1.2/src";
hello.promises = [
  {
    property: "exclusion",
    quote: "A Lock can be used for distributed locking to create atomic operations across multiple systems.",
    source: `${SRC}/lock.ts#L13-L16`,
  },
  {
    property: "expiry",
    quote: "If the server the lock is running on dies, or the network is disconnected, etcd will time out the lock.",
    source: `${SRC}/lock.ts#L18-L20`,
  },
  {
    property: "renewal",
    quote: "Configures whether the lease is kept alive automatically. Defaults to true.",
    source: `${SRC}/lease.ts#L70-L73`,
  },
  {
    property: "token-release",
    quote: "Revoke frees the lease from etcd. Keys that the lease owns will be evicted.",
    source: `${SRC}/lease.ts#L169-L172`,
  },
  {
    property: "prompt-release",
    quote: "Release frees the lock.",
    source: `${SRC}/lock.ts#L105-L114`,
  },
  {
    property: "bounded-calls",
    quote: "this will set a 10 second timeout on all calls which are not streams",
    source: `${SRC}/options.ts#L70-L99`,
  },
];
if (L.PROTOCOL >= 2) Object.assign(hello, { storage_modes: L.STORAGE_MODES, fences: ["postgres"] });

// ---- state ------------------------------------------------------------------

let cfg = null; // init's fields
let client = null; // the Etcd3 client, on every member
const leases = new Map(); // key -> {lock, token, fence}
let store = null; // the protected storage (L.Storage), when init names one

// seen notes what the library's requests were answered, without changing
// what is sent or how the library decides: the revision of the latest
// transaction (the Lock's put; it keeps no revision), and whether the
// latest LeaseRevoke found its lease (the Lock's release swallows
// "requested lease not found", lib/lease.js lines 144-151).
const seen = { txnRevision: 0, revokeNotFound: false };

function tap(pool) {
  const exec = pool.exec.bind(pool);
  pool.exec = (service, method, payload, options) =>
    exec(service, method, payload, options).then(
      (res) => {
        if (service === "KV" && method === "txn") seen.txnRevision = Number(res.header.revision);
        return res;
      },
      (err) => {
        if (service === "Lease" && method === "leaseRevoke" && err instanceof EtcdLeaseInvalidError) seen.revokeNotFound = true;
        throw err;
      },
    );
}

function detail(err) {
  return `etcd3: ${err.constructor.name}: ${err.message}`;
}

const isTimeout = (err) => err instanceof GRPCDeadlineExceededError;

// ---- commands ---------------------------------------------------------------

async function init(id, cmd) {
  const i = cmd.init;
  // init names the lock by the name the hello gave it.
  L.checkInit("node-etcd3", i, { ...hello, locks: [OWN.name, "etcd"] });
  cfg = i;
  const c = i.config || {};
  if (!c.etcd || c.etcd.length === 0) throw new Error("lock etcd needs the cluster's members (config.etcd)");
  const timeoutMs = c.node_timeout ? L.nsToMs(c.node_timeout) : 200;
  // Every member, as the reference's clientv3 is given; the library's own
  // fault handling (a retry of recoverable errors, a circuit breaker per
  // host). Each unary request is bounded by the node timeout (a gRPC
  // deadline); the keepalive stream is not, as in the library's default.
  client = new Etcd3({
    hosts: c.etcd.map((m) => m.addr),
    dialTimeout: Math.max(timeoutMs, 1000),
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeoutMs }),
  });
  tap(client.pool);
  try {
    await client.maintenance.status(); // dials now, so that no operation of the story pays for it
  } catch (err) {
    throw new Error(`${detail(err)}: etcd members ${c.etcd.map((m) => `${m.name} ${m.addr}`).join(", ")}`);
  }
  if (i.storage) {
    store = new L.Storage(pg, i.storage, i.storage_mode, log);
    await store.conn();
  }
}

// acquire is Lock.acquire: a LeaseGrant of the TTL in whole seconds (its
// keepalive starts when it is granted), then a transaction that puts the
// key, empty, on the lease if it has no create revision. A transaction
// that fails is EtcdLockFailedError, after the Lock revoked its lease.
async function acquire(id, cmd) {
  const key = cmd.key;
  event(id, { type: "invoke", op: "acquire", key, ttl: cmd.ttl });
  if (leases.has(key)) return event(id, { type: "fail", op: "acquire", key, reason: "held", detail: "this client holds the lock already" });
  const ttlS = Math.max(1, Math.ceil(Number(cmd.ttl) / 1e9));
  const lock = client.lock(key).ttl(ttlS);
  seen.txnRevision = 0;
  try {
    await lock.acquire();
  } catch (err) {
    if (err instanceof EtcdLockFailedError) return event(id, { type: "fail", op: "acquire", key, reason: "held", detail: detail(err) });
    return event(id, { type: "info", op: "acquire", key, reason: isTimeout(err) ? "timeout" : undefined, detail: detail(err) });
  }
  let t = mono();
  const leaseID = await lock.leaseId();
  // The Lock's key is empty: the lease's ID is the grant's own token, in
  // 16 hex digits, as etcdctl prints it.
  const lease = { lock, token: BigInt(leaseID).toString(16).padStart(16, "0"), fence: seen.txnRevision };
  if (cfg.fence === "postgres") {
    try {
      lease.fence = await L.drawFence("postgres", store, [], []);
    } catch (err) {
      let undo = "lock released";
      try {
        await lock.release();
      } catch (rerr) {
        undo = `and releasing the lock: ${rerr.message}`;
      }
      return event(id, { type: "info", op: "acquire", key, detail: `fencing token: ${err.message} (${undo})` });
    }
    t = mono();
  }
  leases.set(key, lease);
  lock.lease.on("lost", (err) => log(`${key}: the Lock's lease is lost (the Lock does not say so): ${err.message}`));
  event(id, {
    t,
    type: "ok",
    op: "acquire",
    key,
    token: lease.token,
    // No ttl and no lease_end: the library keeps the lease alive until the
    // release, a lock that does not expire by time while its holder runs
    // (docs/protocol.md, "ttl"), as the reference's session.
    fence: lease.fence || undefined,
    detail: `key ${key} at revision ${seen.txnRevision}, lease ${lease.token} of ${ttlS}s`,
  });
}

// release is Lock.release: LeaseRevoke of the lock's lease, which deletes
// the key. It resolves whether or not the lease still existed; the tap
// above tells the two apart, so a lease already gone is not-held.
async function release(id, cmd) {
  const key = cmd.key;
  const l = leases.get(key);
  const token = l ? l.token : undefined;
  event(id, { type: "invoke", op: "release", key, token });
  if (!l) return noLease(id, "release", key);
  leases.delete(key);
  seen.revokeNotFound = false;
  try {
    await l.lock.release();
  } catch (err) {
    return event(id, { type: "info", op: "release", key, token, reason: isTimeout(err) ? "timeout" : undefined, detail: detail(err) });
  }
  if (seen.revokeNotFound) {
    return event(id, {
      type: "fail",
      op: "release",
      key,
      token,
      reason: "not-held",
      detail: "etcd3: Lock.release resolved, but etcd answered LeaseRevoke with \"requested lease not found\" (the library swallows it)",
    });
  }
  event(id, { type: "ok", op: "release", key, token });
}

function write(id, cmd) {
  return L.write(id, cmd, leases.get(cmd.key), store, null);
}

// ---- main -------------------------------------------------------------------

L.serve("node-etcd3", hello, { init, acquire, release, write }, () => {
  for (const l of leases.values()) l.lock.lease.close();
  if (client) client.close();
  if (store) store.close();
});

// The Redlock client of locksim's worker protocol v2, for the npm
// package redlock (v5) and its maintained fork @sesamecare-oss/redlock,
// which share an API: acquire, release, extend, the watchdog using, the
// lease timed by Date.now(), the hello. Each program (node-redlock,
// sesamecare-redlock) loads its library and calls serveRedlock; the
// protocol's plumbing (lines, clock, command loop, storage, fences, the
// per-node connections) is ./locksim.js.
"use strict";

const L = require("./locksim");

const { event, mono, noLease } = L;

// serveRedlock serves the protocol with lib's Redlock until stdin closes.
// lib holds: prog (the program's name, for its log and errors), name (the
// hello's name: libraries and versions), label (how details name the
// library), the modules Redis (ioredis), Redlock, ExecutionError,
// ResourceLockedError and pg, loadScripts(redis, redlock), which loads
// the library's scripts on one node's connection, and promises (what the
// library promises its users, in its own words: the hello's promises).
function serveRedlock(lib) {
  const { Redis, Redlock, ExecutionError, ResourceLockedError, pg } = lib;
  const log = (msg) => process.stderr.write(`${lib.prog}: ${msg}\n`);


  // Redlock's settings. retryCount 0: try once, as every lock of locksim
  // does (a step is one attempt; the npm package's default is 10 retries,
  // 200 ms apart, with 100 ms of jitter). The rest are the package's
  // defaults, spelled out: the drift allowance is driftFactor * ttl + 2 ms.
  // automaticExtensionThreshold is set per lease by the watchdog (below).
  const SETTINGS = {
    driftFactor: 0.01,
    retryCount: 0,
    retryDelay: 200,
    retryJitter: 100,
    automaticExtensionThreshold: 500,
  };

  // What the hello says this client covers (docs/protocol.md, "The hello
  // line"). A harness that speaks only v1 (LOCKSIM_PROTOCOL=1) is greeted
  // with a v1 hello: acquire, release and extend.
  const hello = {
    protocol: L.PROTOCOL,
    name: lib.name,
    locks: ["redlock", "redis"], // Redlock over N nodes; N = 1 is the single-node lock
    ops: L.PROTOCOL >= 2 ? ["acquire", "release", "extend", "write"] : ["acquire", "release", "extend"],
    promises: lib.promises,
  };
  if (L.PROTOCOL >= 2) {
    Object.assign(hello, {
      storage_modes: L.STORAGE_MODES,
      fences: L.FENCES,
      watchdogs: ["token"], // the library's own auto-extension (using)
      check_lease: true,
      client_clock: true,
      acquire_wait: true, // the command's wait as retryCount (below)
    });
  }

  // ---- state ----------------------------------------------------------------

  let cfg = null; // init's fields
  let redlock = null;
  let nodes = []; // [{name, redis}] in the order the harness gave them
  // leases: key -> {lock, token, fence, watched}: the redlock Lock held (for
  // a lease the watchdog renews, the latest one it renewed to), its value,
  // its fencing token, and the watchdog's handle ({id, signal, release,
  // done}) or null.
  const leases = new Map();
  let store = null; // the protected storage (L.Storage), when init names one

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

  // leaseEnd is the CLOCK_MONOTONIC instant at which redlock's lease ends.
  // redlock times a lease by Date.now() (expiration = start + ttl - drift,
  // in wall-clock ms): that instant, as the two clocks stand now.
  function leaseEnd(lock) {
    const now = mono();
    return now + BigInt(Math.round(lock.expiration - Date.now())) * 1000000n;
  }

  // ---- the library's own renewal --------------------------------------------

  // LocksimRedlock is redlock, watched: redlock.using acquires through
  // this.acquire and auto-extends through lock.extend, which calls
  // this.extend; the overrides hand the client the lock using acquired and
  // report each of using's extensions as it happens (a renew note). The
  // client's own commands call Redlock's methods directly.
  class LocksimRedlock extends Redlock {
    async acquire(resources, duration, settings) {
      const lock = await super.acquire(resources, duration, settings);
      if (this.onAcquire) this.onAcquire(lock);
      return lock;
    }

    async extend(existing, duration, settings) {
      const l = leases.get(existing.resources[0]);
      const w = l && l.watched;
      if (!w || l.token !== existing.value) return super.extend(existing, duration, settings);
      const key = existing.resources[0];
      const note = { type: "note", op: "renew", key, token: existing.value };
      try {
        const next = await super.extend(existing, duration, settings);
        note.t = mono();
        const stats = await votes(next.attempts);
        l.lock = next;
        note.ttl = BigInt(duration) * 1000000n;
        note.nodes = stats ? names(stats.votesFor) : undefined;
        note.detail = `${lib.label} using: extended for ${duration}ms`;
        event(w.id, note);
        return next;
      } catch (err) {
        note.t = mono();
        if (err instanceof ExecutionError && err.attempts.length === 0) {
          // redlock would not extend a lease its own (wall) clock says has
          // run out; using gives up and aborts its signal.
          note.reason = "expired";
          note.detail = `${lib.label} using: ${err.message}`;
        } else if (err instanceof ExecutionError) {
          const stats = await votes(err.attempts);
          note.reason = "not-held";
          note.nodes = stats && stats.votesFor.size ? names(stats.votesFor) : undefined;
          note.detail = `${lib.label} using: ExecutionError: ${err.message} (${describe(stats)})`;
        } else {
          note.detail = `${lib.label} using: ${err.message}`;
        }
        event(w.id, note);
        throw err;
      }
    }
  }

  // acquireWatched takes key for ttlMs with redlock.using, redlock's
  // auto-extending lock: it resolves once using has acquired it, with the
  // watchdog's handle, and rejects as redlock.acquire would. using extends
  // the lease automaticExtensionThreshold before its expiration; the
  // threshold is set so that it extends every watchdog_every (redlock needs
  // it 100 ms below the ttl, so at most every 100 ms).
  function acquireWatched(id, key, ttlMs, retries) {
    const every = cfg.watchdog_every ? Number(cfg.watchdog_every) / 1e6 : ttlMs / 3;
    const threshold = Math.max(0, Math.min(Math.round(ttlMs - every), ttlMs - 100));
    let acquired = null;
    redlock.onAcquire = (lock) => {
      acquired = lock;
    };
    return new Promise((resolve, reject) => {
      const w = { id };
      w.done = redlock.using([key], ttlMs, { ...retries, automaticExtensionThreshold: threshold }, (signal) => {
        redlock.onAcquire = null;
        w.signal = signal;
        resolve({ lock: acquired, watched: w });
        // The routine runs until the client releases the lease.
        return new Promise((release) => {
          w.release = release;
        });
      });
      // Before the routine: the acquire failed. After it: the release's
      // outcome, which release() reads from w.done.
      w.done.catch((err) => {
        redlock.onAcquire = null;
        reject(err);
      });
    });
  }

  // ---- commands -------------------------------------------------------------

  async function init(id, cmd) {
    const i = cmd.init;
    L.checkInit(lib.prog, i, hello);
    cfg = i;
    nodes = L.connectNodes(Redis, i.config, log);
    redlock = new LocksimRedlock(
      nodes.map((n) => n.redis),
      SETTINGS,
    );
    // Open every connection and load the library's scripts before the
    // story starts, so that the first acquire pays for neither the dial nor
    // the scripts inside the per-node timeout; the same for the storage's
    // connection.
    await Promise.all(nodes.map((n) => L.openNode(n, (redis) => lib.loadScripts(redis, redlock))));
    if (i.storage) {
      store = new L.Storage(pg, i.storage, i.storage_mode, log);
      await store.conn();
    }
  }

  // acquireFailed reports a refused or failed acquire from redlock's error.
  async function acquireFailed(id, key, err) {
    const t = mono();
    if (!(err instanceof ExecutionError)) {
      if (err instanceof ResourceLockedError) {
        event(id, { t, type: "fail", op: "acquire", key, reason: "held", detail: `${lib.label}: ${err.message}` });
      } else {
        event(id, { t, type: "info", op: "acquire", key, detail: `${lib.label}: ${err.message}` });
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
      detail: `${lib.label}: ExecutionError: ${err.message} (${describe(stats)})`,
    });
  }

  // retrySettings are an acquire's settings: none (retryCount 0, one
  // attempt) without the command's wait; with it, the library's own retries
  // for about that long, retryDelay ± retryJitter apart (200 ms ± 100 ms):
  // retryCount = ceil(wait / retryDelay).
  function retrySettings(cmd) {
    if (!cmd.wait) return undefined;
    return { retryCount: Math.ceil(L.nsToMs(cmd.wait) / SETTINGS.retryDelay) };
  }

  async function acquire(id, cmd) {
    const key = cmd.key;
    const ttlMs = L.nsToMs(cmd.ttl);
    event(id, { type: "invoke", op: "acquire", key, ttl: cmd.ttl });
    let lock, watched;
    try {
      const retries = retrySettings(cmd);
      if (cfg.watchdog) ({ lock, watched } = await acquireWatched(id, key, ttlMs, retries));
      else lock = await redlock.acquire([key], ttlMs, retries);
    } catch (err) {
      return acquireFailed(id, key, err);
    }
    let t = mono();
    const end = leaseEnd(lock);
    const stats = await votes(lock.attempts);
    const granted = stats ? names(stats.votesFor) : [];
    let fence = 0;
    if (cfg.fence) {
      try {
        fence = await L.drawFence(cfg.fence, store, nodes, granted);
      } catch (err) {
        // No token, no lease: give the lock back, as locksim's Go worker
        // does; the outcome of the acquire is unknown to the story.
        let undo = "lock released";
        try {
          if (watched) {
            watched.release();
            await watched.done;
          } else {
            await Redlock.prototype.release.call(redlock, lock);
          }
        } catch (rerr) {
          undo = `and releasing the lock: ${rerr.message}`;
        }
        event(id, { type: "info", op: "acquire", key, detail: `fencing token: ${err.message} (${undo})` });
        return;
      }
      t = mono();
    }
    leases.set(key, { lock, token: lock.value, fence, watched: watched || null });
    const e = { t, type: "ok", op: "acquire", key, token: lock.value, ttl: cmd.ttl, nodes: stats ? granted : undefined };
    if (fence) e.fence = fence;
    if (watched) {
      // With a watchdog the client believes it holds the lock until it
      // releases it, or a renewal finds it gone.
      e.detail = `${lib.label} using: auto-extended until released`;
    } else {
      e.lease_end = end;
      if (end <= t) e.detail = `${lib.label} granted a lease whose validity had already run out (its acquire does not check it)`;
    }
    event(id, e);
  }

  async function release(id, cmd) {
    const key = cmd.key;
    const l = leases.get(key);
    const token = l ? l.token : undefined;
    event(id, { type: "invoke", op: "release", key, token });
    if (!l) return noLease(id, "release", key);
    leases.delete(key);
    try {
      if (l.watched) {
        // The routine returns: using stops extending, waits for an
        // extension in flight and releases the lock it holds.
        l.watched.release();
        await l.watched.done;
      } else {
        await Redlock.prototype.release.call(redlock, l.lock);
      }
      event(id, { type: "ok", op: "release", key, token });
    } catch (err) {
      const t = mono();
      if (!(err instanceof ExecutionError)) {
        event(id, { t, type: "info", op: "release", key, token, detail: `${lib.label}: ${err.message}` });
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
        token,
        reason: freed > 0 ? undefined : "not-held",
        detail: `${lib.label}: ExecutionError: ${err.message} (${describe(stats)})`,
      });
    }
  }

  async function extend(id, cmd) {
    const key = cmd.key;
    const l = leases.get(key);
    const token = l ? l.token : undefined;
    event(id, { type: "invoke", op: "extend", key, token, ttl: cmd.ttl });
    if (!l) return noLease(id, "extend", key);
    try {
      const next = await Redlock.prototype.extend.call(redlock, l.lock, L.nsToMs(cmd.ttl));
      const t = mono();
      const end = leaseEnd(next);
      const stats = await votes(next.attempts);
      l.lock = next;
      const e = { t, type: "ok", op: "extend", key, token, ttl: cmd.ttl, nodes: stats ? names(stats.votesFor) : undefined };
      if (!l.watched) e.lease_end = end;
      event(id, e);
    } catch (err) {
      const t = mono();
      if (!(err instanceof ExecutionError)) {
        event(id, { t, type: "info", op: "extend", key, token, detail: `${lib.label}: ${err.message}` });
        return;
      }
      if (err.attempts.length === 0) {
        // redlock refuses, without a request, to extend a lease its own
        // (wall) clock says has run out.
        event(id, { t, type: "fail", op: "extend", key, token, reason: "expired", detail: `${lib.label}: ${err.message}` });
        return;
      }
      const stats = await votes(err.attempts);
      event(id, { t, type: "fail", op: "extend", key, token, reason: "not-held", detail: `${lib.label}: ExecutionError: ${err.message} (${describe(stats)})` });
    }
  }

  // stillHeld is the careful client's check before it writes, by redlock's
  // own measure: the lease's expiration (start + ttl - drift, by
  // Date.now()) is still ahead; with the watchdog, using has not given up
  // on it (its signal is not aborted) and its latest extension still runs.
  // It returns why the lease ran out, or null.
  function stillHeld(key) {
    return (l) => {
      if (leases.get(key) !== l) return "the lease is gone";
      if (l.watched && l.watched.signal.aborted) return "using aborted its signal: an extension failed";
      if (l.lock.expiration > Date.now()) return null;
      return `the lease had run out by ${lib.label}'s expiration (Date.now())`;
    };
  }

  function write(id, cmd) {
    return L.write(id, cmd, leases.get(cmd.key), store, cfg.check_lease ? stillHeld(cmd.key) : null);
  }

  // ---- main -----------------------------------------------------------------

  // Commands are carried out one at a time, in order; when stdin closes
  // the client finishes what it has, closes its connections and exits.
  L.serve(lib.prog, hello, { init, acquire, release, extend, write }, () => {
    for (const n of nodes) n.redis.disconnect();
    if (store) store.close();
  });
}

module.exports = { serveRedlock };

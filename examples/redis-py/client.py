#!/usr/bin/python3
"""A locksim client in Python: redis-py's Lock (Debian's python3-redis)
speaking locksim worker protocol v2 (docs/protocol.md in the locksim
repository), with psycopg2 (python3-psycopg2) for the protected storage.
The harness starts it as a scenario's client_cmd, e.g.

    client_cmd: [examples/redis-py/client.py]

It prints its hello line, reads one command a line on stdin (init, then
acquire, release, extend, write) and answers with history events stamped
with time.clock_gettime_ns(CLOCK_MONOTONIC), the clock the harness stamps
with. stdout carries protocol lines only; logs go to stderr.

The start-up under Debian's Python, the output, the command loop and the
storage's SQL are examples/pyworker's (locksim_worker.py), shared with
examples/kazoo and examples/python-etcd3; this file is redis-py's Lock:
acquire, release, extend, the watchdog and the fencing tokens.
"""

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "pyworker"))
import locksim_worker as w  # noqa: E402

with w.debian_python("redis-py", "python3-redis"):
    import redis
    from redis.exceptions import LockNotOwnedError
    from redis.exceptions import TimeoutError as RedisTimeout
    from redis.lock import Lock

LOCKS = ["redis"]  # redis-py's Lock: SET NX PX on one node
OPS = ["acquire", "release", "extend", "write"]
FENCES = ["postgres", "redis-incr"]
# token: Lock.extend (the library's renewal, token-checked); pexpire: a
# plain PEXPIRE of the key, the naive renewal a user writes by hand.
WATCHDOGS = ["token", "pexpire"]
FENCE_KEY = "locksim:fence"
# What redis-py's Lock promises its users (sim findings counts a story
# against it only where it promises what the story tests): each quote is
# redis-py's own words at 4.3.4, copied word for word from redis/lock.py.
# README.md, "What the library promises", says what was left out and why.
LOCK_PY = "https://github.com/redis/redis-py/blob/v4.3.4/redis/lock.py"
PROMISES = [
    {"property": "exclusion",
     "quote": "A shared, distributed Lock. Using Redis for locking allows the Lock to be shared across processes and/or machines.",
     "source": f"{LOCK_PY}#L13-L14"},
    {"property": "expiry",
     "quote": "``timeout`` indicates a maximum life for the lock in seconds.",
     "source": f"{LOCK_PY}#L90"},
    {"property": "token-release",
     "quote": "Cannot release a lock that's no longer owned",
     "source": f"{LOCK_PY}#L255-L259"},
    {"property": "prompt-release",
     "quote": "Releases the already acquired lock",
     "source": f"{LOCK_PY}#L245-L247"},
]


# ---- state --------------------------------------------------------------


class Lease:
    """A lease held: redis-py's Lock, its token, its fencing token and
    the watchdog renewing it, if any."""

    def __init__(self, lock, token, fence):
        self.lock, self.token, self.fence = lock, token, fence
        self.stop = None  # the watchdog's stop event


cfg = {}
node = None  # (name, redis.Redis)
store = None
leases = {}
leases_lock = threading.Lock()


def lease_of(key):
    with leases_lock:
        return leases.get(key)


def drop_lease(key, token):
    with leases_lock:
        if key in leases and leases[key].token == token:
            del leases[key]


# ---- fencing tokens, the watchdog ----------------------------------------


def draw_fence():
    """A granted lease's fencing token from init's source."""
    if cfg.get("fence") == "postgres":
        return store.next_fence()
    if cfg.get("fence") == "redis-incr":
        return int(node[1].incr(FENCE_KEY))
    return 0


def reason_of(err):
    if isinstance(err, LockNotOwnedError):
        return "not-held"
    if isinstance(err, RedisTimeout):
        return "timeout"
    return None


def watchdog(cid, key, lease, ttl_ns, every):
    """Renews lease every `every` seconds until its stop is set, and
    reports each renewal as a renew note as it happens. token: redis-py's
    Lock.extend (the key's TTL set to the ttl again, only while the key
    holds this lease's token); pexpire: a plain PEXPIRE of the key,
    whoever holds it. A renewal that finds the lease gone drops it and
    ends the watchdog. A pause (SIGSTOP) stops it with the process."""
    kind, ttl_ms = cfg.get("watchdog"), ttl_ns // 1_000_000
    while not lease.stop.wait(every):
        note = {"type": "note", "op": "renew", "key": key, "token": lease.token, "nodes": [node[0]]}
        try:
            if kind == "pexpire":
                if not node[1].pexpire(key, ttl_ms):
                    raise LockNotOwnedError("PEXPIRE: the key does not exist")
                note["detail"] = f"watchdog (pexpire) renewed for {ttl_ms}ms"
            else:
                lease.lock.extend(ttl_ms / 1000, replace_ttl=True)
                note["detail"] = f"watchdog (Lock.extend) renewed for {ttl_ms}ms"
            note["ttl"] = ttl_ns
        except Exception as err:  # the renewal's outcome, whatever it was
            note["reason"] = reason_of(err)
            note["detail"] = f"watchdog ({kind}) renewal failed: {type(err).__name__}: {err}"
        if lease.stop.is_set():
            return
        w.event(cid, note)
        if note.get("reason") == "not-held":
            drop_lease(key, lease.token)
            return


# ---- commands -----------------------------------------------------------


def init(i):
    global node, store
    w.check_init("redis-py", i, LOCKS, FENCES, WATCHDOGS,
                 refuse=[("check_lease", "redis-py's Lock keeps no lease time on the client: it has no lease check before a write")])
    cfg.update(i)
    c = i.get("config") or {}
    nodes = c.get("redis") or []
    if len(nodes) != 1:
        raise ValueError(f"lock redis runs on one Redis node, got {len(nodes)}")
    host, port = nodes[0]["addr"].rsplit(":", 1)
    timeout = (c.get("node_timeout") or 200_000_000) / 1e9
    # Each request bounded by the per-node timeout, sent once (redis-py
    # retries nothing by default).
    r = redis.Redis(host=host, port=int(port), socket_timeout=timeout, socket_connect_timeout=max(timeout, 1.0))
    node = (nodes[0]["name"], r)
    # Two connections (the client's and its watchdog's) opened now, so
    # that no operation of the story pays for dialling.
    pool = r.connection_pool
    conns = [pool.get_connection("PING") for _ in range(2)]
    for conn in conns:
        pool.release(conn)
    store = w.open_storage(i)


def acquire(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    start = w.mono()
    w.event(cid, {"t": start, "type": "invoke", "op": "acquire", "key": key, "ttl": ttl})
    lock = Lock(node[1], key, timeout=ttl / 1e9, blocking=False, thread_local=False)
    try:
        got = lock.acquire(blocking=False)
    except Exception as err:
        w.event(cid, {"type": "info", "op": "acquire", "key": key, "reason": reason_of(err), "detail": f"redis-py: {type(err).__name__}: {err}"})
        return
    if not got:
        w.event(cid, {"type": "fail", "op": "acquire", "key": key, "reason": "held", "nodes": None,
                      "detail": f"node {node[0]} holds the key for another client (SET NX refused)"})
        return
    token = lock.local.token.decode()
    fence = 0
    if cfg.get("fence"):
        try:
            fence = draw_fence()
        except Exception as err:
            undo = w.undo_grant(lock.release, "the lock")
            w.event(cid, {"type": "info", "op": "acquire", "key": key, "detail": f"fencing token: {err} ({undo})"})
            return
    lease = Lease(lock, token, fence)
    with leases_lock:
        leases[key] = lease
    done = {"type": "ok", "op": "acquire", "key": key, "token": token, "ttl": ttl, "nodes": [node[0]], "fence": fence or None}
    if cfg.get("watchdog"):
        # With a watchdog the client believes it holds the lock until it
        # releases it, or a renewal finds it gone.
        every = (cfg.get("watchdog_every") or ttl // 3) / 1e9
        lease.stop = threading.Event()
        threading.Thread(target=watchdog, args=(cid, key, lease, ttl, every), daemon=True).start()
    else:
        # redis-py's Lock keeps no validity of its own: the lease lasts
        # the timeout, counted from before the SET was sent.
        done["lease_end"] = start + ttl
    w.event(cid, done)


def release(cid, cmd):
    key = cmd["key"]
    lease = lease_of(key)
    w.event(cid, {"type": "invoke", "op": "release", "key": key, "token": lease.token if lease else None})
    if lease is not None and lease.stop is not None:
        lease.stop.set()
    if lease is None:
        return w.no_lease(cid, "release", key)
    drop_lease(key, lease.token)
    try:
        lease.lock.release()
        w.event(cid, {"type": "ok", "op": "release", "key": key, "token": lease.token})
    except LockNotOwnedError as err:
        w.event(cid, {"type": "fail", "op": "release", "key": key, "token": lease.token, "reason": "not-held", "detail": f"redis-py: {err}"})
    except Exception as err:
        w.event(cid, {"type": "info", "op": "release", "key": key, "token": lease.token, "reason": reason_of(err),
                      "detail": f"redis-py: {type(err).__name__}: {err}"})


def extend(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    lease = lease_of(key)
    start = w.mono()
    w.event(cid, {"t": start, "type": "invoke", "op": "extend", "key": key, "token": lease.token if lease else None, "ttl": ttl})
    if lease is None:
        return w.no_lease(cid, "extend", key)
    try:
        lease.lock.extend(ttl / 1e9, replace_ttl=True)
    except LockNotOwnedError as err:
        w.event(cid, {"type": "fail", "op": "extend", "key": key, "token": lease.token, "reason": "not-held", "detail": f"redis-py: {err}"})
        return
    except Exception as err:
        w.event(cid, {"type": "info", "op": "extend", "key": key, "token": lease.token, "reason": reason_of(err),
                      "detail": f"redis-py: {type(err).__name__}: {err}"})
        return
    done = {"type": "ok", "op": "extend", "key": key, "token": lease.token, "ttl": ttl, "nodes": [node[0]]}
    if lease.stop is None:
        done["lease_end"] = start + ttl
    w.event(cid, done)


def write(cid, cmd):
    w.write(cid, cmd, lease_of(cmd["key"]), store)


def close():
    for lease in list(leases.values()):
        if lease.stop is not None:
            lease.stop.set()
    if store is not None:
        store.close()
    if node is not None:
        node[1].close()


def main():
    hello = w.hello(f"redis-py: redis {redis.__version__}", LOCKS, OPS, fences=FENCES, watchdogs=WATCHDOGS, client_clock=True,
                    promises=PROMISES)
    w.serve(hello, init, {"acquire": acquire, "release": release, "extend": extend, "write": write}, close)


if __name__ == "__main__":
    main()

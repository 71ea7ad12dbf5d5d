#!/usr/bin/python3
"""A locksim client in Python: python-etcd3's Lock (Debian's python3-etcd3)
on etcd, speaking locksim worker protocol v2 (docs/protocol.md in the
locksim repository), with psycopg2 (python3-psycopg2) for the protected
storage. The harness starts it as a scenario's client_cmd, e.g.

    client_cmd: [examples/python-etcd3/client.py]

python-etcd3's Lock is a key /locks/<name> put, if absent, on a lease of
the lock's ttl that nothing keeps alive: the lock lapses ttl after the
grant unless Lock.refresh() is called (the protocol's extend). stdout
carries protocol lines only; logs go to stderr.
"""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "pyworker"))
import locksim_worker as w  # noqa: E402

with w.debian_python("python-etcd3", "python3-etcd3"):
    import etcd3
    from etcd3.exceptions import ConnectionFailedError, ConnectionTimeoutError
    import grpc

LOCKS = ["etcd"]
OPS = ["acquire", "release", "extend", "write"]
FENCES = ["postgres"]  # and, without init's fence, the lock key's revision (the lock's own)
TIMEOUTS = (ConnectionTimeoutError,)
# What python-etcd3's Lock promises its users (sim findings counts a story
# against it only where it promises what the story tests): each quote is
# python-etcd3's own words at 0.12.0, copied word for word from
# etcd3/locks.py. README.md, "What the library promises", says what was
# left out and why.
LOCKS_PY = "https://github.com/kragniz/python-etcd3/blob/v0.12.0/etcd3/locks.py"
PROMISES = [
    {"property": "exclusion",
     "quote": "A distributed lock.",
     "source": f"{LOCKS_PY}#L10"},
    {"property": "expiry",
     "quote": "length of time for the lock to live for in seconds. The lock will be released after this time elapses, unless refreshed",
     "source": f"{LOCKS_PY}#L29-L30"},
    {"property": "prompt-release",
     "quote": "Release the lock.",
     "source": f"{LOCKS_PY}#L108"},
]


def log(msg):
    sys.stderr.write(f"python-etcd3: {msg}\n")
    sys.stderr.flush()


class Lease:
    """A lease held: python-etcd3's Lock, its token (the Lock's uuid1),
    its fencing token and the instant its etcd lease runs out."""

    def __init__(self, lock, token, fence, end):
        self.lock, self.token, self.fence, self.end = lock, token, fence, end


cfg = {}
cli = None
member = None  # the name of the one member python-etcd3 talks to
store = None
leases = {}
txn_rev = [0]  # the revision of the latest transaction's answer (w.note_txn_revision)
grant_t = [0]  # CLOCK_MONOTONIC ns before the latest lease grant was asked for (see tap_lease)


def tap_lease(c):
    """Lock.acquire grants a new lease at each attempt: the client's
    lease is the winning attempt's, so its end counts from that grant,
    not from the acquire's start. The client's lease() is wrapped to note
    when each grant is asked for."""
    lease = c.lease

    def noted(*args, **kwargs):
        grant_t[0] = w.mono()
        return lease(*args, **kwargs)
    c.lease = noted


def detail(err):
    """The library's error, with the gRPC status it wraps (python-etcd3
    turns UNAVAILABLE into ConnectionFailedError, DEADLINE_EXCEEDED into
    ConnectionTimeoutError)."""
    cause = err.__cause__ or err.__context__
    if isinstance(cause, grpc.RpcError) and hasattr(cause, "code"):
        return f"python-etcd3: {type(err).__name__}: {err} ({cause.code().name}: {cause.details()})"
    return f"python-etcd3: {type(err).__name__}: {err}"


def init(i):
    global cli, member, store
    w.check_init("python-etcd3", i, LOCKS, FENCES, refuse=[
        ("watchdog", "this client runs no watchdog (python-etcd3's Lock has no auto-renewal; Lock.refresh is the extend command)")])
    c = i.get("config") or {}
    members = c.get("etcd") or []
    if not members:
        raise ValueError("lock etcd needs the cluster's members (config.etcd)")
    cfg.update(i)
    # python-etcd3 0.12.0 talks to one endpoint (no failover): the first
    # member, A. Each request is bounded by the node timeout.
    host, port = members[0]["addr"].rsplit(":", 1)
    member = members[0]["name"]
    cli = etcd3.client(host=host, port=int(port), timeout=(c.get("node_timeout") or 200_000_000) / 1e9)
    w.note_txn_revision(cli, txn_rev)
    tap_lease(cli)
    try:
        cli.status()  # dials now, so that no operation of the story pays for it
    except Exception as err:
        raise RuntimeError(f"{detail(err)}: etcd member {member} at {host}:{port}") from err
    store = w.open_storage(i)


def acquire(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    start = w.mono()
    w.event(cid, {"t": start, "type": "invoke", "op": "acquire", "key": key, "ttl": ttl})
    fail = {"type": "info", "op": "acquire", "key": key}
    if key in leases:
        return w.event(cid, dict(fail, type="fail", reason="held", detail="this client holds the lock already"))
    # The lease's TTL is whole seconds; etcd raises a shorter one to its
    # minimum, and says so in the grant.
    lock = cli.lock(key, ttl=max(1, math.ceil(ttl / 1e9)))
    # timeout=0: one try (a lease grant, then a transaction that puts the
    # key if it has no create revision), no watch, no retry. With the
    # command's wait: Lock.acquire(timeout=wait), which watches the key
    # and tries again, a new lease each time, until it gets it or the
    # time is up.
    wait = (cmd.get("wait") or 0) / 1e9
    try:
        got = lock.acquire(timeout=wait)
    except Exception as err:
        reason = "timeout" if isinstance(err, TIMEOUTS) else None
        return w.event(cid, dict(fail, reason=reason, detail=detail(err)))
    if not got:
        return w.event(cid, dict(fail, type="fail", reason="held", nodes=None,
                                 detail=f"python-etcd3: Lock.acquire(timeout={wait:g}) returned False: {lock.key} exists"))
    granted = lock.lease.ttl
    lease = Lease(lock, lock.uuid.hex(), txn_rev[0], grant_t[0] + granted * 1_000_000_000)
    if cfg.get("fence") == "postgres":
        try:
            lease.fence = store.next_fence()
        except Exception as err:
            undo = w.undo_grant(lock.release)
            return w.event(cid, dict(fail, detail=f"fencing token: {err} ({undo})"))
    leases[key] = lease
    # lease_end: the lease is granted for its TTL and nothing refreshes
    # it, so it runs out TTL after the (winning attempt's) grant was asked
    # for.
    w.event(cid, {"type": "ok", "op": "acquire", "key": key, "token": lease.token, "ttl": granted * 1_000_000_000,
                  "lease_end": lease.end, "nodes": [member], "fence": lease.fence or None,
                  "detail": f"{lock.key} at revision {txn_rev[0]}, lease {lock.lease.id:x} of {granted}s"})


def request(cid, op, key, lease, call, **invoke):
    """Sends op's invocation (the lease's token; invoke adds t and ttl)
    and, with no lease, the client's refusal; otherwise makes call(lock),
    one request of the lease's Lock, and returns (done, its answer), done
    the fields of op's completion. A request that raised ends op as info
    (its outcome unknown), and done is None, as with no lease."""
    w.event(cid, dict({"type": "invoke", "op": op, "key": key, "token": lease.token if lease else None}, **invoke))
    if lease is None:
        w.no_lease(cid, op, key)
        return None, None
    done = {"op": op, "key": key, "token": lease.token}
    try:
        return done, call(lease.lock)
    except Exception as err:
        w.event(cid, dict(done, type="info", reason="timeout" if isinstance(err, TIMEOUTS) else None, detail=detail(err)))
        return None, None


def release(cid, cmd):
    key = cmd["key"]
    lease = leases.pop(key, None)
    # A transaction: delete the key if its value is this lock's uuid.
    done, ok = request(cid, "release", key, lease, lambda lock: lock.release())
    if done is None:
        return
    if ok:
        return w.event(cid, dict(done, type="ok", nodes=[member]))
    w.event(cid, dict(done, type="fail", reason="not-held", detail=f"python-etcd3: Lock.release returned False: {lease.lock.key} does not hold this lock's uuid"))


def extend(cid, cmd):
    key = cmd["key"]
    lease = leases.get(key)
    start = w.mono()
    # One LeaseKeepAlive: the lease lives its granted TTL again (the ttl
    # asked for cannot change it). A TTL of 0 says it is gone.
    done, resp = request(cid, "extend", key, lease, lambda lock: lock.refresh(), t=start, ttl=cmd.get("ttl"))
    if done is None:
        return
    if not resp or resp[0].TTL <= 0:
        leases.pop(key, None)
        return w.event(cid, dict(done, type="fail", reason="not-held", detail="python-etcd3: Lock.refresh: the lease has expired (TTL 0)"))
    lease.end = start + resp[0].TTL * 1_000_000_000
    w.event(cid, dict(done, type="ok", ttl=resp[0].TTL * 1_000_000_000, lease_end=lease.end, nodes=[member]))


def check(lease):
    """The lease check: the lease's own end (nothing refreshes it), then
    python-etcd3's Lock.is_acquired(), which reads the key and compares
    its value with the lock's uuid. A check that cannot reach etcd does
    not let the write through."""
    if w.mono() >= lease.end:
        return "the lease's TTL has run out (nothing refreshed it)"
    try:
        if not lease.lock.is_acquired():
            return f"Lock.is_acquired() is False: {lease.lock.key} is gone or another's"
    except Exception as err:
        return f"Lock.is_acquired() could not tell: {detail(err)}"
    return None


def write(cid, cmd):
    w.write(cid, cmd, leases.get(cmd["key"]), store, check if cfg.get("check_lease") else None)


def close():
    if store is not None:
        store.close()
    if cli is not None:
        cli.close()


def main():
    hello = w.hello(f"python-etcd3: etcd3 {etcd3.__version__}, grpcio {grpc.__version__}", LOCKS, OPS,
                    fences=FENCES, check_lease=True, client_clock=True, acquire_wait=True, promises=PROMISES)
    w.serve(hello, init, {"acquire": acquire, "release": release, "extend": extend, "write": write}, close)


if __name__ == "__main__":
    main()

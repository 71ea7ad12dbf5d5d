#!/usr/bin/python3
"""Your own lock, as a team writes it by hand: a Redis lock in a few
lines of redis-py, SET NX PX with a random token to take it and a plain
DEL to give it back. The release does not check the token, the mistake
the Redis page warns of ("Using just DEL is not safe as a client may
remove another client's lock."). It
speaks locksim worker protocol v2 (docs/protocol.md) and names its lock
in its hello as its own, my-lock, like locksim's redis and on the same
servers: locksim plays redis's stories with it and judges it against
redis, played on the same story.

    bin/sim run redis-unsafe-release --lock redis --client-cmd examples/my-lock/client.py

The command loop, the output and the protected storage are
examples/pyworker's (locksim_worker.py).
"""

import os
import secrets
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "pyworker"))
import locksim_worker as w  # noqa: E402

with w.debian_python("my-lock", "python3-redis"):
    import redis

LOCK = {"name": "my-lock", "like": "redis", "servers": "redis"}
OPS = ["acquire", "release", "extend", "write"]
# What my-lock promises its users: its own words, this file's docstring
# (lines 1-4), copied word for word. It calls itself a lock, so it promises
# exclusion, and nothing more: the same docstring says its release does not
# check the token (README.md, "What the library promises").
PROMISES = [
    {"property": "exclusion",
     "quote": "Your own lock, as a team writes it by hand: a Redis lock in a few lines of redis-py, SET NX PX with a "
              "random token to take it and a plain DEL to give it back.",
     "source": "examples/my-lock/client.py#L1-L4"},
]

node = None  # (name, redis.Redis)
store = None
leases = {}  # key -> token


def init(i):
    global node, store
    w.check_init("my-lock", i, [LOCK["name"]], fences=[])
    c = i.get("config") or {}
    nodes = c.get("redis") or []
    if len(nodes) != 1:
        raise ValueError(f"my-lock runs on one Redis node, got {len(nodes)}")
    host, port = nodes[0]["addr"].rsplit(":", 1)
    timeout = (c.get("node_timeout") or 200_000_000) / 1e9
    r = redis.Redis(host=host, port=int(port), socket_timeout=timeout, socket_connect_timeout=max(timeout, 1.0))
    r.ping()
    node = (nodes[0]["name"], r)
    store = w.open_storage(i)


def failed(cid, op, key, err, token=None):
    timeout = isinstance(err, redis.exceptions.TimeoutError)
    w.event(cid, {"type": "info", "op": op, "key": key, "token": token, "reason": "timeout" if timeout else None,
                  "detail": f"my-lock: {type(err).__name__}: {err}"})


def acquire(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    start = w.mono()
    w.event(cid, {"t": start, "type": "invoke", "op": "acquire", "key": key, "ttl": ttl})
    token = secrets.token_hex(16)
    try:
        got = node[1].set(key, token, nx=True, px=ttl // 1_000_000)
    except Exception as err:
        return failed(cid, "acquire", key, err)
    if not got:
        return w.event(cid, {"type": "fail", "op": "acquire", "key": key, "reason": "held",
                             "detail": f"node {node[0]} holds the key for another client (SET NX refused)"})
    leases[key] = token
    w.event(cid, {"type": "ok", "op": "acquire", "key": key, "token": token, "ttl": ttl, "nodes": [node[0]],
                  "lease_end": start + ttl})


def release(cid, cmd):
    key = cmd["key"]
    token = leases.pop(key, None)
    w.event(cid, {"type": "invoke", "op": "release", "key": key, "token": token})
    if token is None:
        return w.no_lease(cid, "release", key)
    try:
        node[1].delete(key)  # the mistake: whoever holds the key now loses it
    except Exception as err:
        return failed(cid, "release", key, err, token)
    w.event(cid, {"type": "ok", "op": "release", "key": key, "token": token})


def extend(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    token = leases.get(key)
    start = w.mono()
    w.event(cid, {"t": start, "type": "invoke", "op": "extend", "key": key, "token": token, "ttl": ttl})
    if token is None:
        return w.no_lease(cid, "extend", key)
    try:
        ok = node[1].pexpire(key, ttl // 1_000_000)  # no token check either
    except Exception as err:
        return failed(cid, "extend", key, err, token)
    if not ok:
        leases.pop(key, None)
        return w.event(cid, {"type": "fail", "op": "extend", "key": key, "token": token, "reason": "not-held",
                             "detail": "PEXPIRE: the key does not exist"})
    w.event(cid, {"type": "ok", "op": "extend", "key": key, "token": token, "ttl": ttl, "nodes": [node[0]],
                  "lease_end": start + ttl})


def write(cid, cmd):
    key = cmd["key"]
    lease = None
    if key in leases:
        lease = type("Lease", (), {"token": leases[key], "fence": 0})()
    w.write(cid, cmd, lease, store)


def close():
    if store is not None:
        store.close()
    if node is not None:
        node[1].close()


def main():
    hello = w.hello(f"my-lock: a hand-written Redis lock, redis-py {redis.__version__}", [LOCK], OPS, fences=[], promises=PROMISES)
    w.serve(hello, init, {"acquire": acquire, "release": release, "extend": extend, "write": write}, close)


if __name__ == "__main__":
    main()

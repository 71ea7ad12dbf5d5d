#!/usr/bin/python3
"""A locksim client in Python: portalocker's RedisLock (Debian's
python3-portalocker 2.2.1, over python3-redis 4.3.4), a lock of its own
like locksim's redis, speaking locksim worker protocol v2
(docs/protocol.md), with psycopg2 (python3-psycopg2) for the protected
storage.

RedisLock is no key: the lock is a subscription to the channel named
by the key. The holder's pub/sub connection subscribes to it and a
thread of the holder answers every ping published on it; a taker that
finds a subscriber pings it and, when no message comes back within
unavailable_timeout (1 s), CLIENT KILLs the connection named
"<channel>-lock". There is no TTL: the lock lasts as long as the
holder's connection. When that connection breaks, the answering thread
dies and calls _thread.interrupt_main(): the main thread gets a SIGINT
as if from the keyboard. This program takes that signal as the lock
lost and checks it before every write (portalocker/redis.py lines 21-28;
README.md).

    bin/sim run examples/portalocker/unanswered-ping.yaml

The command loop, the output and the protected storage are
examples/pyworker's (locksim_worker.py).
"""

import os
import signal
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "pyworker"))
import locksim_worker as w  # noqa: E402

with w.debian_python("portalocker", "python3-portalocker", "python3-redis"):
    import portalocker
    import redis
    from portalocker import exceptions as plexc

LOCK = {"name": "portalocker", "like": "redis", "servers": "redis"}
OPS = ["acquire", "release", "write"]
FENCES = ["postgres"]
# What portalocker's RedisLock promises its users (sim findings counts a
# story against it only where it promises what the story tests): each
# quote is portalocker's own words at 2.2.1, copied word for word from
# README.rst and portalocker/redis.py (identical at the tag v2.2.1 and in
# the released 2.2.1). README.md, "What the library promises", says what
# was left out and why.
PORTALOCKER = "https://github.com/WoLpH/portalocker/blob/v2.2.1"
PROMISES = [
    {"property": "exclusion",
     "quote": "This library now features a lock based on Redis which allows for locks across multiple threads, processes "
              "and even distributed locks across multiple computers.",
     "source": f"{PORTALOCKER}/README.rst?plain=1#L38-L40"},
    {"property": "renewal",
     "quote": "An extremely reliable Redis lock based on pubsub with a keep-alive thread",
     "source": f"{PORTALOCKER}/portalocker/redis.py#L33"},
    {"property": "expiry",
     "quote": "As opposed to most Redis locking systems based on key/value pairs, this locking method is based on the pubsub "
              "system. The big advantage is that if the connection gets killed due to network issues, crashing processes or "
              "otherwise, it will still immediately unlock instead of waiting for a lock timeout.",
     "source": f"{PORTALOCKER}/portalocker/redis.py#L35-L39"},
    {"property": "loss-notice",
     "quote": "To make sure both sides of the lock know about the connection state it is recommended to set the "
              "`health_check_interval` when creating the redis connection..",
     "source": f"{PORTALOCKER}/portalocker/redis.py#L41-L43"},
]


class Lease:
    """A lock held: the RedisLock, a token of this program's own (the
    lock has none: it is a subscription), the fencing token, and when
    portalocker interrupted the main thread, if it did."""

    def __init__(self, lock, token, fence):
        self.lock, self.token, self.fence = lock, token, fence
        self.interrupted = None  # CLOCK_MONOTONIC ns of portalocker's interrupt_main


cfg = {}
node = None  # (name, redis.Redis)
store = None
leases = {}


def on_interrupt(signum, frame):
    """portalocker's PubSubWorkerThread, when its connection breaks, calls
    _thread.interrupt_main(), which runs this SIGINT handler in the main
    thread (Python's default one raises KeyboardInterrupt there). Every
    lease held is marked lost; the next write checks it."""
    now = w.mono()
    for lease in leases.values():
        if lease.interrupted is None:
            lease.interrupted = now


def init(i):
    global node, store
    w.check_init("portalocker", i, [LOCK["name"]], FENCES)
    cfg.update(i)
    c = i.get("config") or {}
    nodes = c.get("redis") or []
    if len(nodes) != 1:
        raise ValueError(f"portalocker runs on one Redis node, got {len(nodes)}")
    host, port = nodes[0]["addr"].rsplit(":", 1)
    timeout = (c.get("node_timeout") or 200_000_000) / 1e9
    # RedisLock's own connection settings (DEFAULT_REDIS_KWARGS:
    # health_check_interval=10), with each request bounded by the
    # per-node timeout. One client for every lock, as a service shares it.
    kw = dict(portalocker.RedisLock.DEFAULT_REDIS_KWARGS)
    r = redis.Redis(host=host, port=int(port), socket_timeout=timeout, socket_connect_timeout=max(timeout, 1.0), **kw)
    pool = r.connection_pool
    conns = [pool.get_connection("PING") for _ in range(3)]  # the client's, its pub/sub's, its answers'
    for conn in conns:
        pool.release(conn)
    node = (nodes[0]["name"], r)
    store = w.open_storage(i)
    signal.signal(signal.SIGINT, on_interrupt)


def acquire(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    wait = (cmd.get("wait") or 0) / 1e9
    w.event(cid, {"type": "invoke", "op": "acquire", "key": key, "ttl": ttl})
    # No TTL: RedisLock has none. timeout=0 is one try (its
    # _timeout_generator yields once); with the story's wait, its own
    # loop, pinging a subscriber found, for that long.
    lock = portalocker.RedisLock(key, connection=node[1], timeout=wait)
    try:
        lock.acquire(timeout=wait)
    except plexc.AlreadyLocked:
        w.event(cid, {"type": "fail", "op": "acquire", "key": key, "reason": "held",
                      "detail": f"portalocker: AlreadyLocked: channel {key} has a subscriber that answered (waited {wait:g}s)"})
        return
    except Exception as err:
        w.event(cid, {"type": "info", "op": "acquire", "key": key, "reason": "timeout" if isinstance(err, redis.exceptions.TimeoutError) else None,
                      "detail": f"portalocker: {type(err).__name__}: {err}"})
        return
    fence = 0
    if cfg.get("fence") == "postgres":
        try:
            fence = store.next_fence()
        except Exception as err:
            undo = w.undo_grant(lock.release, "the lock")
            w.event(cid, {"type": "info", "op": "acquire", "key": key, "detail": f"fencing token: {err} ({undo})"})
            return
    lease = Lease(lock, uuid.uuid4().hex, fence)
    leases[key] = lease
    # ttl 0, no lease_end: held until released (or the connection breaks).
    w.event(cid, {"type": "ok", "op": "acquire", "key": key, "token": lease.token, "ttl": 0, "nodes": [node[0]], "fence": fence or None})


def release(cid, cmd):
    key = cmd["key"]
    lease = leases.pop(key, None)
    w.event(cid, {"type": "invoke", "op": "release", "key": key, "token": lease.token if lease else None})
    if lease is None:
        return w.no_lease(cid, "release", key)
    try:
        lease.lock.release()
    except Exception as err:
        w.event(cid, {"type": "info", "op": "release", "key": key, "token": lease.token, "detail": f"portalocker: {type(err).__name__}: {err}"})
        return
    if lease.interrupted is not None:
        # release() raises nothing: it stops the dead thread and
        # unsubscribes; the subscription was already gone with the connection.
        w.event(cid, {"type": "fail", "op": "release", "key": key, "token": lease.token, "reason": "not-held",
                      "detail": "portalocker had interrupted the main thread: the lock's connection broke before the release"})
        return
    w.event(cid, {"type": "ok", "op": "release", "key": key, "token": lease.token})


def lost(lease):
    """The write's check: None while portalocker has not interrupted the
    main thread since the grant, else why the lock is gone."""
    if lease.interrupted is None:
        return None
    return "portalocker interrupted the main thread (its pub/sub thread lost the lock's connection)"


def write(cid, cmd):
    w.write(cid, cmd, leases.get(cmd["key"]), store, lost)


def close():
    for lease in list(leases.values()):
        try:
            lease.lock.release()
        except Exception:
            pass
    if store is not None:
        store.close()
    if node is not None:
        node[1].close()


def main():
    hello = w.hello(f"portalocker: portalocker {portalocker.__version__} RedisLock, redis {redis.__version__}", [LOCK], OPS,
                    fences=FENCES, acquire_wait=True, promises=PROMISES)
    w.serve(hello, init, {"acquire": acquire, "release": release, "write": write}, close)


if __name__ == "__main__":
    main()

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
"""

import os
import sys

DEBIAN_PYTHON = "/usr/bin/python3"

try:
    import psycopg2
    import redis
    from redis.exceptions import LockNotOwnedError
    from redis.exceptions import TimeoutError as RedisTimeout
    from redis.lock import Lock
except ImportError as err:
    # Debian's python3-redis and python3-psycopg2 are Debian's Python's:
    # another python3 first on the PATH (pyenv, a virtualenv) has not got
    # them, so run this file again with Debian's.
    if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and os.path.exists(DEBIAN_PYTHON):
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    # No hello line: the harness reports that this program exited before
    # it, quoting this line.
    sys.stderr.write(f"redis-py: error: cannot import redis and psycopg2 ({err}); "
                     "install them with: apt-get install python3-redis python3-psycopg2\n")
    sys.exit(1)

import json
import threading
import time
import urllib.parse

HARNESS = int(os.environ.get("LOCKSIM_PROTOCOL", "1"))
PROTOCOL = 2 if HARNESS >= 2 else 1
LOCKS = ["redis"]  # redis-py's Lock: SET NX PX on one node
OPS = ["acquire", "release", "extend", "write"] if PROTOCOL >= 2 else ["acquire", "release", "extend"]
STORAGE_MODES = ["plain", "fenced", "fenced-write", "token-cas", "idempotent"]
FENCES = ["postgres", "redis-incr"]
# token: Lock.extend (the library's renewal, token-checked); pexpire: a
# plain PEXPIRE of the key, the naive renewal a user writes by hand.
WATCHDOGS = ["token", "pexpire"]
FENCE_KEY = "locksim:fence"
REFUSALS = {"fenced": "fence", "fenced-write": "fence", "token-cas": "token", "idempotent": "duplicate"}


def mono():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


# ---- output -------------------------------------------------------------

out_lock = threading.Lock()


def send(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with out_lock:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except BrokenPipeError:
            os._exit(0)  # the harness has gone


def log(msg):
    sys.stderr.write(f"redis-py: {msg}\n")
    sys.stderr.flush()


def event(cid, e):
    e.setdefault("t", mono())
    send({"id": cid, "event": {k: v for k, v in e.items() if v is not None}})


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


# ---- the protected storage ----------------------------------------------


def pg_params(url):
    """psycopg2's keywords for the harness's postgres:// URL: the
    parameters libpq has no name for (idle_session_timeout, ...) are
    server settings, sent at start-up as options (-c name=value)."""
    u = urllib.parse.urlsplit(url)
    kw = {"host": u.hostname, "port": u.port or 5432, "user": urllib.parse.unquote(u.username or ""),
          "dbname": urllib.parse.unquote(u.path.lstrip("/")) or None}
    if u.password:
        kw["password"] = urllib.parse.unquote(u.password)
    options = []
    for k, v in urllib.parse.parse_qsl(u.query):
        if k in ("sslmode", "connect_timeout"):
            kw[k] = v
        else:
            options.append(f"-c {k}={v}")
    if options:
        kw["options"] = " ".join(options)
    return {k: v for k, v in kw.items() if v is not None}


class StorageError(Exception):
    pass


class Storage:
    """The client's handle on the protected counter: one psycopg2
    connection (autocommit) through this client's own proxy, opened again
    after it broke. The SQL is the protocol's (docs/protocol.md, "The
    protected storage")."""

    def __init__(self, url, mode):
        self.mode = mode or "plain"
        self.params = pg_params(url)
        self.conn = None

    def connect(self):
        if self.conn is None or self.conn.closed:
            try:
                self.conn = psycopg2.connect(**self.params)
            except psycopg2.Error as err:
                raise StorageError(f"storage: {str(err).strip()}") from err
            self.conn.autocommit = True
        return self.conn

    def run(self, what, sql, args=()):
        """Runs one statement; returns (rowcount, rows)."""
        c = self.connect()
        try:
            with c.cursor() as cur:
                cur.execute(sql, args)
                rows = cur.fetchall() if cur.description else []
                return cur.rowcount, rows
        except psycopg2.Error as err:
            raise StorageError(f"storage {what}: {str(err).strip()}") from err

    def read(self, token, fence):
        """Opens a critical section: claims the row for token (token-cas)
        and reads the counter, raising the fence to fence (fenced)."""
        if self.mode == "token-cas":
            if not token:
                raise StorageError("storage claim: empty token")
            n, _ = self.run("claim", "UPDATE counter SET owner = %s WHERE id = 1", (token,))
            if n != 1:
                raise StorageError("storage claim: counter row missing")
        if self.mode == "fenced" and fence > 0:
            _, rows = self.run("read", "UPDATE counter SET fence = GREATEST(fence, %s) WHERE id = 1 RETURNING value", (fence,))
        else:
            _, rows = self.run("read", "SELECT value FROM counter WHERE id = 1")
        if len(rows) != 1:
            raise StorageError("storage read: counter row missing")
        return int(rows[0][0])

    def write(self, read, value, fence, token):
        """Stores value as the mode allows: True accepted, False refused by
        the storage; StorageError when the outcome is unknown."""
        if self.mode == "plain":
            n, _ = self.run("write", "UPDATE counter SET value = %s WHERE id = 1", (value,))
            if n != 1:
                raise StorageError("storage write: counter row missing")
            return True
        if self.mode in ("fenced", "fenced-write"):
            n, _ = self.run("write", "UPDATE counter SET value = %s, fence = %s WHERE id = 1 AND fence <= %s", (value, fence, fence))
            return n == 1
        if self.mode == "token-cas":
            n, _ = self.run("write", "UPDATE counter SET value = %s WHERE id = 1 AND owner = %s", (value, token))
            return n == 1
        if self.mode == "idempotent":
            return self.write_once(read, value)
        raise StorageError(f"storage: unknown mode {self.mode}")

    def write_once(self, read, value):
        """Idempotent mode's write: the run (job, period = the value read)
        and the counter update commit together, or not at all."""
        self.run("write", "BEGIN")
        try:
            n, _ = self.run("write", "INSERT INTO runs (job, period) VALUES (%s, %s) ON CONFLICT (job, period) DO NOTHING",
                            ("counter", str(read)))
            if n == 0:
                self.run("write", "ROLLBACK")
                return False
            n, _ = self.run("write", "UPDATE counter SET value = %s WHERE id = 1", (value,))
            if n != 1:
                raise StorageError("storage write: counter row missing")
            self.run("write", "COMMIT")
            return True
        except StorageError:
            if self.conn is not None and not self.conn.closed:
                try:
                    self.run("write", "ROLLBACK")
                except StorageError:
                    pass
            raise

    def close(self):
        if self.conn is not None and not self.conn.closed:
            self.conn.close()


# ---- fencing tokens, the watchdog ----------------------------------------


def draw_fence():
    """A granted lease's fencing token from init's source."""
    if cfg.get("fence") == "postgres":
        _, rows = store.run("fence", "SELECT nextval('fence_seq')")
        return int(rows[0][0])
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
        event(cid, note)
        if note.get("reason") == "not-held":
            drop_lease(key, lease.token)
            return


# ---- commands -----------------------------------------------------------


def init(i):
    global node, store
    if i.get("lock") not in LOCKS:
        raise ValueError(f"redis-py implements lock {LOCKS[0]}, not {i.get('lock')}")
    for what, v, have in (("storage mode", i.get("storage_mode"), STORAGE_MODES), ("fence source", i.get("fence"), FENCES),
                          ("watchdog", i.get("watchdog"), WATCHDOGS)):
        if v and v not in have:
            raise ValueError(f"redis-py has no {what} {v} (it has {', '.join(have)})")
    if i.get("check_lease"):
        raise ValueError("redis-py's Lock keeps no lease time on the client: it has no lease check before a write")
    if i.get("fence") == "postgres" and not i.get("storage"):
        raise ValueError("fence postgres needs the storage connection")
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
    if i.get("storage"):
        store = Storage(i["storage"], i.get("storage_mode"))
        store.connect()


def acquire(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    start = mono()
    event(cid, {"t": start, "type": "invoke", "op": "acquire", "key": key, "ttl": ttl})
    lock = Lock(node[1], key, timeout=ttl / 1e9, blocking=False, thread_local=False)
    try:
        got = lock.acquire(blocking=False)
    except Exception as err:
        event(cid, {"type": "info", "op": "acquire", "key": key, "reason": reason_of(err), "detail": f"redis-py: {type(err).__name__}: {err}"})
        return
    if not got:
        event(cid, {"type": "fail", "op": "acquire", "key": key, "reason": "held", "nodes": None,
                    "detail": f"node {node[0]} holds the key for another client (SET NX refused)"})
        return
    token = lock.local.token.decode()
    fence = 0
    if cfg.get("fence"):
        try:
            fence = draw_fence()
        except Exception as err:
            undo = "lock released"
            try:
                lock.release()
            except Exception as rerr:
                undo = f"and releasing the lock: {rerr}"
            event(cid, {"type": "info", "op": "acquire", "key": key, "detail": f"fencing token: {err} ({undo})"})
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
    event(cid, done)


def no_lease(cid, op, key):
    event(cid, {"type": "fail", "op": op, "key": key, "reason": "no-lease", "detail": "refused by the client: it holds no lease, so it sends nothing"})


def release(cid, cmd):
    key = cmd["key"]
    lease = lease_of(key)
    event(cid, {"type": "invoke", "op": "release", "key": key, "token": lease.token if lease else None})
    if lease is not None and lease.stop is not None:
        lease.stop.set()
    if lease is None:
        return no_lease(cid, "release", key)
    drop_lease(key, lease.token)
    try:
        lease.lock.release()
        event(cid, {"type": "ok", "op": "release", "key": key, "token": lease.token})
    except LockNotOwnedError as err:
        event(cid, {"type": "fail", "op": "release", "key": key, "token": lease.token, "reason": "not-held", "detail": f"redis-py: {err}"})
    except Exception as err:
        event(cid, {"type": "info", "op": "release", "key": key, "token": lease.token, "reason": reason_of(err),
                    "detail": f"redis-py: {type(err).__name__}: {err}"})


def extend(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    lease = lease_of(key)
    start = mono()
    event(cid, {"t": start, "type": "invoke", "op": "extend", "key": key, "token": lease.token if lease else None, "ttl": ttl})
    if lease is None:
        return no_lease(cid, "extend", key)
    try:
        lease.lock.extend(ttl / 1e9, replace_ttl=True)
    except LockNotOwnedError as err:
        event(cid, {"type": "fail", "op": "extend", "key": key, "token": lease.token, "reason": "not-held", "detail": f"redis-py: {err}"})
        return
    except Exception as err:
        event(cid, {"type": "info", "op": "extend", "key": key, "token": lease.token, "reason": reason_of(err),
                    "detail": f"redis-py: {type(err).__name__}: {err}"})
        return
    done = {"type": "ok", "op": "extend", "key": key, "token": lease.token, "ttl": ttl, "nodes": [node[0]]}
    if lease.stop is None:
        done["lease_end"] = start + ttl
    event(cid, done)


def write(cid, cmd):
    """One critical section on the protected counter: read it (the
    invocation is stamped before the read and sent after it), work for
    cmd's work, write read+1 with this lease's fencing token and token. A
    pause (SIGSTOP) during the work delays the write, as in Kleppmann's
    diagram."""
    key = cmd["key"]
    lease = lease_of(key)
    token = lease.token if lease else None
    fence = lease.fence if lease and lease.fence else None
    invoke = {"t": mono(), "type": "invoke", "op": "write", "key": key, "token": token, "fence": fence,
              "unlocked": True if cmd.get("unlocked") else None}
    done = {"type": "fail", "op": "write", "key": key, "token": token, "fence": fence}
    if lease is None and not cmd.get("unlocked"):
        event(cid, invoke)
        return no_lease(cid, "write", key)
    if store is None:
        event(cid, invoke)
        event(cid, dict(done, detail="this scenario has no protected storage"))
        return
    try:
        read = store.read(token, fence or 0)
    except StorageError as err:
        # Nothing was written: the counter is untouched.
        event(cid, invoke)
        event(cid, dict(done, reason="read", detail=str(err)))
        return
    event(cid, invoke)
    if cmd.get("work"):
        time.sleep(cmd["work"] / 1e9)
    done["read"], done["wrote"] = read, read + 1
    try:
        accepted = store.write(read, read + 1, fence or 0, token)
    except StorageError as err:
        event(cid, dict(done, type="info", detail=str(err)))
        return
    if accepted:
        event(cid, dict(done, type="ok"))
    else:
        event(cid, dict(done, reason=REFUSALS.get(store.mode), detail=f"storage ({store.mode}) refused the write"))


COMMANDS = {"acquire": acquire, "release": release, "extend": extend}
if "write" in OPS:
    COMMANDS["write"] = write


def handle(line):
    try:
        cmd = json.loads(line)
    except ValueError as err:
        send({"id": 0, "done": True, "error": f"bad command: {err}"})
        return
    cid = cmd.get("id", 0)
    try:
        op = cmd.get("op")
        if op == "init":
            init(cmd.get("init") or {})
        elif node is None:
            raise ValueError(f"{op} before init")
        elif op in COMMANDS:
            COMMANDS[op](cid, cmd)
        else:
            raise ValueError(f"unknown op {json.dumps(op)} (redis-py carries out {', '.join(OPS)})")
        send({"id": cid, "done": True})
    except Exception as err:
        send({"id": cid, "done": True, "error": f"{type(err).__name__}: {err}"})


def watch_stalls():
    """Wakes every 10 ms and tells the harness of any span longer than
    60 ms in which this process did not run (the machine too busy, or a
    pause the story made)."""
    last = mono()
    while True:
        time.sleep(0.01)
        now = mono()
        if now - last > 60_000_000:
            send({"stall": {"from": last, "to": now}})
        last = now


def main():
    hello = {"protocol": PROTOCOL, "name": f"redis-py: redis {redis.__version__}, psycopg2 {psycopg2.__version__.split()[0]}, "
             f"Python {sys.version.split()[0]}", "locks": LOCKS, "ops": OPS}
    if PROTOCOL >= 2:
        hello.update(storage_modes=STORAGE_MODES, fences=FENCES, watchdogs=WATCHDOGS, client_clock=True)
    send(hello)
    threading.Thread(target=watch_stalls, daemon=True).start()
    # Commands are carried out one at a time, in order; when stdin closes
    # the client finishes what it has, closes its connections and exits.
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        if line.strip():
            handle(line)
    for lease in list(leases.values()):
        if lease.stop is not None:
            lease.stop.set()
    if store is not None:
        store.close()
    if node is not None:
        node[1].close()
    os._exit(0)


if __name__ == "__main__":
    main()

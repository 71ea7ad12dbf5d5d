"""What every Python client of locksim worker protocol v2 has in common
(docs/protocol.md): the start-up under Debian's Python, the output (one
JSON line at a time, stamped with CLOCK_MONOTONIC), the command loop, the
stall watcher, and the protected storage's read-modify-write with
psycopg2 (the protocol's SQL, "The protected storage"). A client program
(examples/redis-py/client.py, examples/kazoo/client.py,
examples/python-etcd3/client.py) adds its lock: init, acquire, release
(extend, a watchdog) and its lease's check.

A client program finds this module from its own directory, imports it,
and imports its library inside debian_python():

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "pyworker"))
    import locksim_worker as w  # noqa: E402

    with w.debian_python("kazoo", "python3-kazoo"):
        import kazoo.version

This module loads under any python3: when its import of psycopg2 fails,
debian_python() raises that error again, as if the block had.
"""

import contextlib
import json
import os
import sys
import threading
import time
import urllib.parse

try:
    import psycopg2
except ImportError as err:  # raised again by debian_python(), which runs the program again
    psycopg2, _psycopg2_missing = None, err

DEBIAN_PYTHON = "/usr/bin/python3"
HARNESS = int(os.environ.get("LOCKSIM_PROTOCOL", "1"))
PROTOCOL = 2 if HARNESS >= 2 else 1
STORAGE_MODES = ["plain", "fenced", "fenced-write", "token-cas", "idempotent"]
REFUSALS = {"fenced": "fence", "fenced-write": "fence", "token-cas": "token", "idempotent": "duplicate"}
PSYCOPG2 = psycopg2.__version__.split()[0] if psycopg2 else None
PYTHON = sys.version.split()[0]


@contextlib.contextmanager
def debian_python(client, *packages):
    """Runs the block (the client's imports of its library) and, when it
    or this module's import of psycopg2 fails, runs the program again
    with Debian's Python: the Debian packages (python3-psycopg2 and
    packages) are Debian's Python's, and another python3 first on the PATH
    (pyenv, a virtualenv) has not got them. Already Debian's (or none),
    it exits 1 with no hello line: the harness reports that the program
    exited before it, quoting the line written to stderr."""
    packages = list(packages) + ["python3-psycopg2"]
    try:
        if psycopg2 is None:
            raise _psycopg2_missing
        yield
    except ImportError as err:
        if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and os.path.exists(DEBIAN_PYTHON):
            os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
        modules = " and ".join(p.replace("python3-", "", 1) for p in packages)
        sys.stderr.write(f"{client}: error: cannot import {modules} ({err}); "
                         f"install them with: apt-get install {' '.join(packages)}\n")
        sys.exit(1)


def mono():
    """CLOCK_MONOTONIC in ns: the clock the harness stamps with."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


# ---- output -------------------------------------------------------------

_out = threading.Lock()


def send(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with _out:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except BrokenPipeError:
            os._exit(0)  # the harness has gone


def event(cid, e):
    """Sends e as an event of command cid, stamped now unless it has t;
    fields that are None are left out."""
    e.setdefault("t", mono())
    send({"id": cid, "event": {k: v for k, v in e.items() if v is not None}})


def no_lease(cid, op, key):
    event(cid, {"type": "fail", "op": op, "key": key, "reason": "no-lease",
                "detail": "refused by the client: it holds no lease, so it sends nothing"})


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
    after it broke."""

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

    def next_fence(self):
        """A fencing token from the storage's sequence (fence postgres)."""
        _, rows = self.run("fence", "SELECT nextval('fence_seq')")
        return int(rows[0][0])

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


def open_storage(i):
    """The storage of init i, connected now (so that no operation of the
    story pays for dialling), or None when the scenario has none."""
    if not i.get("storage"):
        return None
    store = Storage(i["storage"], i.get("storage_mode"))
    store.connect()
    return store


def undo_grant(release, what="it"):
    """Gives back a lock just granted whose fencing token could not be
    drawn, and says how that went (for the acquire's info event)."""
    try:
        release()
    except Exception as err:
        return f"and releasing {what}: {err}"
    return "lock released"


def write(cid, cmd, lease, store, check=None):
    """The write command: one critical section on the protected counter.
    lease has token and fence (None: no lease); check, when the story
    asks for the lease check, is called after the work and returns None
    (still valid) or why the lease is gone. The invocation is stamped
    before the read and sent after it; a pause (SIGSTOP) during the work
    delays the write, as in Kleppmann's diagram."""
    key = cmd["key"]
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
        event(cid, invoke)
        event(cid, dict(done, reason="read", detail=str(err)))
        return
    event(cid, invoke)
    if cmd.get("work"):
        time.sleep(cmd["work"] / 1e9)
    done["read"], done["wrote"] = read, read + 1
    if check is not None and lease is not None:
        gone = check(lease)
        if gone:
            event(cid, dict(done, reason="expired", detail=f"lease check: {gone}; nothing written"))
            return
    try:
        accepted = store.write(read, read + 1, fence or 0, token)
    except StorageError as err:
        event(cid, dict(done, type="info", detail=str(err)))
        return
    if accepted:
        event(cid, dict(done, type="ok"))
    else:
        event(cid, dict(done, reason=REFUSALS.get(store.mode), detail=f"storage ({store.mode}) refused the write"))


def note_txn_revision(etcd_client, rev):
    """python-etcd3's Lock does not keep the revision at which it put its
    key (its own TODO: "save the created revision so we can check it
    later"): the client's gRPC stub's Txn is wrapped to note each answer's
    revision in rev[0]. An acquire's put is its transaction's only write,
    so that revision is the key's create revision, the fencing token
    (examples/python-etcd3, examples/tooz's tooz-etcd3)."""
    txn = etcd_client.kvstub.Txn

    def noted(*args, **kwargs):
        resp = txn(*args, **kwargs)
        rev[0] = resp.header.revision
        return resp
    etcd_client.kvstub.Txn = noted


# ---- hello, init, the command loop ---------------------------------------


def hello(name, locks, ops, **v2):
    """The hello line of the client name (its library and version; the
    versions of psycopg2 and Python are added): protocol 2 when the
    harness speaks it, with every storage mode and v2's fields (fences,
    watchdogs, check_lease, client_clock); protocol 1 without write."""
    h = {"protocol": PROTOCOL, "name": f"{name}, psycopg2 {PSYCOPG2}, Python {PYTHON}", "locks": locks,
         "ops": ops if PROTOCOL >= 2 else [op for op in ops if op != "write"]}
    if PROTOCOL >= 2:
        h.update(storage_modes=STORAGE_MODES, **v2)
    return h


def check_init(client, i, locks, fences, watchdogs=(), refuse=()):
    """Refuses an init the client cannot carry out: another lock, a
    storage mode, fence source or watchdog it has not got, each field of
    refuse (field, why) that init sets, fence postgres without storage."""
    if i.get("lock") not in locks:
        raise ValueError(f"{client} implements lock {locks[0]}, not {i.get('lock')}")
    have = [("storage mode", i.get("storage_mode"), STORAGE_MODES), ("fence source", i.get("fence"), fences)]
    if watchdogs:
        have.append(("watchdog", i.get("watchdog"), watchdogs))
    for what, v, known in have:
        if v and v not in known:
            raise ValueError(f"{client} has no {what} {v} (it has {', '.join(known)})")
    for field, why in refuse:
        if i.get(field):
            raise ValueError(why)
    if i.get("fence") == "postgres" and not i.get("storage"):
        raise ValueError("fence postgres needs the storage connection")


def _watch_stalls():
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


def serve(hello, init, commands, close):
    """Prints hello, then carries out one command a line until stdin
    closes: init(dict) for init, commands[op](cid, cmd) for the others
    the hello names. close() ends the client's connections before it
    exits."""
    client = hello["name"].split(":")[0]
    commands = {op: do for op, do in commands.items() if op in hello["ops"]}
    send(hello)
    threading.Thread(target=_watch_stalls, daemon=True).start()
    ready = False
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
        except ValueError as err:
            send({"id": 0, "done": True, "error": f"bad command: {err}"})
            continue
        cid = cmd.get("id", 0)
        try:
            op = cmd.get("op")
            if op == "init":
                init(cmd.get("init") or {})
                ready = True
            elif not ready:
                raise ValueError(f"{op} before init")
            elif op in commands:
                commands[op](cid, cmd)
            else:
                raise ValueError(f"unknown op {json.dumps(op)} ({client} carries out {', '.join(hello['ops'])})")
            send({"id": cid, "done": True})
        except Exception as err:
            send({"id": cid, "done": True, "error": f"{type(err).__name__}: {err}"})
    try:
        close()
    finally:
        os._exit(0)

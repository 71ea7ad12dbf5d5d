#!/usr/bin/python3
"""A locksim client in Python: Kazoo's Lock recipe (Debian's python3-kazoo)
on ZooKeeper, speaking locksim worker protocol v2 (docs/protocol.md in the
locksim repository), with psycopg2 (python3-psycopg2) for the protected
storage. The harness starts it as a scenario's client_cmd, e.g.

    client_cmd: [examples/kazoo/client.py]

Each acquire opens a Kazoo session of its own whose timeout is the story's
ttl (as locksim's own ZooKeeper lock does, clients/zookeeper.go) and tries
Kazoo's Lock once, without blocking; release gives the lock back and
closes the session. A listener on the session's state (Kazoo's
CONNECTED, SUSPENDED, LOST) is the library's own defence, and the lease
check reads it. stdout carries protocol lines only; logs go to stderr.
"""

import logging
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "pyworker"))
import locksim_worker as w  # noqa: E402

with w.debian_python("kazoo", "python3-kazoo"):
    import kazoo.version
    from kazoo.client import KazooClient
    from kazoo.exceptions import LockTimeout, NoNodeError, SessionExpiredError
    from kazoo.protocol.states import KazooState

LOCKS = ["zookeeper"]  # the lock recipe: ephemeral sequential znodes, lowest wins
OPS = ["acquire", "release", "write"]
FENCES = ["postgres"]  # and, without init's fence, the znode's czxid (the lock's own)
ROOT = "/locksim/lock"  # the locks' parent znode, as clients/zookeeper.go has it
DEFAULT_SESSION = 2.0  # seconds: the session timeout when acquire's ttl is 0
# What Kazoo's Lock promises its users (sim findings counts a story against
# it only where it promises what the story tests): each quote is Kazoo's
# own words at 2.8.0, copied word for word from kazoo/recipe/lock.py and
# docs/basic_usage.rst. README.md, "What the library promises", says what
# was left out and why.
KAZOO = "https://github.com/python-zk/kazoo/blob/2.8.0"
PROMISES = [
    {"property": "exclusion",
     "quote": "This is an exclusive lock.",
     "source": f"{KAZOO}/kazoo/recipe/lock.py#L74"},
    {"property": "loss-notice",
     "quote": "It's highly recommended to add a state listener with :meth:`~KazooClient.add_listener` and watch for "
              ":attr:`~KazooState.LOST` and :attr:`~KazooState.SUSPENDED` state changes and re-act appropriately. "
              "In the event that a :attr:`~KazooState.LOST` state occurs, its certain that the lock and/or the lease has been lost.",
     "source": f"{KAZOO}/kazoo/recipe/lock.py#L9-L14"},
    {"property": "prompt-release",
     "quote": "Release the lock immediately.",
     "source": f"{KAZOO}/kazoo/recipe/lock.py#L345"},
    {"property": "expiry",
     "quote": "When a connection transitions to `LOST`, any ephemeral nodes that have been created will be removed by "
              "Zookeeper. This affects all recipes that create ephemeral nodes, such as the Lock recipe.",
     "source": f"{KAZOO}/docs/basic_usage.rst?plain=1#L115-L117"},
]


def log(msg):
    sys.stderr.write(f"kazoo: {msg}\n")
    sys.stderr.flush()


class Lease:
    """A lease held: its Kazoo session and Lock, its token (the Lock's
    random prefix), its fencing token, and what the session's listener
    has heard since before the acquire."""

    def __init__(self, zk):
        self.zk, self.lock, self.token, self.fence, self.sid = zk, None, None, 0, None
        self.suspended = False  # the connection is down (Kazoo's SUSPENDED), not yet back
        self.lost = False  # Kazoo said LOST: the session expired (or was closed)
        self.was_suspended = False  # SUSPENDED at some point since the acquire began

    def listen(self, state):
        """Kazoo's connection-state listener (called on its event thread;
        it must not block)."""
        if state == KazooState.LOST:
            self.lost = True
        self.suspended = state == KazooState.SUSPENDED
        self.was_suspended = self.was_suspended or self.suspended
        log(f"lease {self.token or '(acquiring)'}: session state {state}")

    def gone(self):
        """Why the lease's session is gone as far as Kazoo has said, or
        None: LOST, or a session id other than the grant's (Kazoo opens a
        new session by itself after an expiry)."""
        if self.lost:
            return "Kazoo reported the session LOST (expired): its znode is deleted with it"
        cid = self.zk.client_id
        if self.sid is not None and (cid is None or cid[0] != self.sid):
            return "the session the lock was granted on has been replaced (it expired)"
        return None


cfg = {}
hosts = ""
store = None
leases = {}


def close_session(zk):
    """Ends a Kazoo session in the background (stop waits for the
    ensemble's answer): the ensemble then deletes the session's znodes,
    or, unreachable, expires the session later."""
    def end():
        try:
            zk.stop()
            zk.close()
        except Exception as err:
            log(f"closing a session: {err}")
    threading.Thread(target=end, daemon=True).start()


def init(i):
    global hosts, store
    w.check_init("kazoo", i, LOCKS, FENCES, refuse=[("watchdog", "Kazoo's Lock has no renewal to run: the session's pings keep its znode")])
    members = (i.get("config") or {}).get("zookeeper") or []
    if not members:
        raise ValueError("lock zookeeper needs the ensemble's members (config.zookeeper)")
    cfg.update(i)
    hosts = ",".join(m["addr"] for m in members)
    store = w.open_storage(i)


def bound(session):
    """How long a call of the lock may take, in seconds, as
    clients/zookeeper.go bounds it: 10 node timeouts, and at least two
    session timeouts (Kazoo gives up on a silent member after two thirds
    of one)."""
    node_timeout = ((cfg.get("config") or {}).get("node_timeout") or 200_000_000) / 1e9
    return max(10 * node_timeout, 2 * session)


def acquire(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    w.event(cid, {"type": "invoke", "op": "acquire", "key": key, "ttl": ttl})
    fail = {"type": "info", "op": "acquire", "key": key}
    if key in leases:
        return w.event(cid, dict(fail, type="fail", reason="held", detail="this client holds the lock already (Kazoo's Lock is not re-entrant)"))
    session = ttl / 1e9 if ttl > 0 else DEFAULT_SESSION
    limit = bound(session)
    # The session timeout is the ttl (the ensemble clamps it to its
    # [minSessionTimeout, maxSessionTimeout]). Kazoo retries a command
    # that lost its connection, even past a session expiry
    # (ignore_expire): bounded here by the call's limit.
    zk = KazooClient(hosts=hosts, timeout=session, command_retry={"max_tries": -1, "deadline": limit, "max_delay": 0.5},
                     logger=logging.getLogger(f"kazoo.client{cfg.get('config', {}).get('client_id', '')}"))
    lease = Lease(zk)
    zk.add_listener(lease.listen)
    try:
        zk.start(timeout=limit)
    except Exception as err:
        close_session(zk)
        return w.event(cid, dict(fail, detail=f"kazoo: no session with {hosts}: {type(err).__name__}: {err}"))
    lock = zk.Lock(f"{ROOT}/{key}", f"client {cfg.get('config', {}).get('client_id', '')}")
    lease.lock, lease.token, lease.sid = lock, lock.prefix[:32], zk.client_id[0]
    wait = (cmd.get("wait") or 0) / 1e9
    try:
        if wait > 0:
            # The command's wait: the recipe waits behind the lower
            # znodes, and retries through a lost connection or an
            # expired session (KazooRetry's ignore_expire), on the new
            # session Kazoo opens by itself, for at most wait.
            got = lock.acquire(blocking=True, timeout=wait)
        else:
            # blocking=False: one try, no wait behind a lower znode.
            # timeout bounds Kazoo's retries of a lost connection (with
            # None, the recipe's KazooRetry(max_tries=None) retries for
            # ever).
            got = lock.acquire(blocking=False, timeout=limit)
    except LockTimeout as err:
        close_session(zk)
        return w.event(cid, dict(fail, type="fail", reason="held", detail=f"kazoo: Lock.acquire(timeout={wait:g}): LockTimeout: {err}"))
    except Exception as err:
        close_session(zk)
        return w.event(cid, dict(fail, detail=f"kazoo: Lock.acquire: {type(err).__name__}: {err}"))
    if not got:
        close_session(zk)
        if lease.was_suspended or lease.gone():
            # The recipe answers False also when its retries ran out.
            return w.event(cid, dict(fail, detail="kazoo: Lock.acquire returned False after its connection was lost (retries ran out): outcome unknown"))
        return w.event(cid, dict(fail, type="fail", reason="held",
                                 detail=f"kazoo: Lock.acquire(blocking=False) returned False: a lower znode than {lock.node} holds {key}"))
    path = f"{lock.path}/{lock.node}"
    adopted = moved = ""
    try:
        # The znode's czxid: the zxid at which it was created, the lock's
        # own fencing token (clients/zookeeper.go gives the same).
        stat = zk.exists(path)
        if stat is None:
            raise NoNodeError(f"{path} is gone")
        # The recipe may have been granted on a session other than the
        # one it started on (Kazoo opens a new one after an expiry); its
        # znode should be the current session's. One of an earlier
        # session is apache/curator#1121's shape (_find_node adopts any
        # child with the lock's prefix): the grant stands, as the recipe
        # says, and its detail tells it.
        sid = zk.client_id[0]
        if stat.ephemeralOwner != sid:
            adopted = f"; the znode is owned by session 0x{stat.ephemeralOwner:x}, not this one (0x{sid:x}): the recipe took a znode of an earlier session"
        if sid != lease.sid:
            lease.sid, lease.lost = sid, False
            moved = f"; granted on a new session (0x{sid:x}), the one it started on expired while it waited"
        lease.fence = stat.czxid
        if cfg.get("fence") == "postgres":
            lease.fence = store.next_fence()
    except Exception as err:
        undo = w.undo_grant(lock.release)
        close_session(zk)
        return w.event(cid, dict(fail, detail=f"kazoo: fencing token of {path}: {type(err).__name__}: {err} ({undo})"))
    leases[key] = lease
    # No lease_end: the recipe believes it holds the lock until it
    # releases it (the session's pings keep the znode); no ttl: the lock
    # does not expire by time, its session does.
    w.event(cid, {"type": "ok", "op": "acquire", "key": key, "token": lease.token, "fence": lease.fence,
                  "detail": f"znode {path}, session 0x{lease.sid:x} of {session:g}s{moved}{adopted}"})


def release(cid, cmd):
    key = cmd["key"]
    lease = leases.pop(key, None)
    w.event(cid, {"type": "invoke", "op": "release", "key": key, "token": lease.token if lease else None})
    if lease is None:
        return w.no_lease(cid, "release", key)
    done = {"op": "release", "key": key, "token": lease.token}
    try:
        try:
            # Kazoo's release deletes the znode and swallows NoNodeError:
            # after an expiry it answers True although it held nothing.
            released = lease.lock.release()
        except SessionExpiredError as err:
            return w.event(cid, dict(done, type="fail", reason="not-held", detail=f"kazoo: Lock.release: {type(err).__name__}: {err}"))
        except Exception as err:
            return w.event(cid, dict(done, type="info", detail=f"kazoo: Lock.release: {type(err).__name__}: {err}"))
        gone = lease.gone()
        if gone:
            return w.event(cid, dict(done, type="fail", reason="not-held", detail=f"{gone} (Kazoo's Lock.release returned {released})"))
        if not released:
            return w.event(cid, dict(done, type="fail", reason="not-held", detail="kazoo: Lock.release returned False (not acquired)"))
        w.event(cid, dict(done, type="ok"))
    finally:
        close_session(lease.zk)


def check(lease):
    """The lease check: what Kazoo's listener has said. LOST (or a new
    session) means the znode is gone; SUSPENDED means Kazoo cannot tell,
    and the recipe's documentation (and Curator's) says not to count on
    the lock then. A client that has not yet noticed a broken session
    (after a pause, say) passes: the check knows only what Kazoo knows."""
    gone = lease.gone()
    if gone:
        return gone
    if lease.suspended or lease.zk.state == KazooState.SUSPENDED:
        return "the session's connection is SUSPENDED: the session may have expired"
    return None


def write(cid, cmd):
    w.write(cid, cmd, leases.get(cmd["key"]), store, check if cfg.get("check_lease") else None)


def close():
    for lease in list(leases.values()):
        close_session(lease.zk)
    if store is not None:
        store.close()


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="kazoo: %(name)s: %(levelname)s: %(message)s")
    hello = w.hello(f"kazoo: kazoo {kazoo.version.__version__}", LOCKS, OPS, fences=FENCES, check_lease=True, client_clock=True,
                    acquire_wait=True, promises=PROMISES)
    w.serve(hello, init, {"acquire": acquire, "release": release, "write": write}, close)


if __name__ == "__main__":
    main()

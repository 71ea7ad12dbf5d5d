#!/usr/bin/python3
"""A locksim client in Python: OpenStack's tooz (Debian's python3-tooz),
the coordination library of OpenStack's services, speaking locksim worker
protocol v2 (docs/protocol.md in the locksim repository), with psycopg2
(python3-psycopg2) for the protected storage. The harness starts it as a
scenario's client_cmd, e.g.

    client_cmd: [examples/tooz/client.py]

One program, one tooz lock API, a driver per lock: init's lock picks it.

- tooz-redis, like redis: tooz's RedisLock (tooz/drivers/redis.py), a
  redis-py Lock made with thread_local=False, its TTL the driver's
  lock_timeout in whole seconds;
- tooz-pgsql, like postgres-session: tooz's PostgresLock
  (tooz/drivers/pgsql.py), pg_try_advisory_lock on a connection of its
  own, opened at each acquire and closed at the release, keyed by the
  first two bytes of the name's MD5;
- tooz-etcd3, like etcd: tooz's Etcd3Lock (tooz/drivers/etcd3.py),
  python-etcd3's Lock on a lease of lock_timeout whole seconds, renewed
  by heartbeat();
- tooz-memcached, like memcached: tooz's MemcachedLock
  (tooz/drivers/memcached.py), pymemcache's add of the member id with an
  expiry of lock_timeout whole seconds; release is a get then a delete,
  heartbeat() a touch, neither compared with anything;
- tooz-zookeeper, like zookeeper: tooz's ZooKeeperLock
  (tooz/drivers/zookeeper.py), Kazoo's Lock recipe on the coordinator's
  one Kazoo session, whose timeout is the driver's timeout option in
  whole seconds; no TTL of its own, no heartbeat of the lock (the
  coordinator's heart reads a znode; Kazoo's pings keep the session);
- tooz-etcd3gw, like etcd: tooz's other etcd driver's Etcd3Lock
  (tooz/drivers/etcd3gw.py), over etcd3gw's HTTP client of etcd's JSON
  gateway: a lease of lock_timeout whole seconds and a create-if-absent
  transaction, renewed by heartbeat(). Both etcd drivers stand in for
  etcd, and a program names each lock it stands in for once: this one
  is offered only with --drivers tooz-etcd3gw (examples/tooz-etcd3gw).

--drivers NAME,... offers those drivers alone; the default is every
driver but tooz-etcd3gw.

Each coordinator is started with its heart (start(start_heart=True)), as
tooz's docs ask: for every driver whose coordinator has a heartbeat()
(requires_beating: all but tooz-pgsql), tooz's heart thread calls it
every half of min(lock_timeout, membership_timeout), and it beats every
lock held. The program reports each beat of a lock it holds as a renew
note of the acquire's command (docs/protocol.md, "The watchdog"), and an
acquire granted by those drivers has no lease_end: the holder believes
it holds the lock until it releases it, as tooz tells it.

stdout carries protocol lines only; logs go to stderr.
"""

import base64
import inspect
import math
import os
import socket
import sys
import threading
import urllib.parse
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "pyworker"))
import locksim_worker as w  # noqa: E402

with w.debian_python("tooz", "python3-tooz"):
    import importlib.metadata
    import importlib.util
    import kazoo.version
    from kazoo.exceptions import LockTimeout, SessionExpiredError
    import redis
    from psycopg2 import extensions as pgext
    from tooz import coordination
    # The other drivers' libraries are found here, not imported: tooz's
    # driver imports its own when init picks it, and their versions are
    # read from their metadata. Importing them all, and pkg_resources,
    # took 0.1 s of CPU more at every client's start (0.6 s then; most of
    # the rest is tooz's own import of futurist and eventlet).
    for lib in ("etcd3", "etcd3gw", "pymemcache"):
        if importlib.util.find_spec(lib) is None:
            raise ImportError(f"No module named {lib!r}")


def version(dist):
    """The installed version of distribution dist, from its metadata."""
    return importlib.metadata.version(dist)


TOOZ = version("tooz")
ETCD3GW_VERSION = version("etcd3gw")


def etcd3gw_client_takes_api_path():
    """tooz 3.1.0's etcd3gw driver calls etcd3gw.client(..., api_path=...),
    an argument etcd3gw's client() takes from 2.1.0 (commit 2a7f392, "Pass
    api_path thru etcd3gw.client"); tooz asks for etcd3gw>=0.1.0 and
    Debian 12 ships 2.0.0, where the call raises TypeError and the driver
    never starts. Without it, the program passes api_path on to
    Etcd3Client, which has taken it since 1.0.0, as 2.1.0's client()
    does: tooz's lock code is untouched."""
    import etcd3gw
    if "api_path" in inspect.signature(etcd3gw.client).parameters:
        return

    def client(host="localhost", port=2379, ca_cert=None, cert_key=None, cert_cert=None,
               timeout=None, protocol="http", api_path="/v3alpha/"):
        return sys.modules["etcd3gw.client"].Etcd3Client(host=host, port=port, ca_cert=ca_cert, cert_key=cert_key,
                                                    cert_cert=cert_cert, timeout=timeout, protocol=protocol,
                                                    api_path=api_path)
    etcd3gw.client = client
    global ETCD3GW_VERSION
    ETCD3GW_VERSION += " (client() given 2.1.0's api_path)"


def etcd3gw_timeout_per_request():
    """etcd3gw before 2.4.0 keeps its timeout in requests.Session's
    timeout attribute, which requests never reads: a request to a member
    that stops answering waits forever. 2.4.0 passes it to each request
    (commit 04c7907, "Apply timeout in each request call", Launchpad bug
    #2012261); this backports that one change, for a counterfactual."""
    global ETCD3GW_VERSION
    cls = sys.modules["etcd3gw.client"].Etcd3Client
    post = cls.post

    def timed(self, *args, **kwargs):
        kwargs.setdefault("timeout", self.session.timeout)
        return post(self, *args, **kwargs)
    cls.post = timed
    ETCD3GW_VERSION = ETCD3GW_VERSION[:-1] + "; 2.4.0's timeout per request)"


REDIS = {"name": "tooz-redis", "like": "redis", "servers": "redis"}
PGSQL = {"name": "tooz-pgsql", "like": "postgres-session", "servers": "postgres"}
ETCD3 = {"name": "tooz-etcd3", "like": "etcd", "servers": "etcd"}
MEMCACHED = {"name": "tooz-memcached", "like": "memcached", "servers": "memcached"}
ZOOKEEPER = {"name": "tooz-zookeeper", "like": "zookeeper", "servers": "zookeeper"}
ETCD3GW = {"name": "tooz-etcd3gw", "like": "etcd", "servers": "etcd"}
DRIVERS = [REDIS, PGSQL, ETCD3, MEMCACHED, ZOOKEEPER]  # the default: --drivers picks others
ALL_DRIVERS = DRIVERS + [ETCD3GW]
TTL_LOCKS = (REDIS["name"], ETCD3["name"], MEMCACHED["name"], ETCD3GW["name"])  # those with a lock_timeout
ETCDS = (ETCD3["name"], ETCD3GW["name"])
OPS = ["acquire", "release", "extend", "write"]
FENCES = ["postgres"]  # and, for the etcd drivers without init's fence, the lock key's revision
# What tooz promises its users, per driver (sim findings counts a story
# against a driver's lock only where it promises what the story tests):
# each quote is tooz's own words at 3.1.0, copied word for word; its
# coordination API's (locking.py, coordination.py, the tutorial) stand for
# every driver whose own docs do not say otherwise. Each entry names the
# drivers it holds for; the hello limits it to their locks (promises()).
# README.md, "What the library promises", says what was left out and why.
TOOZ_SRC = "https://opendev.org/openstack/tooz/src/tag/3.1.0"
TIMEOUT_QUOTE = "Default socket/lock/member/leader timeout used when none is provided."
REQUIRES_BEATING = ("Usage requirement that if true requires that the :py:meth:`~.heartbeat` be called periodically "
                    "(at a given rate) to avoid locks, sessions and other from being automatically closed/discarded "
                    "by the coordinators backing store.")
BEATING = (REDIS, ETCD3, ETCD3GW, MEMCACHED, ZOOKEEPER)  # drivers whose heartbeat() tooz's heart calls (requires_beating)
PROMISES = [
    (ALL_DRIVERS, {"property": "exclusion",
                   "quote": "Tooz provides distributed locks. A lock is identified by a name, and a lock can only be "
                            "acquired by one coordinator at a time.",
                   "source": f"{TOOZ_SRC}/doc/source/user/tutorial/lock.rst?display=source#L5-L6"}),
    (ALL_DRIVERS, {"property": "prompt-release",
                   "quote": "Attempts to release the lock, returns true if released.",
                   "source": f"{TOOZ_SRC}/tooz/locking.py#L70"}),
    # Not memcached: its release's comment says it "has the potential to
    # delete others locks" (tooz/drivers/memcached.py lines 120-145).
    ((REDIS, PGSQL, ETCD3, ETCD3GW, ZOOKEEPER),
     {"property": "token-release",
      "quote": "Releasing should be successful for objects that believe they hold the lock but do not have the lock "
               "anymore. However, they should be careful not to re-break the lock by releasing it, since they may not "
               "be the holder anymore.",
      "source": f"{TOOZ_SRC}/tooz/locking.py#L86-L89"}),
    ((REDIS, ETCD3, ETCD3GW, ZOOKEEPER), {"property": "renewal", "quote": REQUIRES_BEATING,
                                          "source": f"{TOOZ_SRC}/tooz/coordination.py#L234-L238"}),
    ((MEMCACHED,), {"property": "renewal", "quote": "Keep the lock alive.",
                    "source": f"{TOOZ_SRC}/tooz/drivers/memcached.py#L167"}),
    (BEATING, {"property": "expiry", "quote": REQUIRES_BEATING,
               "source": f"{TOOZ_SRC}/tooz/coordination.py#L234-L238"}),
    ((REDIS,), {"property": "bounded-calls", "quote": "Default socket timeout to use when none is provided.",
                "source": f"{TOOZ_SRC}/tooz/drivers/redis.py#L294"}),
    ((ETCD3,), {"property": "bounded-calls", "quote": TIMEOUT_QUOTE, "source": f"{TOOZ_SRC}/tooz/drivers/etcd3.py#L137"}),
    ((ETCD3GW,), {"property": "bounded-calls", "quote": TIMEOUT_QUOTE, "source": f"{TOOZ_SRC}/tooz/drivers/etcd3gw.py#L193"}),
    ((MEMCACHED,), {"property": "bounded-calls", "quote": TIMEOUT_QUOTE, "source": f"{TOOZ_SRC}/tooz/drivers/memcached.py#L246"}),
]


def promises(drivers):
    """The hello's promises for the drivers offered: each limited to the
    locks (their catalogue names, as the hello's locks give them) of the
    offered drivers it holds for."""
    out = []
    for holds, p in PROMISES:
        locks = [d["like"] for d in drivers if d in holds]
        if locks:
            out.append(dict(p, locks=locks))
    return out
TRANSACTION_STATUS = {pgext.TRANSACTION_STATUS_IDLE: "no transaction open",
                      pgext.TRANSACTION_STATUS_INTRANS: "its transaction left open"}


class Lease:
    """A lock held: tooz's Lock, its token, its fencing token and, for a
    lock with a TTL, the instant it runs out as the last renewal tooz said
    succeeded set it (None: none), that TTL in whole seconds (the lock's
    lock_timeout), and the acquire's command id while tooz's heart's beats
    of it are reported (None: no longer)."""

    def __init__(self, lock, token, fence, end, ttl=0, cid=None):
        self.lock, self.token, self.fence, self.end = lock, token, fence, end
        self.ttl, self.cid = ttl, cid


cfg = {}
coord = None  # tooz's coordinator of init's driver
coord_url = ""  # tooz-zookeeper's URL but its timeout: its coordinator starts at the first acquire
member = b""
node = None  # the server's name, as the story names it
store = None
leases = {}


def whole_seconds(ns):
    """tooz's redis driver reads its timeouts with int(): whole seconds,
    at least 1."""
    return max(1, math.ceil(ns / 1e9))


def cause(err):
    """The driver's error under tooz's (tooz raises its own, with the
    cause attached)."""
    return err.__cause__ or err.__context__


def detail(err):
    c = cause(err)
    if c is not None and c is not err:
        return f"tooz: {type(err).__name__}: {err} ({type(c).__name__}: {c})"
    return f"tooz: {type(err).__name__}: {err}"


def reason_of(err):
    c = cause(err)
    if isinstance(c, redis.exceptions.LockNotOwnedError) or isinstance(err, SessionExpiredError):
        return "not-held"
    if isinstance(err, LockTimeout):
        return "held"  # tooz-zookeeper's wait ran out: Kazoo's Lock raises, tooz passes it on
    if isinstance(err, coordination.OperationTimedOut) or isinstance(c, (redis.exceptions.TimeoutError, socket.timeout)):
        return "timeout"
    return None


def init(i):
    global coord, coord_url, member, node, store
    lock = i.get("lock")
    refuse = []
    if lock == PGSQL["name"]:
        refuse = [("check_lease", "tooz's PostgresLock has no lease to check (is_still_owner is not implemented)")]
    w.check_init("tooz", i, [d["name"] for d in DRIVERS], FENCES, refuse=refuse)
    cfg.update(i)
    c = i.get("config") or {}
    member = f"locksim-client-{c.get('client_id') or 0}".encode()
    if lock == ZOOKEEPER["name"]:
        members = c.get("zookeeper") or []
        if not members:
            raise ValueError("tooz-zookeeper needs the ensemble's members (config.zookeeper)")
        # Every member, as a tooz user lists them: the URL's host, then
        # the hosts option (Kazoo picks among them at random). The session
        # timeout is the story's ttl, known at the first acquire.
        others = "".join(f"&hosts={m['addr']}" for m in members[1:])
        coord_url = f"zookeeper://{members[0]['addr']}?randomize_hosts=true{others}"
        store = w.open_storage(i)
        return
    if lock == REDIS["name"]:
        nodes = c.get("redis") or []
        if len(nodes) != 1:
            raise ValueError(f"tooz-redis runs on one Redis node, got {len(nodes)}")
        node = nodes[0]["name"]
        # The driver reads timeout (its sockets') with int(): the story's
        # node timeout rounded up to a whole second.
        url = f"redis://{nodes[0]['addr']}?timeout={whole_seconds(c.get('node_timeout') or 200_000_000)}"
    elif lock in ETCDS:
        members = c.get("etcd") or []
        if not members:
            raise ValueError(f"{lock} needs the cluster's members (config.etcd)")
        # Both drivers talk to one endpoint (neither python-etcd3 nor
        # etcd3gw has failover): the first member, A; their timeout is
        # whole seconds too. etcd3gw's: tooz's default API path, v3alpha,
        # is gone from etcd 3.4's gateway: v3, as a user of etcd 3.4 or
        # later sets it.
        node = members[0]["name"]
        where = "etcd3+http://{}?api_version=v3&" if lock == ETCD3GW["name"] else "etcd3://{}?"
        url = where.format(members[0]["addr"]) + f"timeout={whole_seconds(c.get('node_timeout') or 200_000_000)}"
    elif lock == MEMCACHED["name"]:
        servers = c.get("memcached") or []
        if len(servers) != 1:
            raise ValueError(f"tooz-memcached runs on one memcached server, got {len(servers)}")
        node = servers[0]["name"]
        # timeout is pymemcache's socket and connect timeout, read with
        # int() as well.
        url = f"memcached://{servers[0]['addr']}?timeout={whole_seconds(c.get('node_timeout') or 200_000_000)}"
    else:
        dsn = c.get("postgres") or ""
        u = urllib.parse.urlsplit(dsn)
        if u.scheme not in ("postgres", "postgresql"):
            raise ValueError(f"tooz-pgsql needs a postgres:// URL (config.postgres), got {dsn!r}")
        node = "pg"
        # tooz's driver connects with the URL's host, port, user, password
        # and database only: the URL's query is left out, as tooz does.
        url = urllib.parse.urlunsplit(("postgresql", u.netloc, u.path, "", ""))
    if lock in TTL_LOCKS:
        # The heart sleeps half of what its last beat returned,
        # min(lock_timeout, membership_timeout), and the story's ttl is
        # known only at the first acquire (which sets lock_timeout): until
        # then lock_timeout is 1 s, the least tooz reads, so that the
        # heart's first beat after that acquire comes within 0.5 s, not
        # half of a longer node timeout later.
        url += "&lock_timeout=1"
    coord = start(url)
    if lock == ETCD3["name"]:
        # tooz's Etcd3Lock gives no fencing token either.
        w.note_txn_revision(coord.client, txn_rev)
    if lock == ETCD3GW["name"]:
        tap_gateway(coord.client)
    store = w.open_storage(i)


def start(url):
    c = coordination.get_coordinator(url, member)
    try:
        # With its heart, as tooz's docs ask (a no-op for tooz-pgsql,
        # whose coordinator has no heartbeat). The memcached driver's
        # start beats once itself (its member key), which opens the
        # connection; the ZooKeeper driver's opens its Kazoo session.
        c.start(start_heart=True)
    except Exception as err:
        raise RuntimeError(f"{detail(err)}: {url}") from err
    return c


def nodes():
    """The servers that granted, as the story names them: the driver's one
    server; none for tooz-zookeeper, whose ensemble answers as one."""
    return [node] if node else None


def zookeeper_session(ttl):
    """tooz-zookeeper's coordinator, started at the first acquire with
    the story's ttl as its timeout (tooz reads it with int(): whole
    seconds), as one long-lived session serves every lock after."""
    global coord
    if coord is None:
        coord = start(f"{coord_url}&timeout={whole_seconds(ttl)}")
    return coord


def acquire(cid, cmd):
    key, ttl = cmd["key"], cmd["ttl"]
    start = w.mono()
    w.event(cid, {"t": start, "type": "invoke", "op": "acquire", "key": key, "ttl": ttl})
    fail = {"type": "info", "op": "acquire", "key": key}
    if key in leases:
        return w.event(cid, dict(fail, type="fail", reason="held", detail="this client holds the lock already"))
    granted = 0
    if cfg["lock"] == ZOOKEEPER["name"]:
        try:
            zookeeper_session(ttl or 2_000_000_000)
        except Exception as err:
            return w.event(cid, dict(fail, detail=str(err)))
    if cfg["lock"] in TTL_LOCKS:
        # lock_timeout is the driver's option, read per lock at get_lock:
        # the story's ttl, rounded up to whole seconds as tooz reads it.
        granted = whole_seconds(ttl)
        coord.lock_timeout = granted
    lock = coord.get_lock(key.encode())
    # blocking=False: one try; with the story's wait, tooz's own loop for
    # that long (redis-py's sleep of 0.1 s between tries; for PostgreSQL
    # pg_try_advisory_lock again under tooz's retry, one new connection
    # for all).
    wait = (cmd.get("wait") or 0) / 1e9
    try:
        got = lock.acquire(blocking=wait if wait > 0 else False)
    except Exception as err:
        return w.event(cid, dict(fail, reason=reason_of(err), detail=detail(err)))
    if not got:
        return w.event(cid, dict(fail, type="fail", reason="held", nodes=None,
                                 detail=f"tooz: {type(lock).__name__}.acquire returned False: {lock.name!r} is taken (waited {wait:g}s){contenders(lock)}"))
    if cfg["lock"] == ETCD3["name"]:
        granted = lock._lock.lease.ttl  # etcd may raise a TTL to its minimum
        tap_refresh(lock)
    if cfg["lock"] == ETCD3GW["name"]:
        granted = grant_ttl[0] or granted  # what etcd's grant answered
    token = token_of(lock)
    fence = txn_rev[0] if cfg["lock"] in ETCDS else 0
    if cfg["lock"] == ZOOKEEPER["name"]:
        # The znode's czxid, the lock's own fencing token (as
        # examples/kazoo and clients/zookeeper.go give it): tooz gives
        # none.
        try:
            stat = coord._coord.exists(znode(lock))
            if stat is None:
                raise RuntimeError(f"{znode(lock)} is gone")
            fence = stat.czxid
        except Exception as err:
            undo = w.undo_grant(lock.release, "the lock")
            return w.event(cid, dict(fail, detail=f"fencing token of {znode(lock)}: {err} ({undo})"))
    if cfg.get("fence") == "postgres":
        try:
            fence = store.next_fence()
        except Exception as err:
            undo = w.undo_grant(lock.release, "the lock")
            return w.event(cid, dict(fail, detail=f"fencing token: {err} ({undo})"))
    end = start + granted * 1_000_000_000 if granted else None
    lease = Lease(lock, token, fence, end, ttl=whole_seconds(ttl) if granted else 0)
    leases[key] = lease
    # No lease_end: the lock's key lives lock_timeout from before the
    # SET (the add, the lease's grant) was sent, and tooz's heart renews
    # it for as long as the lock is held, each beat reported as a renew
    # note; the holder believes it holds the lock until it releases it.
    # tooz-pgsql's lock lasts as long as its connection, and
    # tooz-zookeeper's as its session, with no TTL either.
    w.event(cid, {"type": "ok", "op": "acquire", "key": key, "token": token, "ttl": granted * 1_000_000_000 or None,
                  "nodes": nodes(), "fence": fence or None, "detail": about(lock)})
    if granted:
        watch_heart(cid, key, lease)


def token_of(lock):
    """The lock's token: tooz-redis's redis-py Lock token (tooz keeps the
    redis-py Lock as _lock and reads the same token in is_still_owner);
    tooz-pgsql has none (the lock is its connection's session, whose
    backend the acquire's detail names): a token of this program's own."""
    if cfg["lock"] == REDIS["name"]:
        return lock._lock.local.token.decode()
    if cfg["lock"] == ETCD3["name"]:
        return lock._lock.uuid.hex()
    if cfg["lock"] == MEMCACHED["name"]:
        return coord._member_id.decode()  # the key's value: one per coordinator
    if cfg["lock"] == ETCD3GW["name"]:
        return base64.b64decode(lock._uuid).hex()  # the key's value, a random UUID (sent in base64)
    if cfg["lock"] == ZOOKEEPER["name"]:
        return lock._lock.prefix[:32]  # the contender znode's random prefix
    return uuid.uuid4().hex


def contenders(lock):
    """For a refused tooz-zookeeper acquire, the lock's contender znodes
    in line and whose each is (Kazoo's Lock stores the member id in
    them), for the refusal's detail only: "" for the other drivers."""
    if cfg["lock"] != ZOOKEEPER["name"]:
        return ""
    zk, path = coord._coord, lock._lock.path
    try:
        names = sorted(zk.get_children_async(path).get(timeout=1.0), key=lambda n: n[-10:])
        line = [f"{n[-10:]} ({zk.get_async(f'{path}/{n}').get(timeout=1.0)[0].decode()})" for n in names]
    except Exception as err:
        return f"; its contenders could not be read: {type(err).__name__}: {err}"
    return f"; contenders in line: {', '.join(line) or 'none'}"


def znode(lock):
    """tooz-zookeeper's contender znode: Kazoo's Lock's path and node."""
    return f"{lock._lock.path}/{lock._lock.node}"


def about(lock):
    if cfg["lock"] == REDIS["name"]:
        return f"key {lock.name} for {coord.lock_timeout}s"
    if cfg["lock"] == ETCD3["name"]:
        return f"{lock._lock.key} on lease {lock._lock.lease.id:x} of {lock._lock.lease.ttl}s"
    if cfg["lock"] == MEMCACHED["name"]:
        return f"key {lock.name.decode()} for {lock.timeout}s"
    if cfg["lock"] == ETCD3GW["name"]:
        return f"{lock._key.decode()} on lease {lock._lease.id:x} of {grant_ttl[0]}s"
    if cfg["lock"] == ZOOKEEPER["name"]:
        return f"znode {znode(lock)}, session 0x{coord._coord.client_id[0]:x} of {coord.timeout}s"
    # psycopg2 opens a transaction at the first statement (autocommit is
    # off, as tooz leaves it), and tooz never ends it: the lock's session
    # sits idle in that transaction until the release closes it.
    status = TRANSACTION_STATUS.get(lock._conn.info.transaction_status, "unknown")
    return f"pg_try_advisory_lock({lock.key[0]}, {lock.key[1]}) on backend {lock._conn.get_backend_pid()}, {status}"


def request(cid, op, key, call, **invoke):
    """Sends op's invocation and, with no lease, the client's refusal;
    otherwise returns (done, lease, call(lease.lock)). A call that raised
    ends op: fail not-held when the server said the lock is not this
    client's, info otherwise (its outcome unknown)."""
    lease = leases.get(key)
    w.event(cid, dict({"type": "invoke", "op": op, "key": key, "token": lease.token if lease else None}, **invoke))
    if lease is None:
        w.no_lease(cid, op, key)
        return None, None, None
    done = {"op": op, "key": key, "token": lease.token}
    try:
        return done, lease, call(lease.lock)
    except Exception as err:
        reason = reason_of(err)
        if reason == "not-held":
            leases.pop(key, None)  # the server says the lease is gone
        w.event(cid, dict(done, type="fail" if reason == "not-held" else "info", reason=reason, detail=detail(err)))
        return None, None, None


def release(cid, cmd):
    key = cmd["key"]
    if key in leases:
        leases[key].cid = None  # a beat still under way is tooz's, not a renewal to report
    done, lease, ok = request(cid, "release", key, lambda lock: lock.release())
    leases.pop(key, None)
    if done is None:
        return
    if ok:
        return w.event(cid, dict(done, type="ok", nodes=nodes()))
    # tooz-redis logs redis-py's LockError and returns False; tooz-pgsql
    # returns False only when it believes it holds nothing; tooz-memcached
    # when the get found another value, or the delete found no key;
    # tooz-zookeeper when Kazoo's Lock says it is not acquired (Kazoo's
    # delete swallows a znode already gone: True after an expiry too).
    w.event(cid, dict(done, type="fail", reason="not-held", detail=f"tooz: {type(lease.lock).__name__}.release returned False"))


def extend(cid, cmd):
    key = cmd["key"]
    start = w.mono()
    if cfg["lock"] == PGSQL["name"]:
        raise ValueError("tooz's PostgresLock has no heartbeat: it holds no TTL to extend")
    if cfg["lock"] == ZOOKEEPER["name"]:
        raise ValueError("tooz's ZooKeeperLock has no heartbeat: its session's pings keep the znode")
    # Lock.heartbeat(): tooz-redis, redis-py's reacquire (the key's TTL set
    # to lock_timeout again, only while it holds this token); tooz-etcd3,
    # python-etcd3's Lock.refresh (one LeaseKeepAlive), whose answer tooz
    # does not read; tooz-etcd3gw, etcd3gw's Lease.refresh (one keepalive
    # through the gateway), whose answer tooz does not read either;
    # tooz-memcached, a touch of the key, whoever holds it.
    # The ttl asked for cannot change either. The lock's class's method:
    # the instance's is watch_heart's, which reports the heart's beats.
    keepalive_ttl[0] = None
    done, lease, ok = request(cid, "extend", key, lambda lock: type(lock).heartbeat(lock), t=start, ttl=cmd.get("ttl"))
    if done is None:
        return
    if not ok:
        leases.pop(key, None)
        return w.event(cid, dict(done, type="fail", reason="not-held", detail="tooz: Lock.heartbeat returned False"))
    # What the client believes: the library said the lease was renewed,
    # for lock_timeout from now.
    lease.end = start + coord.lock_timeout * 1_000_000_000
    said = f"tooz: Etcd3Lock.heartbeat returned True{etcd_answer()}" if cfg["lock"] in ETCDS else None
    w.event(cid, dict(done, type="ok", ttl=coord.lock_timeout * 1_000_000_000, lease_end=lease.end, nodes=[node], detail=said))


def etcd_answer():
    """For the etcd drivers' renewals, the TTL etcd's keepalive answered
    (in this thread: the extend's, or the heart's), as a detail's tail."""
    said = f"; etcd's keepalive answered TTL {keepalive_ttl[0]}"
    if keepalive_ttl[0] is not None and keepalive_ttl[0] <= 0:
        said += " (the lease is gone)"
    return said


HEART_SAYS = {
    REDIS["name"]: "redis-py's reacquire: the key's TTL set to {}s again where it holds this token",
    ETCD3["name"]: "python-etcd3's refresh: one LeaseKeepAlive of the lock's lease, of {}s",
    ETCD3GW["name"]: "etcd3gw's Lease.refresh: one keepalive of the lock's lease, of {}s, through the gateway",
    MEMCACHED["name"]: "a touch of the key for {}s, whoever holds it",
}


def watch_heart(cid, key, lease):
    """Reports each beat tooz's heart gives lease's lock, as a renew note
    of the acquire's command cid (docs/protocol.md, "The watchdog"). The
    heart thread calls the driver's heartbeat(), which calls heartbeat()
    on every lock the coordinator holds: the lock's own is wrapped here,
    and tooz's answer passed on untouched. A beat that returned True
    renews the client's belief as tooz tells it (the lease's end, for the
    etcd drivers' lease check): a note with the lock's TTL. tooz tells
    the holder nothing else: a beat that returned False (tooz-memcached's
    touch finding no key) or raised (tooz-redis's reacquire finding
    another's token; a timeout) is logged by tooz, which beats again at
    the next beat, and the holder keeps the lock it believes it holds. Its
    note has no TTL, and the reason timeout for a timeout, none otherwise:
    the protocol's not-held would end the holder's belief, which tooz does
    not. No note once the lease is released or forgotten."""
    lock = lease.lock
    beat = lock.heartbeat
    name = type(lock).__name__
    lease.cid = cid

    def beat_reported():
        start = w.mono()
        keepalive_ttl[0] = None
        err, ok = None, False
        try:
            ok = beat()
            return ok
        except Exception as e:
            err = e
            raise
        finally:
            if lease.cid is not None and leases.get(key) is lease:
                report(start, ok, err)

    def report(start, ok, err):
        note = {"type": "note", "op": "renew", "key": key, "token": lease.token}
        does = HEART_SAYS[cfg["lock"]].format(lease.ttl)
        if err is not None:
            note.update(reason="timeout" if reason_of(err) == "timeout" else None,
                        detail=f"tooz's heart: {name}.heartbeat ({does}) raised {detail(err)}; tooz logs it and beats "
                               f"again, the holder is not told")
        elif not ok:
            note.update(detail=f"tooz's heart: {name}.heartbeat ({does}) returned False; tooz logs it and beats again, "
                               f"the holder is not told")
        else:
            lease.end = start + lease.ttl * 1_000_000_000
            said = etcd_answer() if cfg["lock"] in ETCDS else ""
            note.update(ttl=lease.ttl * 1_000_000_000, nodes=[node],
                        detail=f"tooz's heart: {name}.heartbeat ({does}) returned True{said}")
        w.event(lease.cid, note)
    lock.heartbeat = beat_reported


class PerThread(threading.local):
    """A one-item list of each thread's own (the main thread's commands,
    tooz's heart): what etcd answered a thread's request is read by that
    thread alone."""

    def __init__(self, value):
        self.value = value

    def __getitem__(self, i):
        return self.value

    def __setitem__(self, i, value):
        self.value = value


keepalive_ttl = PerThread(None)  # the TTL etcd's latest keepalive answered (tap_refresh, tap_gateway)
txn_rev = PerThread(0)  # the revision of the latest transaction's answer (w.note_txn_revision, tap_gateway)
grant_ttl = PerThread(0)  # the TTL etcd's latest lease grant answered (tap_gateway)


def tap_gateway(client):
    """tooz-etcd3gw: etcd3gw's client posts each request to etcd's JSON
    gateway; its post is wrapped to note, from the answers, a grant's
    TTL, a transaction's revision (the key's create revision after an
    acquire's put: the fencing token tooz does not give) and a
    keepalive's TTL (etcd omits it, and etcd3gw says -1, when the lease
    is gone). What tooz returns is untouched."""
    post = client.post

    def noted(url, *args, **kwargs):
        resp = post(url, *args, **kwargs)
        if url.endswith("/lease/grant"):
            grant_ttl[0] = int(resp.get("TTL", 0))
        elif url.endswith("/kv/txn"):
            txn_rev[0] = int(resp["header"]["revision"])
        elif url.endswith("/lease/keepalive"):
            keepalive_ttl[0] = int(resp.get("result", {}).get("TTL", -1))
        return resp
    client.post = noted


def tap_refresh(lock):
    """tooz's Etcd3Lock.heartbeat calls python-etcd3's Lock.refresh and
    returns True whatever it answered: the Lock's refresh is wrapped to
    note the TTL etcd gave, for the extend's detail only (what the client
    believes stays what tooz said)."""
    refresh = lock._lock.refresh

    def noted():
        resp = refresh()
        keepalive_ttl[0] = resp[0].TTL if resp else None
        return resp
    lock._lock.refresh = noted


def check(lease):
    """The lease check tooz offers: tooz-redis's, tooz-memcached's and
    tooz-zookeeper's Lock.is_still_owner() (a GET of the key or the
    znode, its value compared with the token, or with the member id; a
    check that
    cannot reach Redis does not let the write through). tooz-etcd3 and
    tooz-etcd3gw have no is_still_owner: what tooz tells its user is the lock's acquired flag
    and the renewals it said succeeded (its heart's beats, the story's
    extends), so the check is the lease's end as those renewals set it."""
    if cfg["lock"] in ETCDS:
        if not lease.lock.acquired:
            return "tooz says the lock is not acquired"
        if w.mono() >= lease.end:
            return "the lease's TTL has run out since the last renewal tooz said succeeded"
        return None
    try:
        if not lease.lock.is_still_owner():
            return "Lock.is_still_owner() is False: the key is gone or another's"
    except Exception as err:
        return f"Lock.is_still_owner() could not tell: {detail(err)}"
    return None


def write(cid, cmd):
    w.write(cid, cmd, leases.get(cmd["key"]), store, check if cfg.get("check_lease") else None)


def close():
    if store is not None:
        store.close()
    if coord is not None:
        # coord.stop() waits for the heart with no bound, and a heart
        # whose beat fails retries it every second for ever: it is
        # stopped here first, waited for 2 s at most, and, when it is
        # still beating, stop() is left out (the locks left run out).
        coord.heart.stop()
        if coord.heart.is_alive() and coord.heart.wait(2.0):
            print("tooz: the heart is still beating 2 s after it was stopped: coordinator not stopped", file=sys.stderr)
            return
        try:
            coord.stop()  # releases what it still holds
        except Exception:
            pass


USAGE = "usage: client.py [--drivers NAME,...] [--etcd3gw-timeout-per-request]"


def parse_args(args):
    """--drivers NAME,... offers those drivers alone; and
    --etcd3gw-timeout-per-request plays tooz-etcd3gw with etcd3gw 2.4.0's
    fix (etcd3gw_timeout_per_request), for the counterfactual of
    examples/tooz-etcd3gw/timeout-ignored.yaml. Bad input: one line on
    stderr, exit code 2."""
    global DRIVERS
    names = {d["name"]: d for d in ALL_DRIVERS}
    fix = False
    while args:
        arg = args.pop(0)
        if arg == "--drivers" and args and all(n in names for n in args[0].split(",")):
            DRIVERS = [names[n] for n in args.pop(0).split(",")]
        elif arg == "--etcd3gw-timeout-per-request":
            fix = True
        else:
            print(f"tooz: {USAGE} (NAME: {', '.join(names)}); got {arg} {' '.join(args)}".rstrip(), file=sys.stderr)
            sys.exit(2)
    if fix and ETCD3GW not in DRIVERS:
        print(f"tooz: --etcd3gw-timeout-per-request needs --drivers tooz-etcd3gw; {USAGE}", file=sys.stderr)
        sys.exit(2)
    if ETCD3GW in DRIVERS:
        etcd3gw_client_takes_api_path()
    if fix:
        etcd3gw_timeout_per_request()


def patched():
    """The hello's patched (protocol v2): tooz-etcd3gw runs Debian 12's
    etcd3gw 2.0.0 with 2.1.0's client() (etcd3gw_client_takes_api_path),
    for tooz 3.1.0 cannot start on 2.0.0: a combination no release
    installs, of which sim findings counts nothing."""
    if ETCD3GW in DRIVERS and "given 2.1.0's api_path" in ETCD3GW_VERSION:
        return {"patched": f"etcd3gw {version('etcd3gw')} given 2.1.0's client(api_path), which tooz {TOOZ} needs to start; "
                           "etcd3gw's ignored timeout was fixed in 2.4.0 (Launchpad #2012261)"}
    return {}


def main():
    parse_args(sys.argv[1:])
    hello = w.hello(f"tooz: tooz {TOOZ}, redis {redis.__version__}, etcd3 {version('etcd3')}, etcd3gw {ETCD3GW_VERSION}, pymemcache {version('pymemcache')}, "
                    f"kazoo {kazoo.version.__version__}",
                    DRIVERS, OPS,
                    fences=FENCES, check_lease=True, client_clock=True, acquire_wait=True, promises=promises(DRIVERS),
                    **patched())
    w.serve(hello, init, {"acquire": acquire, "release": release, "extend": extend, "write": write}, close)


if __name__ == "__main__":
    main()

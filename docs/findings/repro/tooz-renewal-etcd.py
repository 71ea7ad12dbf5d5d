#!/usr/bin/python3
"""tooz's etcd3 driver reports a lock renewed whose lease etcd says is gone.

What it shows: coordinator A takes lock L (lock_timeout 2 s: a key on a
2 s etcd lease) and does not beat (start_heart=False): the holder's work
outlasts its lease. etcd expires the lease and deletes the key, and
coordinator B takes L. A's lock.heartbeat() then calls python-etcd3's
Lock.refresh(), whose keepalive etcd answers with TTL 0 (lease not found),
and returns True anyway.

Versions: Debian 12's python3-tooz 3.1.0, python3-etcd3 0.12.0 (grpcio
1.51.1), etcd 3.4.23, Python 3.11.
Run: python3 docs/findings/repro/tooz-renewal-etcd.py
It starts a one-member etcd on free ports of 127.0.0.1 and kills it at exit.
Exit 1 (one line on stdout) when the defect shows, 0 when not, 2 on error.
"""
import ctypes, logging, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time, warnings

try:
    import etcd3
    from tooz import coordination
except Exception as e:  # e.g. another python3 first on the PATH (pyenv, a venv): use Debian's
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print(f"error: {e!r}; needs Debian 12's python3-tooz and python3-etcd3", file=sys.stderr)
    sys.exit(2)

undo = []  # cleanup steps, run last first


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(argv):
    """Starts a server in its own process group, killed if this script dies."""
    libc = ctypes.CDLL("libc.so.6")
    p = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))  # PR_SET_PDEATHSIG
    undo.append(lambda: (os.killpg(p.pid, signal.SIGKILL), p.wait()))
    return p


def until(what, f, secs):
    end = time.monotonic() + secs
    while True:
        try:
            if f():
                return
        except Exception:
            pass
        if time.monotonic() > end:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def main():
    port, peer = free_port(), free_port()
    tmp = tempfile.mkdtemp(prefix="tooz-etcd-")
    undo.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
    cu, pu = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer}"
    spawn(["etcd", "--name", "r", "--data-dir", os.path.join(tmp, "data"),
           "--listen-client-urls", cu, "--advertise-client-urls", cu,
           "--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu, "--initial-cluster", "r=" + pu])
    etcd = etcd3.client(host="127.0.0.1", port=port, timeout=5)  # to see what etcd says
    until("etcd", lambda: etcd.put("/ready", "1") or True, 30)
    url = f"etcd3://127.0.0.1:{port}?timeout=5&lock_timeout=2"
    a = coordination.get_coordinator(url, b"A")
    b = coordination.get_coordinator(url, b"B")
    for c in (a, b):
        c.start(start_heart=False)
        undo.append(c.stop)
    la, lb = a.get_lock(b"L"), b.get_lock(b"L")
    if not la.acquire(blocking=False):
        raise RuntimeError("A could not take L")
    lease = la._lock.lease.id  # A's lock's lease, to ask etcd about it
    # A works past its lease: wait until etcd says the lease is gone (TTL -1).
    until("A's lease to expire", lambda: etcd.get_lease_info(lease).TTL == -1, 15)
    if not lb.acquire(blocking=False):
        raise RuntimeError("B could not take L after A's lease expired")
    beat = la.heartbeat()
    ttl = etcd.get_lease_info(lease).TTL
    keepalive = [r.TTL for r in etcd.refresh_lease(lease)]  # what A's refresh was told
    held = etcd.get("/locks/L")[0] == lb._lock.uuid
    if beat is True and ttl == -1:
        return (f"tooz etcd3: A's lock.heartbeat() returned True after etcd expired its lease "
                f"(lease TTL {ttl}, keepalive answered TTL {', '.join(map(str, keepalive))})"
                + (" and B took lock L" if held else ""))
    return None


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    threading.excepthook = lambda args: None  # a failed cleanup step, a closed proxy socket: no traceback
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    code = 2
    try:
        broke = main()
        print(broke or "no defect: A's heartbeat() did not report the expired lock as renewed")
        code = 1 if broke else 0
    except BaseException as e:
        print(f"error: {e!r}", file=sys.stderr)
    finally:
        for step in reversed(undo):  # each bounded: a hung stop cannot keep a server alive
            t = threading.Thread(target=step, daemon=True)
            t.start()
            t.join(15)
    sys.stdout.flush()
    os._exit(code)

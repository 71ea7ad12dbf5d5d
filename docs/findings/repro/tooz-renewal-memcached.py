#!/usr/bin/python3
"""tooz's MemcachedLock.heartbeat() renews a lock that another member holds.

What it shows: coordinator A takes lock L (lock_timeout 2 s) and does not
beat (start_heart=False), so its key expires; coordinator B takes L. A's
lock.heartbeat() ("Keep the lock alive.") is a bare memcached touch: it
touches B's key and returns True, and, called again, keeps B's key alive
long past B's own 2 s although B never beats.
(lock_timeout is 2, not 1: memcached counts expiry in whole seconds, and a
key set to expire in 1 s lives until the server's next tick, 0 to 1 s.)

Versions: Debian 12's python3-tooz 3.1.0, python3-pymemcache 3.5.2,
memcached 1.6.18, Python 3.11.
Run: python3 docs/findings/repro/tooz-renewal-memcached.py
It starts memcached on a free port of 127.0.0.1 and kills it at exit.
Exit 1 (one line on stdout) when the defect shows, 0 when not, 2 on error.
"""
import ctypes, logging, os, signal, socket, subprocess, sys, threading, time, warnings

try:
    from tooz import coordination
except Exception as e:  # e.g. another python3 first on the PATH (pyenv, a venv): use Debian's
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print(f"error: {e!r}; needs Debian 12's python3-tooz and python3-pymemcache", file=sys.stderr)
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


def wait_port(port, proc, secs=20):
    end = time.monotonic() + secs
    while time.monotonic() < end and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on port {port} did not start")


def main():
    port = free_port()
    root = ["-u", "root"] if os.geteuid() == 0 else []  # memcached refuses root without -u
    mc = spawn(["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "1"] + root)
    wait_port(port, mc)
    url = f"memcached://127.0.0.1:{port}?timeout=5&lock_timeout=2"
    a = coordination.get_coordinator(url, b"A")
    b = coordination.get_coordinator(url, b"B")
    for c in (a, b):
        c.start(start_heart=False)
        undo.append(c.stop)
    la, lb = a.get_lock(b"L"), b.get_lock(b"L")
    if not la.acquire(blocking=False):
        raise RuntimeError("A could not take L")
    time.sleep(2.5)  # A's work outlasts its lease; nobody beats: its key expires
    if not lb.acquire(blocking=False):
        raise RuntimeError("B could not take L after A's key expired")
    first = la.heartbeat()  # A renews "its" lock
    owner = lb.get_owner()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 4:  # A keeps beating, B never does
        time.sleep(0.5)
        la.heartbeat()
    after = lb.get_owner()
    if first and owner == b"B":
        kept = ("; A's further beats kept B's key (2s lock_timeout) alive 4s more, B never beating"
                if after == b"B" else "")
        return f"tooz memcached: A's lock.heartbeat() returned True for lock L, which B holds (A's key had expired){kept}"
    return None


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    threading.excepthook = lambda args: None  # a failed cleanup step, a closed proxy socket: no traceback
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    code = 2
    try:
        broke = main()
        print(broke or "no defect: A's heartbeat() did not report B's lock as renewed")
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

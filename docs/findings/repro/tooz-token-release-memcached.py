#!/usr/bin/python3
"""tooz's MemcachedLock.release() can delete another member's lock.

What it shows: release() is a get of the lock's key, then, if it held the
member id, a delete: two separate calls. Coordinator A (lock_timeout 2 s)
takes lock L through a tiny TCP proxy that holds memcached's reply to A's
release get 4 s: the get found A's id, but meanwhile A's key expires and
coordinator B (connected directly; lock_timeout 10 s, so that its key
cannot expire during the run) takes L. The reply arrives, A deletes the
key, and B's lock is gone while B believes it holds it.

Versions: Debian 12's python3-tooz 3.1.0, python3-pymemcache 3.5.2,
memcached 1.6.18, Python 3.11.
Run: python3 docs/findings/repro/tooz-token-release-memcached.py
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
DELAY = 4.0  # how long the proxy holds the reply to A's release get
hold = threading.Event()  # set: hold the next reply that carries L's value


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


def pump(src, dst, downstream):  # an error ends the thread (quietly: threading.excepthook)
    while data := src.recv(65536):
        if downstream and hold.is_set() and data.startswith(b"VALUE __TOOZ_LOCK_L "):
            hold.clear()
            time.sleep(DELAY)  # the slow reply
        dst.sendall(data)
    dst.shutdown(socket.SHUT_WR)


def proxy(upstream):
    """A TCP proxy on a free port of 127.0.0.1 to upstream; returns its port."""
    ls = socket.create_server(("127.0.0.1", 0))
    undo.append(ls.close)

    def serve():
        while True:
            c, _ = ls.accept()
            u = socket.create_connection(("127.0.0.1", upstream))
            threading.Thread(target=pump, args=(c, u, False), daemon=True).start()
            threading.Thread(target=pump, args=(u, c, True), daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    return ls.getsockname()[1]


def main():
    port = free_port()
    root = ["-u", "root"] if os.geteuid() == 0 else []  # memcached refuses root without -u
    mc = spawn(["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "1"] + root)
    wait_port(port, mc)
    a = coordination.get_coordinator(f"memcached://127.0.0.1:{proxy(port)}?timeout=10&lock_timeout=2", b"A")
    b = coordination.get_coordinator(f"memcached://127.0.0.1:{port}?timeout=10&lock_timeout=10", b"B")
    for c in (a, b):
        c.start(start_heart=False)
        undo.append(c.stop)
    la, lb = a.get_lock(b"L"), b.get_lock(b"L")
    if not la.acquire(blocking=False):
        raise RuntimeError("A could not take L")
    released = []
    hold.set()
    t = threading.Thread(target=lambda: released.append(la.release()), daemon=True)
    t.start()  # A's get reaches memcached at once; its reply is held DELAY s
    end = time.monotonic() + DELAY - 1
    while not lb.acquire(blocking=False):  # B takes L once A's key expires
        if time.monotonic() > end:
            raise RuntimeError("B could not take L while A's reply was held")
        time.sleep(0.1)
    t.join(DELAY + 10)
    owner = lb.get_owner()  # read directly from memcached
    if released == [True] and lb.acquired and owner is None:
        return ("tooz memcached: A's release() deleted lock L while B held it "
                "(A's get saw its own id, then its key expired and B took L before A's delete)")
    return None


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    threading.excepthook = lambda args: None  # a failed cleanup step, a closed proxy socket: no traceback
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    code = 2
    try:
        broke = main()
        print(broke or "no defect: B's lock survived A's release()")
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

#!/usr/bin/python3
"""Kazoo's Lock.release() ("Release the lock immediately.") blocks while the
client is disconnected.

What it shows: a client takes a Kazoo Lock; the ZooKeeper server is then
stopped (SIGSTOP) and the client loses its connection (SUSPENDED). release()
called now queues its delete and waits for the answer with no timeout: it
has not returned 5 s later. The server is then resumed (SIGCONT) and
killed at exit.

Versions: Debian 12's python3-kazoo 2.8.0, zookeeper 3.8.0 (OpenJDK 17),
Python 3.11.
Run: python3 docs/findings/repro/kazoo-prompt-release.py
It starts a standalone ZooKeeper (java ... QuorumPeerMain zoo.cfg, config
and data in a temp dir) on a free port of 127.0.0.1 and kills it at exit.
Exit 1 (one line on stdout) when the defect shows, 0 when not, 2 on error.
"""
import ctypes, logging, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time, warnings

try:
    from kazoo.client import KazooClient, KazooState
except Exception as e:  # e.g. another python3 first on the PATH (pyenv, a venv): use Debian's
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print(f"error: {e!r}; needs Debian 12's python3-kazoo", file=sys.stderr)
    sys.exit(2)

undo = []  # cleanup steps, run last first
WAIT = 5.0  # how long release() may take before we call it blocked


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(argv, cwd):
    """Starts a server in its own process group, killed if this script dies."""
    libc = ctypes.CDLL("libc.so.6")
    p = subprocess.Popen(argv, cwd=cwd, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))  # PR_SET_PDEATHSIG
    undo.append(lambda: (os.killpg(p.pid, signal.SIGCONT), os.killpg(p.pid, signal.SIGKILL), p.wait()))
    return p


def main():
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="kazoo-zk-")
    undo.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
    with open(os.path.join(tmp, "zoo.cfg"), "w") as f:
        f.write(f"tickTime=500\ndataDir={tmp}/data\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                "maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n")
    zk_server = spawn(["java", "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                       f"-Djava.io.tmpdir={tmp}",
                       "-cp", "/usr/share/java/zookeeper.jar",  # its manifest names its dependencies
                       "org.apache.zookeeper.server.quorum.QuorumPeerMain", os.path.join(tmp, "zoo.cfg")], tmp)
    zk = KazooClient(hosts=f"127.0.0.1:{port}", timeout=4.0)
    suspended = threading.Event()
    zk.add_listener(lambda state: suspended.set() if state == KazooState.SUSPENDED else None)
    zk.start(timeout=60)  # waits for the JVM to serve
    undo.append(lambda: (zk.stop(), zk.close()))
    lock = zk.Lock("/locks/L", "A")
    if not lock.acquire(timeout=10):
        raise RuntimeError("could not take the lock")
    os.kill(zk_server.pid, signal.SIGSTOP)  # the server stops answering
    if not suspended.wait(15):
        raise RuntimeError("the client did not notice the server stopped")
    done = []

    def release():
        try:
            done.append(f"returned {lock.release()!r}")
        except Exception as e:
            done.append(f"raised {type(e).__name__}")
    t = threading.Thread(target=release, daemon=True)
    t.start()
    t.join(WAIT)
    blocked = t.is_alive()
    os.kill(zk_server.pid, signal.SIGCONT)  # the server answers again
    t.join(20)
    if blocked:
        after = (f"; it {done[0]} only after the server was resumed"
                 if done else "; still blocked 20s after the server was resumed")
        return (f"kazoo: Lock.release() had not returned {WAIT:.0f}s after it was called "
                f"while the client was disconnected (ZooKeeper server stopped){after}")
    return None


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    threading.excepthook = lambda args: None  # a failed cleanup step, a closed proxy socket: no traceback
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    code = 2
    try:
        broke = main()
        print(broke or f"no defect: Lock.release() returned within {WAIT:.0f}s while the client was disconnected")
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

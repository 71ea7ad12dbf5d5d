#!/usr/bin/python3
"""tooz's pgsql lock is lost to idle_in_transaction_session_timeout, silently.

What it shows: PostgresLock.acquire() runs pg_try_advisory_lock on a
psycopg2 connection with autocommit off and never commits, so the lock's
session sits idle in a transaction. The server is set up with
idle_in_transaction_session_timeout=1s (a common server setting): it ends
A's session, and with it the advisory lock, and coordinator B takes lock
L while A's lock.acquired is still True.

Versions: Debian 12's python3-tooz 3.1.0, python3-psycopg2 2.9.5,
PostgreSQL 15, Python 3.11.
Run: python3 docs/findings/repro/tooz-exclusion-postgres-session.py
It makes a throwaway cluster in a temp dir (initdb; as root, initdb and
postgres run as the postgres user) and starts it on a free port of
127.0.0.1; it stops the server and removes the dir at exit.
Exit 1 (one line on stdout) when the defect shows, 0 when not, 2 on error.
"""
import logging, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time, warnings

try:
    import psycopg2
    from tooz import coordination
except Exception as e:  # e.g. another python3 first on the PATH (pyenv, a venv): use Debian's
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print(f"error: {e!r}; needs Debian 12's python3-tooz and python3-psycopg2", file=sys.stderr)
    sys.exit(2)

BIN = "/usr/lib/postgresql/15/bin"
undo = []  # cleanup steps, run last first


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(p, data):
    """Fast shutdown (SIGINT) of the postmaster, found in postmaster.pid; SIGKILL if it lingers."""
    pid = None
    try:
        with open(os.path.join(data, "postmaster.pid")) as f:
            pid = int(f.readline())
        os.kill(pid, signal.SIGINT)
        p.wait(10)  # runuser exits with it
    except (OSError, ValueError, subprocess.TimeoutExpired):
        for kill in ([lambda: os.kill(pid, signal.SIGKILL)] if pid else []) + [lambda: os.killpg(p.pid, signal.SIGKILL)]:
            try:
                kill()
            except OSError:
                pass
    p.wait()


def main():
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="tooz-pg-")
    undo.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
    as_pg = []
    if os.geteuid() == 0:  # PostgreSQL will not run as root
        shutil.chown(tmp, "postgres", "postgres")
        as_pg = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(tmp, "data")
    subprocess.run(as_pg + [f"{BIN}/initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                            "--locale=C", "--no-sync", "--no-instructions"],
                   cwd=tmp, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p = subprocess.Popen(as_pg + [f"{BIN}/postgres", "-D", data, "-k", tmp, "-p", str(port),
                                  "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                                  "-c", "dynamic_shared_memory_type=mmap",  # its files go with tmp
                                  "-c", "idle_in_transaction_session_timeout=1000"],  # the setting: 1 s
                         cwd=tmp, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    undo.append(lambda: stop(p, data))
    end = time.monotonic() + 30
    while True:  # until the server answers
        try:
            psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                             connect_timeout=2).close()
            break
        except psycopg2.OperationalError:
            if p.poll() is not None or time.monotonic() > end:
                raise RuntimeError("postgres did not start")
            time.sleep(0.1)
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    a = coordination.get_coordinator(url, b"A")
    b = coordination.get_coordinator(url, b"B")
    for c in (a, b):
        c.start()
        undo.append(c.stop)
    la, lb = a.get_lock(b"L"), b.get_lock(b"L")
    if not la.acquire(blocking=False):
        raise RuntimeError("A could not take L")
    undo.append(la.release)
    if lb.acquire(blocking=False):
        raise RuntimeError("B took L at once: the advisory lock does not exclude")
    time.sleep(2.5)  # A works, its lock's session idle in tooz's open transaction
    if lb.acquire(blocking=False):
        undo.append(lb.release)
        if la.acquired:
            return ("tooz pgsql: B took lock L while A's lock.acquired is still True: "
                    "idle_in_transaction_session_timeout (1s) ended A's session, left idle in a transaction")
    return None


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    threading.excepthook = lambda args: None  # a failed cleanup step, a closed proxy socket: no traceback
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    code = 2
    try:
        broke = main()
        print(broke or "no defect: B could not take L while A held it")
        code = 1 if broke else 0
    except BaseException as e:
        print(f"error: {e!r}", file=sys.stderr)
    finally:
        for step in reversed(undo):  # each bounded: a hung stop cannot keep a server alive
            t = threading.Thread(target=step, daemon=True)
            t.start()
            t.join(20)
    sys.stdout.flush()
    os._exit(code)

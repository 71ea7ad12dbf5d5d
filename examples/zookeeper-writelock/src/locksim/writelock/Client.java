package locksim.writelock;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.recipes.lock.WriteLock;

/**
 * A locksim client in Java: ZooKeeper's own lock recipe, WriteLock
 * (Debian's libzookeeper-java, zookeeper-recipes-lock 3.8.0), as the lock
 * "zookeeper", speaking locksim worker protocol v2 (docs/protocol.md), with
 * PostgreSQL's JDBC driver (libpostgresql-jdbc-java) for the protected
 * storage. The harness starts it through examples/zookeeper-writelock/client.
 *
 * It prints its hello line, reads one command a line on stdin (init, then
 * acquire, release, extend, write) and answers with history events stamped
 * with System.nanoTime(), which on Linux is clock_gettime(CLOCK_MONOTONIC),
 * the harness's clock. stdout carries protocol lines only; logs go to stderr.
 */
public final class Client {
    static final int HARNESS = envInt("LOCKSIM_PROTOCOL", 1);
    static final int PROTOCOL = HARNESS >= 2 ? 2 : 1;
    static final String LOCK = "zookeeper";
    /** Where the locks live: ROOT/<key> is WriteLock's dir, its contenders' znodes its children. */
    static final String ROOT = "/locksim/writelock";
    /** The dir of init's warm-up lock: not a key's (keys live under ROOT). */
    static final String WARM_UP = "/locksim/writelock-warm-up";
    /** Where WriteLock's source is, at the release Debian's jar was built from. */
    static final String RECIPE = "https://github.com/apache/zookeeper/blob/release-3.8.0-1/zookeeper-recipes/zookeeper-recipes-lock/"
            + "src/main/java/org/apache/zookeeper/recipes/lock/WriteLock.java";
    /**
     * What WriteLock promises its users (sim findings counts a story against
     * it only where it promises what the story tests): each quote is the
     * recipe's own words in ZooKeeper 3.8.0's WriteLock.java, copied word for
     * word (the javadoc's link markup and comment stars left out). README.md,
     * "What the library promises", says what was left out and why.
     */
    static final List<Map<String, Object>> PROMISES = List.of(
            Json.obj("property", "exclusion",
                    "quote", "A protocol to implement an exclusive write lock or to elect a leader.",
                    "source", RECIPE + "#L35-L37"),
            Json.obj("property", "prompt-release",
                    "quote", "Removes the lock or associated znode if you no longer require the lock. this also removes "
                            + "your request in the queue for locking in case you do not already hold the lock.",
                    "source", RECIPE + "#L110-L114"),
            Json.obj("property", "expiry",
                    "quote", "we don't need to retry this operation in the case of failure as ZK will remove ephemeral "
                            + "files and we don't wanna hang this process when closing if we cannot reconnect to ZK",
                    "source", RECIPE + "#L122-L124"));
    static final long DEFAULT_SESSION = 2_000_000_000L;
    static final long DEFAULT_NODE_TIMEOUT = 200_000_000L;

    private static final Object OUT = new Object();
    private static OutputStream stdout;

    private static Map<String, Object> init;
    private static String connectString;
    private static long nodeTimeout = DEFAULT_NODE_TIMEOUT;
    private static Storage store;
    private static final Map<String, Lease> leases = new HashMap<>();

    private static int envInt(String name, int def) {
        try {
            return Integer.parseInt(System.getenv().getOrDefault(name, Integer.toString(def)));
        } catch (NumberFormatException err) {
            return def;
        }
    }

    /** CLOCK_MONOTONIC in ns: HotSpot's System.nanoTime() on Linux. */
    static long mono() {
        return System.nanoTime();
    }

    // ---- output ----------------------------------------------------------

    static void send(Map<String, Object> obj) {
        byte[] line = (Json.write(obj) + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (OUT) {
            try {
                stdout.write(line);
                stdout.flush();
            } catch (IOException err) {
                Runtime.getRuntime().halt(0); // the harness has gone
            }
        }
    }

    static void log(String msg) {
        System.err.println("zookeeper-writelock: " + msg);
    }

    static void event(long id, Map<String, Object> e) {
        e.putIfAbsent("t", mono());
        send(Json.obj("id", id, "event", e));
    }

    // ---- sessions ---------------------------------------------------------

    /** One ZooKeeper session (a handle of the Java client) and what its watcher heard. */
    static final class Session implements Watcher {
        final CountDownLatch ready = new CountDownLatch(1);
        volatile boolean expired;
        ZooKeeper zk;
        long sid;

        @Override
        public void process(WatchedEvent ev) {
            if (ev.getType() != Event.EventType.None) {
                return;
            }
            switch (ev.getState()) {
                case SyncConnected:
                    ready.countDown();
                    break;
                case Expired:
                    // The Java client opens no new session after this:
                    // every later call on the handle fails SessionExpired.
                    expired = true;
                    break;
                default:
                    break;
            }
        }

        /** Ends the session in the background: the ensemble deletes its znodes at once. */
        void close() {
            Thread t = new Thread(() -> {
                try {
                    zk.close(1000);
                } catch (InterruptedException ignored) {
                    // exiting
                }
            }, "close-session");
            t.setDaemon(true);
            t.start();
        }
    }

    /** opTimeout bounds the wait for a session of timeout session, as locksim's own ZooKeeper lock does. */
    static long opTimeout(long session) {
        return Math.max(10 * nodeTimeout, 2 * session);
    }

    /** Opens a session of timeout ttl and waits until it is established. */
    static Session connect(long ttl) throws IOException, InterruptedException {
        Session s = new Session();
        s.zk = new ZooKeeper(connectString, (int) Math.max(1, ttl / 1_000_000), s);
        if (!s.ready.await(opTimeout(ttl), TimeUnit.NANOSECONDS)) {
            s.close();
            throw new IOException("no session with " + connectString + " in " + opTimeout(ttl) / 1_000_000 + "ms");
        }
        s.sid = s.zk.getSessionId();
        return s;
    }

    /** A lease held: the recipe's WriteLock on its own session, its znode (token) and the znode's czxid (fence). */
    static final class Lease {
        final Session s;
        final WriteLock wl;
        final String token;
        final long fence;

        Lease(Session s, WriteLock wl, String token, long fence) {
            this.s = s;
            this.wl = wl;
            this.token = token;
            this.fence = fence;
        }
    }

    /** Withdraws wl's znode (the recipe's unlock), closes the recipe and its session. */
    static String giveUp(Session s, WriteLock wl) {
        String undone = "unlock() withdrew it";
        try {
            wl.unlock();
        } catch (RuntimeException err) {
            undone = "unlock() failed (" + err.getMessage() + "); closing the session deletes it";
        }
        wl.close(); // before the session's close: a LockWatcher that fires now finds the recipe closed
        s.close();
        return undone;
    }

    // ---- commands ---------------------------------------------------------

    @SuppressWarnings("unchecked")
    static void init(Map<String, Object> in) throws Exception {
        if (!LOCK.equals(in.get("lock"))) {
            throw new IllegalArgumentException("zookeeper-writelock implements lock " + LOCK + ", not " + in.get("lock"));
        }
        String fence = (String) in.get("fence");
        if (fence != null && !fence.equals("postgres")) {
            throw new IllegalArgumentException("zookeeper-writelock has no fence source " + fence + " (it has postgres, and the znode's czxid)");
        }
        if (in.get("watchdog") != null) {
            throw new IllegalArgumentException("zookeeper-writelock has no watchdog: the session's pings are the recipe's renewal");
        }
        if (Boolean.TRUE.equals(in.get("check_lease"))) {
            throw new IllegalArgumentException("zookeeper-writelock has no lease check: WriteLock keeps no lease time");
        }
        if (fence != null && in.get("storage") == null) {
            throw new IllegalArgumentException("fence postgres needs the storage connection");
        }
        Map<String, Object> cfg = (Map<String, Object>) in.getOrDefault("config", Map.of());
        List<Object> members = (List<Object>) cfg.get("zookeeper");
        if (members == null || members.isEmpty()) {
            throw new IllegalArgumentException("init has no zookeeper members (config.zookeeper)");
        }
        List<String> addrs = new ArrayList<>();
        for (Object m : members) {
            addrs.add((String) ((Map<String, Object>) m).get("addr"));
        }
        connectString = String.join(",", addrs);
        if (cfg.get("node_timeout") instanceof Long && (Long) cfg.get("node_timeout") > 0) {
            nodeTimeout = (Long) cfg.get("node_timeout");
        }
        init = in;
        // One session now, to make ROOT (the recipe creates only the last
        // znode of its dir), and to load and run the client's and the
        // recipe's code once (a lock and unlock of WARM_UP, outside ROOT):
        // a fresh JVM's first acquire takes ten times as long as the next.
        Session s = connect(DEFAULT_SESSION);
        try {
            String p = "";
            for (String part : ROOT.substring(1).split("/")) {
                p += "/" + part;
                try {
                    s.zk.create(p, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                } catch (KeeperException.NodeExistsException ignored) {
                    // made by another client
                }
            }
            WriteLock warm = new WriteLock(s.zk, WARM_UP, ZooDefs.Ids.OPEN_ACL_UNSAFE);
            if (warm.lock()) {
                s.zk.exists(warm.getId(), false);
            }
            warm.unlock();
            warm.close();
        } finally {
            s.zk.close(1000);
        }
        if (in.get("storage") != null) {
            store = new Storage((String) in.get("storage"), (String) in.get("storage_mode"));
            store.connect();
        }
    }

    static long num(Map<String, Object> cmd, String field) {
        Object v = cmd.get(field);
        return v instanceof Number ? ((Number) v).longValue() : 0;
    }

    static void acquire(long id, Map<String, Object> cmd) {
        String key = (String) cmd.get("key");
        long ttl = num(cmd, "ttl");
        event(id, Json.obj("type", "invoke", "op", "acquire", "key", key, "ttl", ttl));
        long session = ttl > 0 ? ttl : DEFAULT_SESSION;
        if (leases.containsKey(key)) {
            event(id, Json.obj("type", "fail", "op", "acquire", "key", key, "reason", "held",
                    "detail", "this client already holds " + key));
            return;
        }
        Session s;
        try {
            s = connect(session);
        } catch (Exception err) {
            event(id, Json.obj("type", "info", "op", "acquire", "key", key, "detail", "zookeeper: " + err));
            return;
        }
        WriteLock wl = new WriteLock(s.zk, ROOT + "/" + key, ZooDefs.Ids.OPEN_ACL_UNSAFE);
        boolean owner;
        try {
            owner = wl.lock();
        } catch (Exception err) {
            String undone = giveUp(s, wl);
            event(id, Json.obj("type", "info", "op", "acquire", "key", key, "detail", "WriteLock.lock(): " + err + " (" + undone + ")"));
            return;
        }
        if (!owner) {
            String mine = wl.getId();
            String undone = giveUp(s, wl);
            event(id, Json.obj("type", "fail", "op", "acquire", "key", key, "reason", "held",
                    "detail", "WriteLock.lock() returned false: " + mine + " is not the lowest znode under " + wl.getDir() + " (" + undone + ")"));
            return;
        }
        String token = wl.getId();
        long fence;
        try {
            // The fencing token: the zxid that created the holder's znode.
            Stat st = s.zk.exists(token, false);
            if (st == null) {
                throw new IllegalStateException("the lock znode " + token + " is gone (the session expired)");
            }
            fence = st.getCzxid();
            if (init.get("fence") != null) {
                fence = store.nextFence();
            }
        } catch (Exception err) {
            String undone = giveUp(s, wl);
            event(id, Json.obj("type", "info", "op", "acquire", "key", key, "detail", "fencing token: " + err + " (" + undone + ")"));
            return;
        }
        leases.put(key, new Lease(s, wl, token, fence));
        // A session lock: no ttl on the server, no lease_end; the client
        // believes it holds the lock until it releases it, as the recipe has it.
        event(id, Json.obj("type", "ok", "op", "acquire", "key", key, "token", token, "fence", fence,
                "detail", "WriteLock.lock() returned true: " + token + " is the lowest znode (session 0x" + Long.toHexString(s.sid) + ")"));
    }

    static void noLease(long id, String op, String key) {
        event(id, Json.obj("type", "fail", "op", op, "key", key, "reason", "no-lease",
                "detail", "refused by the client: it holds no lease, so it sends nothing"));
    }

    static void release(long id, Map<String, Object> cmd) {
        String key = (String) cmd.get("key");
        Lease l = leases.remove(key);
        event(id, Json.obj("type", "invoke", "op", "release", "key", key, "token", l == null ? null : l.token));
        if (l == null) {
            noLease(id, "release", key);
            return;
        }
        Map<String, Object> done = Json.obj("op", "release", "key", key, "token", l.token);
        // What the recipe believes, from memory: isOwner() compares the id
        // and ownerId it keeps, and asks the ensemble nothing.
        String believes = "isOwner() " + l.wl.isOwner() + "; ";
        try {
            if (l.s.expired) {
                done.put("type", "fail");
                done.put("reason", "not-held");
                done.put("detail", believes + "the session expired: its znode is gone (the client sent nothing)");
                return;
            }
            try {
                // unlock() deletes the znode; a NoNode it swallows.
                l.wl.unlock();
                done.put("type", "ok");
                done.put("detail", believes + "WriteLock.unlock() deleted " + l.token);
            } catch (RuntimeException err) {
                Throwable c = err.getCause();
                if (c instanceof KeeperException.SessionExpiredException) {
                    done.put("type", "fail");
                    done.put("reason", "not-held");
                } else {
                    done.put("type", "info");
                }
                done.put("detail", believes + "WriteLock.unlock(): " + (c != null ? c : err));
            }
        } finally {
            l.wl.close();
            l.s.close();
            event(id, done);
        }
    }

    static void extend(long id, Map<String, Object> cmd) {
        String key = (String) cmd.get("key");
        Lease l = leases.get(key);
        event(id, Json.obj("type", "invoke", "op", "extend", "key", key, "token", l == null ? null : l.token, "ttl", num(cmd, "ttl")));
        if (l == null) {
            noLease(id, "extend", key);
            return;
        }
        Map<String, Object> done = Json.obj("op", "extend", "key", key, "token", l.token);
        // WriteLock has no extend: the session's timeout cannot change and
        // its pings renew it. As locksim's own ZooKeeper lock, extend checks
        // that the znode is still there, owned by the lease's session.
        if (l.s.expired) {
            done.putAll(Json.obj("type", "fail", "reason", "not-held", "detail", "the session expired: its znode is gone (the client sent nothing)"));
        } else {
            try {
                Stat st = l.s.zk.exists(l.token, false);
                if (st == null || st.getEphemeralOwner() != l.s.sid) {
                    done.putAll(Json.obj("type", "fail", "reason", "not-held", "detail", "the lock znode " + l.token + " is gone"));
                } else {
                    done.put("type", "ok");
                }
            } catch (KeeperException.SessionExpiredException err) {
                done.putAll(Json.obj("type", "fail", "reason", "not-held", "detail", "zookeeper: " + err));
            } catch (Exception err) {
                done.putAll(Json.obj("type", "info", "detail", "zookeeper: " + err));
            }
        }
        if ("not-held".equals(done.get("reason"))) {
            leases.remove(key);
            l.wl.close();
            l.s.close();
        }
        event(id, done);
    }

    static final Map<String, String> REFUSALS = Map.of("fenced", "fence", "fenced-write", "fence", "token-cas", "token", "idempotent", "duplicate");

    /**
     * One critical section on the protected counter: read it (the
     * invocation is stamped before the read and sent after it), work for
     * cmd's work, write read+1 with the lease's fencing token and token. A
     * pause (SIGSTOP) during the work delays the write, as in Kleppmann's
     * diagram.
     */
    static void write(long id, Map<String, Object> cmd) throws InterruptedException {
        String key = (String) cmd.get("key");
        Lease l = leases.get(key);
        boolean unlocked = Boolean.TRUE.equals(cmd.get("unlocked"));
        String token = l == null ? null : l.token;
        Long fence = l == null || l.fence == 0 ? null : l.fence;
        Map<String, Object> invoke = Json.obj("t", mono(), "type", "invoke", "op", "write", "key", key, "token", token, "fence", fence,
                "unlocked", unlocked ? Boolean.TRUE : null);
        Map<String, Object> done = Json.obj("type", "fail", "op", "write", "key", key, "token", token, "fence", fence);
        if (l == null && !unlocked) {
            event(id, invoke);
            noLease(id, "write", key);
            return;
        }
        if (store == null) {
            event(id, invoke);
            done.put("detail", "this scenario has no protected storage");
            event(id, done);
            return;
        }
        long read;
        try {
            read = store.read(token, fence == null ? 0 : fence);
        } catch (Storage.StorageException err) {
            event(id, invoke);
            done.put("reason", "read");
            done.put("detail", err.getMessage());
            event(id, done);
            return;
        }
        event(id, invoke);
        long work = num(cmd, "work");
        if (work > 0) {
            TimeUnit.NANOSECONDS.sleep(work);
        }
        done.put("read", read);
        done.put("wrote", read + 1);
        try {
            if (store.write(read, read + 1, fence == null ? 0 : fence, token)) {
                done.put("type", "ok");
            } else {
                done.put("reason", REFUSALS.get(store.mode));
                done.put("detail", "storage (" + store.mode + ") refused the write");
            }
        } catch (Storage.StorageException err) {
            done.put("type", "info");
            done.put("detail", err.getMessage());
        }
        event(id, done);
    }

    /** The recipe jar's version, from the pom.properties Maven put in it (its manifest has none). */
    static String recipeVersion() {
        try (java.io.InputStream in = WriteLock.class.getResourceAsStream("/META-INF/maven/org.apache.zookeeper/zookeeper-recipes-lock/pom.properties")) {
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("version", "?");
        } catch (IOException | NullPointerException err) {
            return "?";
        }
    }

    static List<String> ops() {
        return PROTOCOL >= 2 ? List.of("acquire", "release", "extend", "write") : List.of("acquire", "release", "extend");
    }

    @SuppressWarnings("unchecked")
    static void handle(String line) {
        Map<String, Object> cmd;
        try {
            cmd = (Map<String, Object>) Json.parse(line);
        } catch (RuntimeException err) {
            send(Json.obj("id", 0L, "done", true, "error", "bad command: " + err.getMessage()));
            return;
        }
        long id = num(cmd, "id");
        try {
            String op = (String) cmd.get("op");
            if ("init".equals(op)) {
                init((Map<String, Object>) cmd.getOrDefault("init", Map.of()));
            } else if (init == null) {
                throw new IllegalStateException(op + " before init");
            } else if ("acquire".equals(op)) {
                acquire(id, cmd);
            } else if ("release".equals(op)) {
                release(id, cmd);
            } else if ("extend".equals(op)) {
                extend(id, cmd);
            } else if ("write".equals(op) && PROTOCOL >= 2) {
                write(id, cmd);
            } else {
                throw new IllegalArgumentException("unknown op \"" + op + "\" (zookeeper-writelock carries out " + String.join(", ", ops()) + ")");
            }
            send(Json.obj("id", id, "done", true));
        } catch (Exception err) {
            send(Json.obj("id", id, "done", true, "error", err.toString()));
        }
    }

    /**
     * Wakes every 10 ms and tells the harness of any span longer than 60 ms
     * in which this process did not run (the machine too busy, a long GC,
     * or a pause the story made).
     */
    static void watchStalls() {
        long last = mono();
        while (true) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException err) {
                return;
            }
            long now = mono();
            if (now - last > 60_000_000L) {
                send(Json.obj("stall", Json.obj("from", last, "to", now)));
            }
            last = now;
        }
    }

    public static void main(String[] args) throws IOException {
        stdout = new FileOutputStream(FileDescriptor.out);
        if (args.length == 1 && args[0].equals("--monotonic")) {
            // One reading, for the harness's test that this is its clock.
            stdout.write(Long.toString(mono()).getBytes(StandardCharsets.UTF_8));
            stdout.flush();
            return;
        }
        Map<String, Object> hello = Json.obj("protocol", (long) PROTOCOL,
                "name", "zookeeper-writelock: WriteLock (zookeeper-recipes-lock " + recipeVersion()
                        + "), ZooKeeper " + org.apache.zookeeper.Version.getFullVersion().split("[ -]")[0]
                        + ", pgjdbc " + org.postgresql.util.DriverInfo.DRIVER_VERSION + ", Java " + System.getProperty("java.version"),
                "locks", List.of(LOCK), "ops", ops());
        if (PROTOCOL >= 2) {
            hello.put("storage_modes", List.of("plain", "fenced", "fenced-write", "token-cas", "idempotent"));
            hello.put("fences", List.of("postgres"));
            hello.put("promises", PROMISES);
        }
        send(hello);
        Thread stalls = new Thread(Client::watchStalls, "stalls");
        stalls.setDaemon(true);
        stalls.start();
        // Commands are carried out one at a time, in order; when stdin
        // closes the client closes its sessions (the ensemble deletes their
        // znodes) and its storage connection, and exits.
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.isBlank()) {
                handle(line);
            }
        }
        for (Lease l : leases.values()) {
            l.wl.close();
            try {
                l.s.zk.close(500);
            } catch (InterruptedException ignored) {
                break;
            }
        }
        if (store != null) {
            store.close();
        }
        Runtime.getRuntime().halt(0);
    }
}

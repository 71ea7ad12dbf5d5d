package locksim.writelock;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * Storage is the client's handle on the protected counter: one PostgreSQL
 * JDBC connection (Debian's libpostgresql-jdbc-java, autocommit) through
 * this client's own proxy, opened again after it broke. The SQL is the
 * protocol's (docs/protocol.md, "The protected storage").
 */
final class Storage {
    /** A statement that failed: the read's failure, or the write's unknown outcome. */
    static final class StorageException extends Exception {
        StorageException(String msg, Throwable cause) {
            super(msg, cause);
        }
    }

    final String mode;
    private final String url;
    private final Properties props = new Properties();
    private Connection conn;

    /**
     * Storage for the harness's postgres:// URL: its query parameters other
     * than sslmode and connect_timeout are server settings, sent at start-up
     * as options (-c name=value).
     */
    Storage(String postgresURL, String mode) {
        this.mode = mode == null || mode.isEmpty() ? "plain" : mode;
        URI u = URI.create(postgresURL);
        String db = u.getPath() == null ? "" : u.getPath().replaceFirst("^/", "");
        url = "jdbc:postgresql://" + u.getHost() + ":" + (u.getPort() > 0 ? u.getPort() : 5432) + "/" + db;
        String info = u.getRawUserInfo();
        if (info != null) {
            String[] up = info.split(":", 2);
            props.setProperty("user", dec(up[0]));
            if (up.length == 2) {
                props.setProperty("password", dec(up[1]));
            }
        }
        List<String> options = new ArrayList<>();
        if (u.getRawQuery() != null) {
            for (String kv : u.getRawQuery().split("&")) {
                String[] p = kv.split("=", 2);
                String k = dec(p[0]), v = p.length == 2 ? dec(p[1]) : "";
                switch (k) {
                    case "sslmode": props.setProperty("sslmode", v); break;
                    case "connect_timeout": props.setProperty("connectTimeout", v); break;
                    default: options.add("-c " + k + "=" + v);
                }
            }
        }
        if (!options.isEmpty()) {
            props.setProperty("options", String.join(" ", options));
        }
    }

    private static String dec(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    void connect() throws StorageException {
        try {
            if (conn == null || conn.isClosed()) {
                conn = DriverManager.getConnection(url, props);
                conn.setAutoCommit(true);
            }
        } catch (SQLException err) {
            conn = null;
            throw new StorageException("storage: " + err.getMessage(), err);
        }
    }

    /** Runs one statement; returns its rows' first columns, or null when it returns no rows. */
    private List<Long> run(String what, String sql, Object... args) throws StorageException {
        connect();
        try (PreparedStatement st = conn.prepareStatement(sql)) {
            for (int k = 0; k < args.length; k++) {
                st.setObject(k + 1, args[k]);
            }
            if (!st.execute()) {
                List<Long> n = new ArrayList<>();
                n.add((long) st.getUpdateCount());
                return n;
            }
            List<Long> rows = new ArrayList<>();
            try (ResultSet rs = st.getResultSet()) {
                while (rs.next()) {
                    rows.add(rs.getLong(1));
                }
            }
            return rows;
        } catch (SQLException err) {
            broke(err);
            throw new StorageException("storage " + what + ": " + err.getMessage(), err);
        }
    }

    /** Forgets a connection that broke (SQLSTATE class 08), so the next statement opens another. */
    private void broke(SQLException err) {
        try {
            if (conn != null && (conn.isClosed() || (err.getSQLState() != null && err.getSQLState().startsWith("08")))) {
                conn.close();
                conn = null;
            }
        } catch (SQLException ignored) {
            conn = null;
        }
    }

    /** The next value of fence_seq: a fencing token drawn from PostgreSQL. */
    long nextFence() throws StorageException {
        return one("fence", run("fence", "SELECT nextval('fence_seq')"));
    }

    private static long one(String what, List<Long> rows) throws StorageException {
        if (rows.size() != 1) {
            throw new StorageException("storage " + what + ": counter row missing", null);
        }
        return rows.get(0);
    }

    /** Opens a critical section: claims the row for token (token-cas) and reads the counter, raising the fence to fence (fenced). */
    long read(String token, long fence) throws StorageException {
        if (mode.equals("token-cas")) {
            if (token == null || token.isEmpty()) {
                throw new StorageException("storage claim: empty token", null);
            }
            if (one("claim", run("claim", "UPDATE counter SET owner = ? WHERE id = 1", token)) != 1) {
                throw new StorageException("storage claim: counter row missing", null);
            }
        }
        if (mode.equals("fenced") && fence > 0) {
            return one("read", run("read", "UPDATE counter SET fence = GREATEST(fence, ?) WHERE id = 1 RETURNING value", fence));
        }
        return one("read", run("read", "SELECT value FROM counter WHERE id = 1"));
    }

    /** Stores value as the mode allows: true accepted, false refused by the storage; StorageException when the outcome is unknown. */
    boolean write(long read, long value, long fence, String token) throws StorageException {
        switch (mode) {
            case "plain":
                if (one("write", run("write", "UPDATE counter SET value = ? WHERE id = 1", value)) != 1) {
                    throw new StorageException("storage write: counter row missing", null);
                }
                return true;
            case "fenced":
            case "fenced-write":
                return one("write", run("write", "UPDATE counter SET value = ?, fence = ? WHERE id = 1 AND fence <= ?", value, fence, fence)) == 1;
            case "token-cas":
                return one("write", run("write", "UPDATE counter SET value = ? WHERE id = 1 AND owner = ?", value, token)) == 1;
            case "idempotent":
                return writeOnce(read, value);
            default:
                throw new StorageException("storage: unknown mode " + mode, null);
        }
    }

    /** Idempotent mode's write: the run (job, period = the value read) and the counter update commit together, or not at all. */
    private boolean writeOnce(long read, long value) throws StorageException {
        run("write", "BEGIN");
        try {
            if (one("write", run("write", "INSERT INTO runs (job, period) VALUES ('counter', ?) ON CONFLICT (job, period) DO NOTHING", Long.toString(read))) == 0) {
                run("write", "ROLLBACK");
                return false;
            }
            if (one("write", run("write", "UPDATE counter SET value = ? WHERE id = 1", value)) != 1) {
                throw new StorageException("storage write: counter row missing", null);
            }
            run("write", "COMMIT");
            return true;
        } catch (StorageException err) {
            if (conn != null) {
                try {
                    run("write", "ROLLBACK");
                } catch (StorageException ignored) {
                    // the connection is gone: so is the transaction
                }
            }
            throw err;
        }
    }

    void close() {
        try {
            if (conn != null) {
                conn.close();
            }
        } catch (SQLException ignored) {
            // closing anyway
        }
    }
}

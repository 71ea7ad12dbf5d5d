package storage

// sql.go: the SQL of the protected storage, written once. Every client
// program sends these statements (docs/protocol.md, "The protected
// storage"); TestStorageSQLWrittenOnce holds the page and the example
// clients to them, up to how each driver binds its values ($1, %s, ?).

// Schema is what Setup creates: the counter, the runs table idempotent
// writes claim their run in, the jobs table a scheduled job's runs are
// recorded in (and job_keys, the key a job's first effect claims when it
// is written once: Store.JobOnce), and the fencing-token sequence.
const Schema = `CREATE TABLE counter (id int PRIMARY KEY, value bigint NOT NULL, fence bigint NOT NULL, owner text);
INSERT INTO counter (id, value, fence, owner) VALUES (1, 0, 0, NULL);
CREATE TABLE runs (job text NOT NULL, period text NOT NULL, UNIQUE (job, period));
CREATE TABLE jobs (n serial PRIMARY KEY, job text NOT NULL, period text NOT NULL, client int NOT NULL);
CREATE TABLE job_keys (job text NOT NULL, period text NOT NULL, UNIQUE (job, period));
CREATE SEQUENCE fence_seq;`

// The statements of a critical section, by mode (docs/protocol.md's table).
const (
	// SQLRead is plain's read (and every mode's but fenced with a token).
	SQLRead = `SELECT value FROM counter WHERE id = 1`
	// SQLFencedRead is fenced's read with a token: it raises the fence.
	SQLFencedRead = `UPDATE counter SET fence = GREATEST(fence, $1) WHERE id = 1 RETURNING value`
	// SQLClaim is token-cas's claim before its read.
	SQLClaim = `UPDATE counter SET owner = $1 WHERE id = 1`
	// SQLWrite is plain's write, and idempotent's after its run's claim.
	SQLWrite = `UPDATE counter SET value = $1 WHERE id = 1`
	// SQLFencedWrite is fenced's (and fenced-write's) write.
	SQLFencedWrite = `UPDATE counter SET value = $1, fence = $2 WHERE id = 1 AND fence <= $2`
	// SQLTokenWrite is token-cas's write.
	SQLTokenWrite = `UPDATE counter SET value = $1 WHERE id = 1 AND owner = $2`
	// SQLRunClaim is idempotent's claim of its run, job "counter" and
	// period the value read, in the write's transaction.
	SQLRunClaim = `INSERT INTO runs (job, period) VALUES ($1, $2) ON CONFLICT (job, period) DO NOTHING`
	// SQLJob is a scheduled job's first effect, a row of the job table
	// with no constraint: a run of the same period twice is two rows.
	SQLJob = `INSERT INTO jobs (job, period, client) VALUES ($1, $2, $3)`
	// SQLJobOnce is the first effect made idempotent: it claims (job,
	// period) under a unique key, as an idempotency key does, and writes
	// the row only with the claim; a second run of the period writes
	// nothing.
	SQLJobOnce = `WITH k AS (INSERT INTO job_keys (job, period) VALUES ($1, $2) ON CONFLICT (job, period) DO NOTHING RETURNING 1) INSERT INTO jobs (job, period, client) SELECT $1, $2, $3 FROM k`
	// SQLNextFence draws a fencing token from the sequence.
	SQLNextFence = `SELECT nextval('fence_seq')`
)

// ClientSQL are the statements every client program that writes the
// storage sends, for the test that holds the copies to them.
var ClientSQL = []string{SQLRead, SQLFencedRead, SQLClaim, SQLWrite, SQLFencedWrite, SQLTokenWrite, SQLRunClaim, SQLNextFence}

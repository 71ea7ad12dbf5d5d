package clients

// What each registered lock promises its users (Spec.Promises): one
// promise.Set per lock that is neither a mutant nor a test lock, each
// promise in the words that make it, copied word for word (markdown's
// links, backticks and bold left out), with the address that says so.
//
//   - locksim's own reference locks (redis, redlock, redis-sentinel, the
//     postgres locks, zookeeper, zookeeper-lock-delay, memcached) follow a
//     published pattern, and promise what its text promises: the Redis
//     documentation's page on distributed locks, the PostgreSQL 15 manual,
//     ZooKeeper 3.8.0's recipes and Programmer's Guide, Chubby's paper,
//     memcached 1.6.18's protocol.txt. A reference promises nothing its
//     pattern's text does not, even where its code does more
//     (redis-sentinel checks validity at acquire, as Redlock does; its
//     pattern does not).
//   - library locks (redsync, redislock, rueidislock, goose, migrate, etcd,
//     etcd-lock-service) promise what their own README, doc comments or API
//     reference say, at the version locksim plays (go.mod; etcd 3.4.23 for
//     the Lock service, which the server runs).
//
// TestEveryLockPromisesExclusion holds every registered lock to a set that
// checks and promises exclusion.

import "github.com/locksim/locksim/promise"

// The published pages the references' promises quote.
const (
	// redisLocksPage is the Redis documentation, "Distributed Locks with
	// Redis".
	redisLocksPage = "https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/"
	// pgAdvisoryLocks is the PostgreSQL 15 manual, section 13.3.5,
	// "Advisory Locks".
	pgAdvisoryLocks = "https://www.postgresql.org/docs/15/explicit-locking.html#ADVISORY-LOCKS"
	// pgAdvisoryFunctions is the PostgreSQL 15 manual, section 9.27.10,
	// "Advisory Lock Functions", its Table 9.100.
	pgAdvisoryFunctions = "https://www.postgresql.org/docs/15/functions-admin.html#FUNCTIONS-ADVISORY-LOCKS-TABLE"
	// zkRecipeLocks is ZooKeeper 3.8.0's "ZooKeeper Recipes and
	// Solutions", section "Locks".
	zkRecipeLocks = "https://zookeeper.apache.org/doc/r3.8.0/recipes.html#sc_recipes_Locks"
	// zkGuide is ZooKeeper 3.8.0's "ZooKeeper Programmer's Guide".
	zkGuide = "https://zookeeper.apache.org/doc/r3.8.0/zookeeperProgrammers.html"
	// chubbyLocks is Michael Burrows, "The Chubby lock service for
	// loosely-coupled distributed systems" (OSDI 2006), section 2.4,
	// "Locks and sequencers".
	chubbyLocks = "https://www.usenix.org/legacy/event/osdi06/tech/full_papers/burrows/burrows.pdf, section 2.4, \"Locks and sequencers\""
	// memcachedProtocol is memcached 1.6.18's doc/protocol.txt.
	memcachedProtocol = "https://github.com/memcached/memcached/blob/1.6.18/doc/protocol.txt"
	// etcdLockNotes is etcd v3.7's "etcd versus other key-value stores",
	// section "Notes on the usage of lock and lease".
	etcdLockNotes = "https://etcd.io/docs/v3.7/learning/why/#notes-on-the-usage-of-lock-and-lease"
	// etcdConcurrency is go.etcd.io/etcd/client/v3/concurrency at v3.7.3.
	etcdConcurrency = "https://github.com/etcd-io/etcd/blob/v3.7.3/client/v3/concurrency/"
	// etcdLockAPI is etcd v3.4's "API reference: concurrency" (generated
	// from v3lock.proto), the Lock service locksim's etcd 3.4.23 runs.
	etcdLockAPI = "https://etcd.io/docs/v3.4/dev-guide/api_concurrency_reference_v3/"
)

// redisPromises: the single-instance pattern, section "Correct
// Implementation with a Single Instance" (SET resource_name
// my_random_value NX PX 30000, and the script that deletes the key only
// while it holds the caller's value). It checks no validity at acquire,
// extends nothing and says nothing of clocks; the page says the opposite
// of a monotonic lease (section "Disclaimer about consistency": "Redis is
// not using monotonic clock for TTL expiration mechanism").
var redisPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "So now we have a good way to acquire and release the lock. With this system, reasoning about a non-distributed system composed of a single, always available, instance, is safe.",
		Source: redisLocksPage + "#correct-implementation-with-a-single-instance"},
	{Property: promise.TokenRelease,
		Quote:  "With the above script instead every lock is “signed” with a random string, so the lock will be removed only if it is still the one that was set by the client trying to remove it.",
		Source: redisLocksPage + "#correct-implementation-with-a-single-instance"},
	{Property: promise.PromptRelease,
		Quote:  "Basically the random value is used in order to release the lock in a safe way, with a script that tells Redis: remove the key only if it exists and the value stored at the key is exactly the one I expect to be.",
		Source: redisLocksPage + "#correct-implementation-with-a-single-instance"},
	{Property: promise.Expiry,
		Quote:  `The "lock validity time" is the time we use as the key's time to live. It is both the auto release time, and the time the client has in order to perform the operation required before another client may be able to acquire the lock again, without technically violating the mutual exclusion guarantee, which is only limited to a given window of time from the moment the lock is acquired.`,
		Source: redisLocksPage + "#correct-implementation-with-a-single-instance"},
}

// redisSentinelPromises: the same single-instance pattern, on whichever
// node the sentinels name primary. (The same page, section "Why
// Failover-based Implementations Are Not Enough", warns that a failover
// can break its exclusion: the story redis-sentinel-failover.)
var redisSentinelPromises = redisPromises

// redlockPromises: the same page's Redlock, sections "Safety and Liveness
// Guarantees", "The Redlock Algorithm" (steps 1-5), "Liveness Arguments"
// and "Making the algorithm more reliable: Extending the lock". No
// monotonic lease (its only clock words are an assumption on clock
// rates, and its disclaimer says a wall-clock shift can break it), no
// fencing token (it tells its users to implement one).
var redlockPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "Safety property: Mutual exclusion. At any given moment, only one client can hold a lock.",
		Source: redisLocksPage + "#safety-and-liveness-guarantees"},
	{Property: promise.TokenRelease,
		Quote:  "We already described how to acquire and release the lock safely in a single instance. We take for granted that the algorithm will use this method to acquire and release the lock in a single instance.",
		Source: redisLocksPage + "#the-redlock-algorithm"},
	{Property: promise.ValidityAtAcquire,
		Quote:  "The client computes how much time elapsed in order to acquire the lock, by subtracting from the current time the timestamp obtained in step 1. If and only if the client was able to acquire the lock in the majority of the instances (at least 3), and the total time elapsed to acquire the lock is less than lock validity time, the lock is considered to be acquired.",
		Source: redisLocksPage + "#the-redlock-algorithm"},
	{Property: promise.BoundedCalls,
		Quote:  "During step 2, when setting the lock in each instance, the client uses a timeout which is small compared to the total lock auto-release time in order to acquire it.",
		Source: redisLocksPage + "#the-redlock-algorithm"},
	{Property: promise.Progress,
		Quote:  "Liveness property B: Fault tolerance. As long as the majority of Redis nodes are up, clients are able to acquire and release locks.",
		Source: redisLocksPage + "#safety-and-liveness-guarantees"},
	{Property: promise.Expiry,
		Quote:  "The auto release of the lock (since keys expire): eventually keys are available again to be locked.",
		Source: redisLocksPage + "#liveness-arguments"},
	{Property: promise.PromptRelease,
		Quote:  "The fact that clients, usually, will cooperate removing the locks when the lock was not acquired, or when the lock was acquired and the work terminated, making it likely that we don’t have to wait for keys to expire to re-acquire the lock.",
		Source: redisLocksPage + "#liveness-arguments"},
	{Property: promise.Renewal,
		Quote:  "Basically the client, if in the middle of the computation while the lock validity is approaching a low value, may extend the lock by sending a Lua script to all the instances that extends the TTL of the key if the key exists and its value is still the random value the client assigned when the lock was acquired.",
		Source: redisLocksPage + "#making-the-algorithm-more-reliable-extending-the-lock"},
}

// redsyncPromises: go-redsync/redsync v4.18.1's README and doc comments.
// Its token-checked release and its validity check are the post's it
// says it implements (doc.go), not words of its own.
var redsyncPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "Obtain a lock for our given mutex. After this is successful, no one else can obtain the same lock (the same mutex name) until we unlock it.",
		Source: "https://github.com/go-redsync/redsync/blob/v4.18.1/README.md?plain=1#L55-L56"},
	{Property: promise.TokenRelease,
		Quote:  "Package redsync provides a Redis-based distributed mutual exclusion lock implementation as described in the post http://redis.io/topics/distlock.",
		Source: "https://github.com/go-redsync/redsync/blob/v4.18.1/doc.go#L1"},
	{Property: promise.ValidityAtAcquire,
		Quote:  "Package redsync provides a Redis-based distributed mutual exclusion lock implementation as described in the post http://redis.io/topics/distlock.",
		Source: "https://github.com/go-redsync/redsync/blob/v4.18.1/doc.go#L1"},
	{Property: promise.PromptRelease,
		Quote:  "Release the lock so other processes or threads can obtain a lock.",
		Source: "https://github.com/go-redsync/redsync/blob/v4.18.1/README.md?plain=1#L63"},
	{Property: promise.Renewal,
		Quote:  "Extend resets the mutex's expiry and returns the status of expiry extension.",
		Source: "https://github.com/go-redsync/redsync/blob/v4.18.1/mutex.go#L152"},
	{Property: promise.Expiry,
		Quote:  "WithExpiry can be used to set the expiry of a mutex to the given value. The default is 8s.",
		Source: "https://github.com/go-redsync/redsync/blob/v4.18.1/redsync.go#L67-L68"},
}

// redislockPromises: bsm/redislock v0.9.4's README and doc comments. No
// validity check at acquire, no bound on a call of its own.
var redislockPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "Simplified distributed locking implementation using Redis.",
		Source: "https://github.com/bsm/redislock/blob/v0.9.4/README.md?plain=1#L7"},
	{Property: promise.TokenRelease,
		Quote:  "ErrLockNotHeld is returned when trying to release an inactive lock.",
		Source: "https://github.com/bsm/redislock/blob/v0.9.4/redislock.go#L33"},
	{Property: promise.PromptRelease,
		Quote:  "Release manually releases the lock.",
		Source: "https://github.com/bsm/redislock/blob/v0.9.4/redislock.go#L189"},
	{Property: promise.Renewal,
		Quote:  "Refresh extends the lock with a new TTL. May return ErrNotObtained if refresh is unsuccessful.",
		Source: "https://github.com/bsm/redislock/blob/v0.9.4/redislock.go#L176-L177"},
	{Property: promise.Expiry,
		Quote:  "TTL returns the remaining time-to-live. Returns 0 if the lock has expired.",
		Source: "https://github.com/bsm/redislock/blob/v0.9.4/redislock.go#L161"},
}

// rueidislockPromises: redis/rueidis v1.0.79's rueidislock/README.md. Its
// waiting WithContext's retry (progress) is not promised here: the
// adapter only tries (TryWithContext), and cannot wait.
var rueidislockPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "A Redis Distributed Lock Pattern enhanced by Client Side Caching.",
		Source: "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md?plain=1#L3"},
	{Property: promise.ValidityAtAcquire,
		Quote:  "If the KeyMajority is satisfied within the KeyValidity duration, the invocation is successful and a ctx is returned as the lock.",
		Source: "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md?plain=1#L64"},
	{Property: promise.Renewal,
		Quote:  "If the invocation is successful, the Locker will extend the ctx validity periodically and also watch client-side caching notifications for canceling the ctx if the KeyMajority is not held anymore.",
		Source: "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md?plain=1#L66"},
	{Property: promise.LossNotice,
		Quote:  "The returned ctx will be canceled automatically and immediately once the KeyMajority is not held anymore",
		Source: "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md?plain=1#L54"},
	{Property: promise.Expiry,
		Quote:  "KeyValidity: 5s — lock validity period before it expires.",
		Source: "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md?plain=1#L44"},
	{Property: promise.PromptRelease,
		Quote:  "invoke cancel() to release the lock.",
		Source: "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md?plain=1#L34"},
}

// postgresSessionPromises: the PostgreSQL 15 manual on session-level
// advisory locks (pg_try_advisory_lock, pg_advisory_unlock).
var postgresSessionPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "Obtains an exclusive session-level advisory lock if available. This will either obtain the lock immediately and return true, or return false without waiting if the lock cannot be acquired immediately.",
		Source: pgAdvisoryFunctions + " (pg_try_advisory_lock)"},
	{Property: promise.PromptRelease,
		Quote:  "Releases a previously-acquired exclusive session-level advisory lock. Returns true if the lock is successfully released.",
		Source: pgAdvisoryFunctions + " (pg_advisory_unlock)"},
	{Property: promise.TokenRelease,
		Quote:  "If the lock was not held, false is returned, and in addition, an SQL warning will be reported by the server.",
		Source: pgAdvisoryFunctions + " (pg_advisory_unlock)"},
	{Property: promise.Expiry,
		Quote:  "Once acquired at session level, an advisory lock is held until explicitly released or the session ends.",
		Source: pgAdvisoryLocks},
}

// postgresHashtextPromises: the session lock, keyed by hashtext(name):
// the same functions, the same words.
var postgresHashtextPromises = postgresSessionPromises

// postgresPooledPromises: the session lock through a pool: the same
// functions, the same words (its release breaks the one of them it
// ignores: the story postgres-pool-mismatch).
var postgresPooledPromises = postgresSessionPromises

// postgresXactPromises: the PostgreSQL 15 manual on transaction-level
// advisory locks (pg_try_advisory_xact_lock, released by the commit).
var postgresXactPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "Obtains an exclusive transaction-level advisory lock if available. This will either obtain the lock immediately and return true, or return false without waiting if the lock cannot be acquired immediately.",
		Source: pgAdvisoryFunctions + " (pg_try_advisory_xact_lock)"},
	{Property: promise.PromptRelease,
		Quote:  "Locks can be taken at session level (so that they are held until released or the session ends) or at transaction level (so that they are held until the current transaction ends; there is no provision for manual release).",
		Source: "https://www.postgresql.org/docs/15/functions-admin.html#FUNCTIONS-ADVISORY-LOCKS"},
	{Property: promise.Expiry,
		Quote:  "Transaction-level lock requests, on the other hand, behave more like regular lock requests: they are automatically released at the end of the transaction, and there is no explicit unlock operation.",
		Source: pgAdvisoryLocks},
}

// goosePromises: pressly/goose v3.30.1's lock package (its PostgreSQL
// session locker).
var goosePromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "NewPostgresSessionLocker returns a SessionLocker that utilizes PostgreSQL's exclusive session-level advisory lock mechanism.",
		Source: "https://github.com/pressly/goose/blob/v3.30.1/lock/postgres.go#L60-L61"},
	{Property: promise.PromptRelease,
		Quote:  "This function creates a SessionLocker that can be used to acquire and release a lock for synchronization purposes.",
		Source: "https://github.com/pressly/goose/blob/v3.30.1/lock/postgres.go#L63-L64"},
	{Property: promise.BoundedCalls,
		Quote:  "The lock acquisition is retried until it is successfully acquired or until the failure threshold is reached. The default lock duration is set to 5 minutes, and the default unlock duration is set to 1 minute.",
		Source: "https://github.com/pressly/goose/blob/v3.30.1/lock/postgres.go#L64-L66"},
	{Property: promise.Expiry,
		Quote:  "SessionLocker is the interface to lock and unlock the database for the duration of a session. The session is defined as the duration of a single connection and both methods must be called on the same connection.",
		Source: "https://github.com/pressly/goose/blob/v3.30.1/lock/locker.go#L17-L19"},
}

// migratePromises: golang-migrate/migrate v4.20.1's database.Driver. No
// bound: the postgres driver's Lock says "This will wait indefinitely
// until the lock can be acquired." (database/postgres/postgres.go#L240).
var migratePromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "Lock should acquire a database lock so that only one migration process can run at a time.",
		Source: "https://github.com/golang-migrate/migrate/blob/v4.20.1/database/driver.go#L55-L56"},
	{Property: promise.PromptRelease,
		Quote:  "Unlock should release the lock.",
		Source: "https://github.com/golang-migrate/migrate/blob/v4.20.1/database/driver.go#L61"},
}

// etcdLeaseExpiry and etcdRevisionFence are etcd's own words on its lock
// APIs, which the concurrency package's Mutex and the Lock service are.
var (
	etcdLeaseExpiry = promise.Promise{Property: promise.Expiry,
		Quote:  "When the server grants a lease, it associates a TTL with the lease. When the server detects the passage of time longer than the TTL, it revokes the lease.",
		Source: etcdLockNotes}
	etcdRevisionFence = promise.Promise{Property: promise.FencingToken,
		Quote:  "In How to do distributed locking, Martin Kleppmann introduced the idea of fencing token. The authors interpret that fencing token is revision number in the case of etcd.",
		Source: etcdLockNotes}
)

// etcdPromises: go.etcd.io/etcd/client/v3/concurrency v3.7.3 (Mutex,
// Session), and etcd v3.7's notes on its lock APIs. (The same notes say
// "the lock APIs cannot be used as mutual exclusion mechanism by
// themselves": exclusion is the Mutex's own doc comment.)
var etcdPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "TryLock locks the mutex if not already locked by another session.",
		Source: etcdConcurrency + "mutex.go#L49"},
	{Property: promise.Renewal,
		Quote:  "Session represents a lease kept alive for the lifetime of a client.",
		Source: etcdConcurrency + "session.go#L28"},
	{Property: promise.LossNotice,
		Quote:  "Done returns a channel that closes when the lease is orphaned, expires, or is otherwise no longer being refreshed.",
		Source: etcdConcurrency + "session.go#L95-L96"},
	etcdLeaseExpiry,
	etcdRevisionFence,
}

// etcdLockServicePromises: the Lock service's API reference at etcd
// v3.4 (the server locksim runs, 3.4.23), and etcd's notes on its lock
// APIs.
var etcdLockServicePromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "Lock acquires a distributed shared lock on a given named lock. On success, it will return a unique key that exists so long as the lock is held by the caller.",
		Source: etcdLockAPI + "#service-lock-etcdserverapiv3lockv3lockpbv3lockproto"},
	{Property: promise.PromptRelease,
		Quote:  "Unlock takes a key returned by Lock and releases the hold on lock.",
		Source: etcdLockAPI + "#service-lock-etcdserverapiv3lockv3lockpbv3lockproto"},
	{Property: promise.Progress,
		Quote:  "The next Lock caller waiting for the lock will then be woken up and given ownership of the lock.",
		Source: etcdLockAPI + "#service-lock-etcdserverapiv3lockv3lockpbv3lockproto"},
	{Property: promise.Expiry,
		Quote:  "If the lease expires or is revoked and currently holds the lock, the lock is automatically released.",
		Source: etcdLockAPI + "#message-lockrequest-etcdserverapiv3lockv3lockpbv3lockproto"},
	etcdRevisionFence,
}

// The ZooKeeper Programmer's Guide's words on what the recipe's lock
// stands on: its session (kept alive, its loss told, its expiry deleting
// the lock's ephemeral znode) and its zxids (the znode's czxid is the
// lock's fencing token).
var (
	zkSessionRenewal = promise.Promise{Property: promise.Renewal,
		Quote:  "The session is kept alive by requests sent by the client. If the session is idle for a period of time that would timeout the session, the client will send a PING request to keep the session alive.",
		Source: zkGuide + "#ch_zkSessions"}
	zkSessionLoss = promise.Promise{Property: promise.LossNotice,
		Quote:  "Watchers are notified when any state change occurs in the client. For example if the client loses connectivity to the server the watcher will be notified, or if the client's session expires, etc...",
		Source: zkGuide + "#ch_zkSessions"}
	zkSessionExpiry = promise.Promise{Property: promise.Expiry,
		Quote:  "Expirations happens when the cluster does not hear from the client within the specified session timeout period (i.e. no heartbeat). At session expiration the cluster will delete any/all ephemeral nodes owned by that session and immediately notify any/all connected clients of the change (anyone watching those znodes).",
		Source: zkGuide + "#ch_zkSessions"}
	zkNoClock = promise.Promise{Property: promise.MonotonicLease,
		Quote:  "ZooKeeper doesn't use real time, or clock time, at all except to put timestamps into the stat structure on znode creation and znode modification.",
		Source: zkGuide + "#sc_timeInZk"}
	zkZxidFence = promise.Promise{Property: promise.FencingToken,
		Quote:  "Every change to the ZooKeeper state receives a stamp in the form of a zxid (ZooKeeper Transaction Id). This exposes the total ordering of all changes to ZooKeeper. Each change will have a unique zxid and if zxid1 is smaller than zxid2 then zxid1 happened before zxid2.",
		Source: zkGuide + "#sc_timeInZk"}
)

// zookeeperPromises: ZooKeeper 3.8.0's lock recipe, and its Programmer's
// Guide. Not progress: the recipe waits for the next-lower znode, and
// this lock tries once.
var zookeeperPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "Fully distributed locks that are globally synchronous, meaning at any snapshot in time no two clients think they hold the same lock.",
		Source: zkRecipeLocks},
	{Property: promise.PromptRelease,
		Quote:  "The unlock protocol is very simple: clients wishing to release a lock simply delete the node they created in step 1.",
		Source: zkRecipeLocks},
	zkSessionExpiry,
	zkSessionRenewal,
	zkSessionLoss,
	zkNoClock,
	zkZxidFence,
}

// zookeeperLockDelayPromises: the recipe with Chubby's lock-delay (section
// 2.4). Not expiry: a holder that failed keeps the lock taken for the
// lock-delay after its session, on purpose.
var zookeeperLockDelayPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  "However, if a lock becomes free because the holder has failed or become inaccessible, the lock server will prevent other clients from claiming the lock for a period called the lock-delay.",
		Source: chubbyLocks},
	{Property: promise.PromptRelease,
		Quote:  "If a client releases a lock in the normal way, it is immediately available for other clients to claim, as one would expect.",
		Source: chubbyLocks},
	zkSessionRenewal,
	zkSessionLoss,
	zkNoClock,
	zkZxidFence,
}

// memcachedPromises: memcached 1.6.18's protocol.txt on the commands the
// lock sends: add (meta set mode E), and the CAS-compared meta set and
// meta delete.
var memcachedPromises = promise.Set{
	{Property: promise.Exclusion,
		Quote:  `"add" means "store this data, but only if the server *doesn't* already hold data for this key".`,
		Source: memcachedProtocol + "#L216-L217"},
	{Property: promise.Expiry,
		Quote:  "If it's non-zero (either Unix time or offset in seconds from current time), it is guaranteed that clients will not be able to retrieve this item after the expiration time arrives (measured by server time).",
		Source: memcachedProtocol + "#L245-L248"},
	{Property: promise.TokenRelease,
		Quote:  "Can be used to only delete or mark-stale if a supplied CAS value matches.",
		Source: memcachedProtocol + "#L818"},
	{Property: promise.Renewal,
		Quote:  `Similar to the basic "cas" command, only store item if the supplied token matches the current CAS value of the item.`,
		Source: memcachedProtocol + "#L740-L741"},
	{Property: promise.PromptRelease,
		Quote:  `The meta delete command allows for explicit deletion of items, as well as marking items as "stale" to allow serving items as stale during revalidation.`,
		Source: memcachedProtocol + "#L781-L782"},
}

//go:build ignore

// (The line above keeps the go tool from treating this package as cgo;
// the file is embedded and compiled by Library, not by go build.)

/* clockshim: an LD_PRELOAD library that shifts the clocks a process sees.
 *
 * libfaketime deadlocks in Debian's jemalloc-linked redis-server, so this
 * shim never allocates and reads the real clocks with raw syscalls.
 *
 * The wall clock (CLOCK_REALTIME, CLOCK_REALTIME_COARSE, gettimeofday,
 * time) takes an offset (a step) and a rate. The monotonic clocks
 * (CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME) take the same
 * rate and never an offset, as adjtime(3) and a slow or fast oscillator
 * move them: continuous when the rate changes, never backwards.
 * CLOCK_MONOTONIC_RAW and the CPU-time clocks pass through (NTP does not
 * slew the raw clock).
 *
 * A process that waits computes its deadline from these clocks, and the
 * kernel measures waits by the real ones; so the waits are translated:
 * relative timeouts (nanosleep, usleep, sleep, relative clock_nanosleep,
 * poll, ppoll, epoll_wait, epoll_pwait) run rate times shorter, absolute
 * deadlines (clock_nanosleep TIMER_ABSTIME, pthread_cond_timedwait in the
 * cond's clock, pthread_cond_clockwait, sem_timedwait, sem_clockwait) are
 * mapped back to the real clock, and a sleep that wakes before its virtual
 * deadline (the rate changed meanwhile) sleeps again. select and pselect
 * are not translated.
 *
 * The control file named by LOCKSIM_CLOCK_FILE holds ten little-endian
 * int64s, written under a seqlock by locksim (clockshim Control):
 *   [0] seq          (odd while a write is in progress)
 *   [1] offset_ns    wall clock:
 *   [2] base_ns      (a real CLOCK_REALTIME reading)
 *   [3] rate_ppb     (rate * 1e9; 0 or 1e9 means normal speed)
 *   [4] version      (2; an older file has only words 0-3)
 *   [5] mrate_ppb    monotonic clocks: the rate from mbase on
 *   [6] mbase_ns     (a real CLOCK_MONOTONIC reading: the last rate change)
 *   [7] mvbase_ns    (the shifted CLOCK_MONOTONIC at mbase)
 *   [8] mprev_ppb    (the rate before mbase, for a coarse reading behind it)
 *   [9] boot_ns      (real CLOCK_BOOTTIME - CLOCK_MONOTONIC at mbase)
 * wall:      shifted = real + offset + (real - base) * (rate_ppb - 1e9) / 1e9
 * monotonic: shifted = mvbase + (real - mbase) * mrate_ppb / 1e9
 *            (mprev_ppb for real < mbase; BOOTTIME is shifted as
 *            CLOCK_MONOTONIC and boot_ns added back)
 * If the variable is unset or the file cannot be mapped, time passes through.
 *
 * The disk: the shim also keeps, for a power-loss fault, how much of each
 * file the disk holds for sure: the file named by LOCKSIM_DISK_FILE holds
 * little-endian int64s, written by the shim and read by locksim
 * (clockshim Disk) once the process is dead:
 *   [0] version      (1)
 *   [1] overflow     (not 0: a sync found no free slot, the table is wrong)
 *   [2] slots        (how many slots follow the four-word head)
 *   [3] unused
 *   then each slot: dev, ino, synced (bytes), unused; a slot is free while
 *   its ino is 0.
 * fsync and fdatasync of a regular file record its length, read before
 * the sync: what was written before the call is on the disk once it
 * returns (what is written during it may not be, and counts as not).
 * ftruncate lowers a recorded length; unlink, and a rename over a file,
 * forget the file's slot (its inode may be reused). A file with no slot
 * was never synced. If the variable is unset, nothing is recorded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL
#define WORDS 10
#define VERSION 2

static volatile int64_t *ctl; /* NULL: pass through */
static volatile int64_t *disk; /* NULL: no sync bookkeeping */
static int64_t disk_slots;

#define DISK_VERSION 1
#define DISK_HEAD 4
#define DISK_SLOT 4
static int mono_ok;           /* the file has the monotonic words */
static unsigned cond_mono_mask; /* the bit of __wrefs a monotonic cond sets; 0: unknown */

/* The real functions the waits call after translating. */
static int (*real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
static int (*real_sem_timedwait)(sem_t *, const struct timespec *);
static int (*real_sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_unlink)(const char *);
static int (*real_rename)(const char *, const char *);

#define RESOLVE(p, name)                                  \
	do {                                              \
		if ((p) == NULL)                          \
			*(void **)&(p) = dlsym(RTLD_NEXT, name); \
	} while (0)

static void resolve(void) {
	RESOLVE(real_cond_timedwait, "pthread_cond_timedwait");
	RESOLVE(real_cond_clockwait, "pthread_cond_clockwait");
	RESOLVE(real_sem_timedwait, "sem_timedwait");
	RESOLVE(real_sem_clockwait, "sem_clockwait");
	RESOLVE(real_poll, "poll");
	RESOLVE(real_ppoll, "ppoll");
	RESOLVE(real_epoll_wait, "epoll_wait");
	RESOLVE(real_epoll_pwait, "epoll_pwait");
	RESOLVE(real_fsync, "fsync");
	RESOLVE(real_fdatasync, "fdatasync");
	RESOLVE(real_ftruncate, "ftruncate");
	RESOLVE(real_unlink, "unlink");
	RESOLVE(real_rename, "rename");
}

/* learn_cond_clock finds the bit glibc sets in a cond made with a
 * CLOCK_MONOTONIC attribute (its __wrefs word), by making one of each. */
static void learn_cond_clock(void) {
	pthread_condattr_t a;
	pthread_cond_t plain, mono;
	if (pthread_condattr_init(&a) != 0)
		return;
	if (pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&mono, &a) == 0) {
		if (pthread_cond_init(&plain, NULL) == 0) {
			unsigned d = mono.__data.__wrefs ^ plain.__data.__wrefs;
			if (d != 0 && (d & (d - 1)) == 0)
				cond_mono_mask = d;
			pthread_cond_destroy(&plain);
		}
		pthread_cond_destroy(&mono);
	}
	pthread_condattr_destroy(&a);
}

/* open_disk maps the sync table named by LOCKSIM_DISK_FILE read-write. */
static void open_disk(void) {
	const char *path = getenv("LOCKSIM_DISK_FILE");
	if (path == NULL || path[0] == '\0')
		return;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	int64_t head[DISK_HEAD];
	if (fstat(fd, &st) == 0 && st.st_size >= DISK_HEAD * 8 && pread(fd, head, sizeof head, 0) == sizeof head &&
	    head[0] == DISK_VERSION && head[2] > 0 && st.st_size >= (DISK_HEAD + head[2] * DISK_SLOT) * 8) {
		size_t n = (size_t)(DISK_HEAD + head[2] * DISK_SLOT) * 8;
		void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			disk_slots = head[2];
			disk = (volatile int64_t *)p;
		}
	}
	close(fd);
}

__attribute__((constructor)) static void clockshim_init(void) {
	resolve();
	learn_cond_clock();
	open_disk();
	const char *path = getenv("LOCKSIM_CLOCK_FILE");
	if (path == NULL || path[0] == '\0')
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) == 0 && st.st_size >= 32) {
		size_t n = st.st_size >= WORDS * 8 ? WORDS * 8 : 32;
		void *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			ctl = (volatile int64_t *)p;
			mono_ok = n == WORDS * 8 && ctl[4] == VERSION;
		}
	}
	close(fd);
}

static int real_clock(clockid_t id, struct timespec *ts) {
	return (int)syscall(SYS_clock_gettime, id, ts);
}

static int64_t ns(const struct timespec *ts) { return (int64_t)ts->tv_sec * NS + ts->tv_nsec; }

static struct timespec spec(int64_t t) {
	struct timespec ts;
	if (t < 0)
		t = 0;
	ts.tv_sec = t / NS;
	ts.tv_nsec = t % NS;
	return ts;
}

static int64_t clamp(__int128 t) {
	if (t > INT64_MAX)
		return INT64_MAX;
	if (t < 0)
		return 0;
	return (int64_t)t;
}

/* snap is one consistent reading of the control file. */
struct snap {
	int64_t off, base, rate, mrate, mbase, mvbase, mprev, boot;
};

/* load reads the control file and, inside the same seqlock section, the
 * real clock id into *real (real may be NULL; INT64_MIN when the clock
 * cannot be read, errno set). 0: no control. */
static int load(struct snap *s, clockid_t id, int64_t *real) {
	int64_t *c = (int64_t *)ctl;
	if (c == NULL) {
		if (real != NULL) {
			struct timespec ts = {0, 0};
			*real = real_clock(id, &ts) == 0 ? ns(&ts) : INT64_MIN;
		}
		return 0;
	}
	for (long tries = 0;; tries++) {
		int64_t s1 = __atomic_load_n(&c[0], __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			if (tries > (1L << 24))
				break; /* a writer died mid-update: read what is there */
			continue;
		}
		if (real != NULL) {
			struct timespec ts = {0, 0};
			*real = real_clock(id, &ts) == 0 ? ns(&ts) : INT64_MIN;
		}
		s->off = __atomic_load_n(&c[1], __ATOMIC_RELAXED);
		s->base = __atomic_load_n(&c[2], __ATOMIC_RELAXED);
		s->rate = __atomic_load_n(&c[3], __ATOMIC_RELAXED);
		if (mono_ok) {
			s->mrate = __atomic_load_n(&c[5], __ATOMIC_RELAXED);
			s->mbase = __atomic_load_n(&c[6], __ATOMIC_RELAXED);
			s->mvbase = __atomic_load_n(&c[7], __ATOMIC_RELAXED);
			s->mprev = __atomic_load_n(&c[8], __ATOMIC_RELAXED);
			s->boot = __atomic_load_n(&c[9], __ATOMIC_RELAXED);
		} else {
			s->mrate = s->mbase = s->mvbase = s->mprev = s->boot = 0;
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&c[0], __ATOMIC_RELAXED) == s1)
			return 1;
	}
	return 1;
}

static int64_t ppb(int64_t r) { return r == 0 ? NS : r; }

static int64_t wall(const struct snap *s, int64_t real) {
	__int128 t = (__int128)real + s->off;
	if (s->rate != 0 && s->rate != NS)
		t += (__int128)(real - s->base) * (s->rate - NS) / NS;
	return clamp(t);
}

static int64_t mono(const struct snap *s, int64_t real) {
	int64_t r = real >= s->mbase ? ppb(s->mrate) : ppb(s->mprev);
	return clamp((__int128)s->mvbase + (__int128)(real - s->mbase) * r / NS);
}

/* kind: 0 passes through, 1 wall, 2 monotonic, 3 boottime. */
static int kind(clockid_t id) {
	switch (id) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
		return 1;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_COARSE:
		return 2;
	case CLOCK_BOOTTIME:
		return 3;
	}
	return 0;
}

static int64_t shifted(int k, const struct snap *s, int64_t real) {
	switch (k) {
	case 1:
		return wall(s, real);
	case 2:
		return mono(s, real);
	case 3:
		return mono(s, real - s->boot) + s->boot;
	}
	return real;
}

/* rate of clock kind k (ppb): how fast it runs against the real one. */
static int64_t rate_of(int k, const struct snap *s) {
	if (k == 1)
		return ppb(s->rate);
	if (k >= 2)
		return ppb(s->mrate);
	return NS;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int k = kind(id);
	if (k == 0 || ctl == NULL)
		return real_clock(id, ts);
	struct snap s;
	int64_t real;
	load(&s, id, &real);
	if (real == INT64_MIN)
		return -1;
	*ts = spec(shifted(k, &s, real));
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	if (tz != NULL) {
		struct timezone *z = tz;
		z->tz_minuteswest = 0;
		z->tz_dsttime = 0;
	}
	struct snap s;
	int64_t real;
	int64_t t = load(&s, CLOCK_REALTIME, &real) ? wall(&s, real) : real;
	tv->tv_sec = t / NS;
	tv->tv_usec = (t % NS) / 1000;
	return 0;
}

time_t time(time_t *out) {
	struct snap s;
	int64_t real;
	int64_t t = load(&s, CLOCK_REALTIME, &real) ? wall(&s, real) : real;
	time_t r = (time_t)(t / NS);
	if (out != NULL)
		*out = r;
	return r;
}

/* ---- waits ---- */

/* real_deadline maps an absolute deadline d on clock kind k to the real
 * clock id's scale, at the current rate; *now_v is the shifted now. */
static int64_t real_deadline(int k, clockid_t id, int64_t d, int64_t *now_v) {
	struct snap s;
	int64_t real;
	load(&s, id, &real);
	int64_t v = shifted(k, &s, real);
	if (now_v != NULL)
		*now_v = v;
	if (d <= v)
		return real;
	return clamp((__int128)real + (__int128)(d - v) * NS / rate_of(k, &s));
}

/* shifted_now is clock id's shifted reading. */
static int64_t shifted_now(int k, clockid_t id) {
	struct snap s;
	int64_t real;
	load(&s, id, &real);
	return shifted(k, &s, real);
}

/* active says the shim changes waits on clock kind k at all. */
static int active(int k) {
	if (ctl == NULL || k == 0)
		return 0;
	struct snap s;
	load(&s, CLOCK_MONOTONIC, NULL);
	if (k == 1)
		return s.off != 0 || ppb(s.rate) != NS;
	return ppb(s.mrate) != NS || ppb(s.mprev) != NS || s.mvbase != s.mbase;
}

/* scale_ms is a relative timeout in ms as the real clock counts it. */
static int scale_ms(int ms) {
	if (ms <= 0 || ctl == NULL)
		return ms;
	struct snap s;
	load(&s, CLOCK_MONOTONIC, NULL);
	int64_t r = ppb(s.mrate);
	if (r == NS)
		return ms;
	__int128 t = ((__int128)ms * NS + r - 1) / r;
	return t > INT32_MAX ? INT32_MAX : (int)t;
}

/* sleep_until sleeps until clock id (kind k) reads d shifted, sleeping
 * again if it wakes early because the rate changed. Returns 0 or an error
 * number (EINTR, with the shifted time left in *left). */
static int sleep_until(int k, clockid_t id, int64_t d, int64_t *left) {
	for (;;) {
		int64_t v;
		int64_t r = real_deadline(k, id, d, &v);
		if (v >= d)
			return 0;
		struct timespec ts = spec(r);
		long e = syscall(SYS_clock_nanosleep, id == CLOCK_MONOTONIC_COARSE ? CLOCK_MONOTONIC : id == CLOCK_REALTIME_COARSE ? CLOCK_REALTIME : id, TIMER_ABSTIME, &ts, NULL);
		if (e != 0) {
			e = errno;
			if (e == EINTR && left != NULL) {
				int64_t l = d - shifted_now(k, id);
				*left = l > 0 ? l : 0;
			}
			return (int)e;
		}
	}
}

int clock_nanosleep(clockid_t id, int flags, const struct timespec *req, struct timespec *rem) {
	int k = kind(id);
	if (!active(k) || req->tv_nsec < 0 || req->tv_nsec >= NS) {
		long e = syscall(SYS_clock_nanosleep, id, flags, req, rem);
		return e == 0 ? 0 : errno;
	}
	int64_t d = ns(req);
	if (!(flags & TIMER_ABSTIME))
		d = clamp((__int128)shifted_now(k, id) + d);
	int64_t left = 0;
	int e = sleep_until(k, id, d, &left);
	if (e == EINTR && rem != NULL && !(flags & TIMER_ABSTIME))
		*rem = spec(left);
	return e;
}

int nanosleep(const struct timespec *req, struct timespec *rem) {
	int e = clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem);
	if (e != 0) {
		errno = e;
		return -1;
	}
	return 0;
}

int usleep(useconds_t us) {
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
	return nanosleep(&ts, NULL);
}

unsigned int sleep(unsigned int secs) {
	struct timespec ts = {secs, 0}, rem = {0, 0};
	if (nanosleep(&ts, &rem) != 0)
		return (unsigned)rem.tv_sec + (rem.tv_nsec > 0);
	return 0;
}

/* cond_clock is the clock a cond was made with (glibc keeps it in a bit
 * of __wrefs, found at start); -1 when the bit is unknown. */
static clockid_t cond_clock(pthread_cond_t *c) {
	if (cond_mono_mask == 0)
		return (clockid_t)-1;
	unsigned w = __atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED);
	return (w & cond_mono_mask) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

/* timed runs one absolute-deadline wait with the deadline mapped to the
 * real clock, and waits again if it timed out before the shifted deadline
 * (the rate changed meanwhile); a wake-up before it returns as it is. */
#define TIMED(k, id, abstime, call)                                              \
	do {                                                                    \
		int64_t d_ = ns(abstime);                                           \
		for (;;) {                                                          \
			int64_t v_;                                                     \
			struct timespec ts_ = spec(real_deadline(k, id, d_, &v_));      \
			const struct timespec *at = &ts_;                               \
			int r_ = (call);                                                \
			if (r_ != ETIMEDOUT || shifted_now(k, id) >= d_)                \
				return r_;                                              \
		}                                                                   \
	} while (0)

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime) {
	resolve();
	clockid_t id = cond_clock(c);
	int k = id == (clockid_t)-1 ? 0 : kind(id);
	if (!active(k) || abstime->tv_nsec < 0 || abstime->tv_nsec >= NS)
		return real_cond_timedwait(c, m, abstime);
	TIMED(k, id, abstime, real_cond_timedwait(c, m, at));
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t id, const struct timespec *abstime) {
	resolve();
	int k = kind(id);
	if (!active(k) || abstime->tv_nsec < 0 || abstime->tv_nsec >= NS)
		return real_cond_clockwait(c, m, id, abstime);
	TIMED(k, id, abstime, real_cond_clockwait(c, m, id, at));
}

/* The semaphore waits return -1 with errno, not an error number. */
static int sem_errno(int r) { return r == 0 ? 0 : errno; }

int sem_timedwait(sem_t *sem, const struct timespec *abstime) {
	resolve();
	if (!active(1) || abstime->tv_nsec < 0 || abstime->tv_nsec >= NS)
		return real_sem_timedwait(sem, abstime);
	int64_t d = ns(abstime);
	for (;;) {
		struct timespec ts = spec(real_deadline(1, CLOCK_REALTIME, d, NULL));
		int e = sem_errno(real_sem_timedwait(sem, &ts));
		if (e == 0)
			return 0;
		if (e != ETIMEDOUT || shifted_now(1, CLOCK_REALTIME) >= d) {
			errno = e;
			return -1;
		}
	}
}

int sem_clockwait(sem_t *sem, clockid_t id, const struct timespec *abstime) {
	resolve();
	int k = kind(id);
	if (!active(k) || abstime->tv_nsec < 0 || abstime->tv_nsec >= NS)
		return real_sem_clockwait(sem, id, abstime);
	int64_t d = ns(abstime);
	for (;;) {
		struct timespec ts = spec(real_deadline(k, id, d, NULL));
		int e = sem_errno(real_sem_clockwait(sem, id, &ts));
		if (e == 0)
			return 0;
		if (e != ETIMEDOUT || shifted_now(k, id) >= d) {
			errno = e;
			return -1;
		}
	}
}

int poll(struct pollfd *fds, nfds_t n, int ms) {
	resolve();
	return real_poll(fds, n, scale_ms(ms));
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask) {
	resolve();
	if (tmo == NULL || !active(2) || tmo->tv_nsec < 0 || tmo->tv_nsec >= NS)
		return real_ppoll(fds, n, tmo, mask);
	struct snap s;
	load(&s, CLOCK_MONOTONIC, NULL);
	struct timespec ts = spec(clamp((__int128)ns(tmo) * NS / ppb(s.mrate)));
	return real_ppoll(fds, n, &ts, mask);
}

int epoll_wait(int fd, struct epoll_event *ev, int n, int ms) {
	resolve();
	return real_epoll_wait(fd, ev, n, scale_ms(ms));
}

int epoll_pwait(int fd, struct epoll_event *ev, int n, int ms, const sigset_t *mask) {
	resolve();
	return real_epoll_pwait(fd, ev, n, scale_ms(ms), mask);
}

/* ---- the disk: what a sync put on it ---- */

/* disk_slot finds the slot of file (dev, ino); with claim, takes a free
 * one if it has none (and marks the table overflowed if none is free). */
static int64_t *disk_slot(int64_t dev, int64_t ino, int claim) {
	int64_t *d = (int64_t *)disk;
	if (d == NULL || ino == 0)
		return NULL;
	for (int64_t i = 0; i < disk_slots; i++) {
		int64_t *s = d + DISK_HEAD + i * DISK_SLOT;
		if (__atomic_load_n(&s[1], __ATOMIC_ACQUIRE) == ino && __atomic_load_n(&s[0], __ATOMIC_RELAXED) == dev)
			return s;
	}
	if (!claim)
		return NULL;
	for (int64_t i = 0; i < disk_slots; i++) {
		int64_t *s = d + DISK_HEAD + i * DISK_SLOT;
		int64_t free_ino = 0;
		if (__atomic_compare_exchange_n(&s[1], &free_ino, ino, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&s[0], dev, __ATOMIC_RELEASE);
			return s;
		}
	}
	__atomic_store_n(&d[1], 1, __ATOMIC_RELEASE);
	return NULL;
}

/* synced runs a sync of fd and, once it succeeded, records the length
 * fd's file had before it (never lowering the length recorded: two syncs
 * may end out of order). */
static int synced(int fd, int (*sync)(int)) {
	struct stat st;
	int regular = disk != NULL && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	int r = sync(fd);
	if (r == 0 && regular) {
		int64_t *s = disk_slot((int64_t)st.st_dev, (int64_t)st.st_ino, 1);
		if (s != NULL) {
			int64_t cur = __atomic_load_n(&s[2], __ATOMIC_ACQUIRE);
			while (cur < (int64_t)st.st_size &&
			       !__atomic_compare_exchange_n(&s[2], &cur, (int64_t)st.st_size, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				;
		}
	}
	return r;
}

int fsync(int fd) {
	resolve();
	return synced(fd, real_fsync);
}

int fdatasync(int fd) {
	resolve();
	return synced(fd, real_fdatasync);
}

/* ftruncate lowers the length recorded to the new one: the bytes cut
 * off are gone whatever the disk held. */
int ftruncate(int fd, off_t length) {
	resolve();
	int r = real_ftruncate(fd, length);
	struct stat st;
	if (r == 0 && disk != NULL && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		int64_t *s = disk_slot((int64_t)st.st_dev, (int64_t)st.st_ino, 0);
		if (s != NULL) {
			int64_t cur = __atomic_load_n(&s[2], __ATOMIC_ACQUIRE);
			while (cur > (int64_t)length &&
			       !__atomic_compare_exchange_n(&s[2], &cur, (int64_t)length, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				;
		}
	}
	return r;
}

/* forget frees the slot of a file that lost its last name. */
static void forget(const struct stat *st) {
	int64_t *s = disk_slot((int64_t)st->st_dev, (int64_t)st->st_ino, 0);
	if (s != NULL) {
		__atomic_store_n(&s[2], 0, __ATOMIC_RELEASE);
		__atomic_store_n(&s[1], 0, __ATOMIC_RELEASE);
	}
}

/* gone says whether path names a regular file with no other name. */
static int gone(const char *path, struct stat *st) {
	return disk != NULL && lstat(path, st) == 0 && S_ISREG(st->st_mode) && st->st_nlink == 1;
}

int unlink(const char *path) {
	resolve();
	struct stat st;
	int was = gone(path, &st);
	int r = real_unlink(path);
	if (r == 0 && was)
		forget(&st);
	return r;
}

int rename(const char *from, const char *to) {
	resolve();
	struct stat st, src;
	int was = gone(to, &st) && lstat(from, &src) == 0 && !(src.st_dev == st.st_dev && src.st_ino == st.st_ino);
	int r = real_rename(from, to);
	if (r == 0 && was)
		forget(&st);
	return r;
}

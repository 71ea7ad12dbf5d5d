//go:build ignore

// (The line above keeps the go tool from treating this package as cgo;
// the file is embedded and compiled by Library, not by go build.)

/* clockshim: an LD_PRELOAD library that shifts the wall clock a process sees.
 *
 * libfaketime deadlocks in Debian's jemalloc-linked redis-server, so this
 * shim never allocates and reads the real clock with a raw syscall. Only
 * CLOCK_REALTIME and CLOCK_REALTIME_COARSE are shifted (plus gettimeofday
 * and time); CLOCK_MONOTONIC and every other clock pass through.
 *
 * The control file named by LOCKSIM_CLOCK_FILE holds four little-endian
 * int64s, written under a seqlock by locksim (clockshim Control):
 *   [0] seq (odd while a write is in progress)
 *   [1] offset_ns
 *   [2] base_ns   (a real CLOCK_REALTIME reading)
 *   [3] rate_ppb  (rate * 1e9; 0 or 1e9 means normal speed)
 * shifted = real + offset + (real - base) * (rate_ppb - 1e9) / 1e9
 * If the variable is unset or the file cannot be mapped, time passes through.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *ctl; /* NULL: pass through */

__attribute__((constructor)) static void clockshim_init(void) {
	const char *path = getenv("LOCKSIM_CLOCK_FILE");
	if (path == NULL || path[0] == '\0')
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) == 0 && st.st_size >= 32) {
		void *p = mmap(NULL, 32, PROT_READ, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED)
			ctl = (volatile int64_t *)p;
	}
	close(fd);
}

static int real_clock(clockid_t id, struct timespec *ts) {
	return (int)syscall(SYS_clock_gettime, id, ts);
}

/* shift returns the shifted time for a real CLOCK_REALTIME reading. */
static int64_t shift(int64_t real) {
	int64_t *c = (int64_t *)ctl;
	if (c == NULL)
		return real;
	int64_t s1, s2, off, base, rate;
	for (long tries = 0;; tries++) {
		if (tries > (1L << 24))
			return real; /* a writer died mid-update: give up, pass through */
		s1 = __atomic_load_n(&c[0], __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		off = __atomic_load_n(&c[1], __ATOMIC_RELAXED);
		base = __atomic_load_n(&c[2], __ATOMIC_RELAXED);
		rate = __atomic_load_n(&c[3], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&c[0], __ATOMIC_RELAXED);
		if (s1 == s2)
			break;
	}
	__int128 t = (__int128)real + off;
	if (rate != 0 && rate != 1000000000LL)
		t += (__int128)(real - base) * (rate - 1000000000LL) / 1000000000LL;
	if (t > INT64_MAX)
		t = INT64_MAX;
	if (t < 0)
		t = 0;
	return (int64_t)t;
}

static int64_t now_shifted(clockid_t id) {
	struct timespec ts;
	if (real_clock(id, &ts) != 0)
		return -1;
	return shift((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)
		return real_clock(id, ts);
	int r = real_clock(id, ts);
	if (r != 0 || ctl == NULL)
		return r;
	int64_t t = shift((int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec);
	ts->tv_sec = t / 1000000000LL;
	ts->tv_nsec = t % 1000000000LL;
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	if (tz != NULL) {
		struct timezone *z = tz;
		z->tz_minuteswest = 0;
		z->tz_dsttime = 0;
	}
	int64_t t = now_shifted(CLOCK_REALTIME);
	if (t < 0)
		return -1;
	tv->tv_sec = t / 1000000000LL;
	tv->tv_usec = (t % 1000000000LL) / 1000;
	return 0;
}

time_t time(time_t *out) {
	int64_t t = now_shifted(CLOCK_REALTIME);
	time_t s = t < 0 ? (time_t)-1 : (time_t)(t / 1000000000LL);
	if (out != NULL)
		*out = s;
	return s;
}

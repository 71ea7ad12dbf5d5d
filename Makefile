# locksim: lock-safety scenarios on real servers.
# make demo   installs what is missing, builds bin/sim, runs redlock-clock-jump
# make test   every test, against real redis-server and PostgreSQL (local
#             processes, and containers of the docker backend)
# make unit   the fast tier: go test -short, every test that needs no server,
#             browser, docker or node (nothing to install but Go and cc)
# make docker readies the docker backend: dockerd and the default images,
#             and the locksim image locksim/sim:bookworm
# make bench  the benchmarks, with their figures

GO      ?= go
SIM     := bin/sim
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all setup deps test-deps docker install build demo test unit bench vet clean reliability fuzz findings

all: build

# deps installs what the harness drives, when missing: the servers
# (redis-server, PostgreSQL, pgbouncer, etcd) and the C compiler the clock
# shim is built with. test-deps adds Chromium, which only the report test
# and the workshop page's test need (they render report.html and drive
# sim workshop's page headless), ZooKeeper (Debian's 3.8, which
# pulls a Java runtime), redis-sentinel and memcached, which env's and
# clients' tests start, the Python example clients' packages (Debian's
# python3-psycopg2, with python3-redis for examples/redis-py, python3-kazoo for
# examples/kazoo, python3-etcd3 for examples/python-etcd3 and
# python3-portalocker for examples/portalocker, python3-tooz,
# python3-pymemcache and python3-etcd3gw for examples/tooz; each checked
# by importing it into /usr/bin/python3), the Node.js example clients' npm
# packages (each of NODE_EX, installed again when its package-lock.json
# is newer than its install) and the Java example client's
# (examples/zookeeper-writelock: javac from default-jdk-headless, Debian's
# libzookeeper-java and libpostgresql-jdbc-java), which it then compiles
# against those jars (again when a source is newer), and the etcd versions
# beside Debian's 3.4.23 that --server-version picks (env.EtcdBuilds, built
# by env/etcdbuild from the Go module proxy into ~/.cache/locksim/etcd when
# missing): `make demo` installs none of them.
DEPS      := redis-server postgresql pgbouncer etcd-server gcc
TEST_DEPS := $(DEPS) chromium zookeeper redis-sentinel python3-redis python3-kazoo python3-etcd3 python3-portalocker python3-tooz python3-pymemcache python3-etcd3gw python3-psycopg2 memcached \
	default-jdk-headless libzookeeper-java libpostgresql-jdbc-java
NODE_EX   := examples/node-redlock examples/node-redlock4 examples/redis-lock examples/redis-semaphore examples/sesamecare-redlock examples/simple-redis-mutex examples/node-etcd3
JAVA_EX   := examples/zookeeper-writelock

deps:
	@$(MAKE) --no-print-directory install PKGS="$(DEPS)"

test-deps:
	@$(MAKE) --no-print-directory install PKGS="$(TEST_DEPS)"
	@command -v npm >/dev/null || $(MAKE) --no-print-directory install PKGS="nodejs npm"
	@for ex in $(NODE_EX); do \
		{ [ -f $$ex/node_modules/.package-lock.json ] && ! [ $$ex/node_modules/.package-lock.json -ot $$ex/package-lock.json ]; } || \
			npm ci --prefix $$ex --no-audit --no-fund || exit 1; \
	done
	@$(JAVA_EX)/build
	@nice $(GO) run ./env/etcdbuild

# docker readies the docker backend (--backend docker): Debian's docker.io
# and a running dockerd (docker/start-engine), then the default images,
# built here from Debian's packages without any registry
# (docker/build-images; 2 to 3 minutes the first time, kept after), the
# locksim image locksim/sim:bookworm (sim and every server; its sim layer
# made again, in seconds, when sim changed), and bin/sim with the C
# compiler its clock shim needs.
docker:
	@$(MAKE) --no-print-directory install PKGS="gcc"
	@docker/start-engine
	@docker/build-images
	@$(MAKE) --no-print-directory build

# install apt-installs the packages of PKGS whose program is missing.
install:
	@missing=""; \
	for p in $(PKGS); do \
		case $$p in \
		postgresql) ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing $$p" ;; \
		pgbouncer) [ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null || missing="$$missing $$p" ;; \
		etcd-server) command -v etcd >/dev/null || missing="$$missing $$p" ;; \
		zookeeper) [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null || missing="$$missing $$p" ;; \
		gcc) command -v cc >/dev/null || missing="$$missing $$p" ;; \
		python3-redis) /usr/bin/python3 -c 'import redis' 2>/dev/null || missing="$$missing $$p" ;; \
		python3-kazoo) /usr/bin/python3 -c 'import kazoo' 2>/dev/null || missing="$$missing $$p" ;; \
		python3-etcd3) /usr/bin/python3 -c 'import etcd3' 2>/dev/null || missing="$$missing $$p" ;; \
		python3-portalocker) /usr/bin/python3 -c 'import portalocker.redis' 2>/dev/null || missing="$$missing $$p" ;; \
		python3-tooz) /usr/bin/python3 -c 'import tooz.coordination' 2>/dev/null || missing="$$missing $$p" ;; \
		python3-pymemcache) /usr/bin/python3 -c 'import pymemcache' 2>/dev/null || missing="$$missing $$p" ;; \
		python3-etcd3gw) /usr/bin/python3 -c 'import etcd3gw' 2>/dev/null || missing="$$missing $$p" ;; \
		python3-psycopg2) /usr/bin/python3 -c 'import psycopg2' 2>/dev/null || missing="$$missing $$p" ;; \
		default-jdk-headless) command -v javac >/dev/null || missing="$$missing $$p" ;; \
		libzookeeper-java) [ -f /usr/share/java/zookeeper-recipes-lock.jar ] || missing="$$missing $$p" ;; \
		libpostgresql-jdbc-java) [ -f /usr/share/java/postgresql.jar ] || missing="$$missing $$p" ;; \
		*) command -v $$p >/dev/null || missing="$$missing $$p" ;; \
		esac; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build:
	$(GO) build -buildvcs=auto -o $(SIM) ./cmd/sim

setup: deps build

demo: setup
	$(SIM) run redlock-clock-jump

# -p 1: the packages drive real servers and time-sensitive stories; on a
# 2-core machine, running them one package at a time keeps each story's
# timing margins intact.
# deploy/kubernetes is a module of its own (k8s.io/api for its manifests'
# test stays out of locksim's go.mod): its test runs apart.
test: test-deps docker
	$(GO) vet ./...
	$(GO) test -p 1 -count=1 -timeout 30m ./...
	cd deploy/kubernetes && $(GO) vet ./... && $(GO) test -count=1 ./...

# unit is the fast tier: the pure tests (checker, history, scenarios and
# the loader, sweep, reports without Chromium, the fuzz corpora...). -short
# skips every test that starts redis-server, PostgreSQL, pgbouncer, etcd,
# Chromium, node or a container, and the TestMains start no shared server.
unit:
	$(GO) test -short -count=1 ./...
	cd deploy/kubernetes && $(GO) test -short -count=1 ./...

# bench prints the figures: generator throughput against the loopback floor
# (runner), checking 100k operations with the harness's peak RSS (checker),
# one sweep of 10 points x 30 trials (sweep; once: it takes ~50 s), the
# same sweep idle and beside a busy loop per core, compared trial by trial
# (sweep; about 4.5 minutes), each
# example client program against the Go worker on a story of its servers
# (median of 5 each; runner, once), and the conformance suite's time on
# each lock, s/suite against its budget of 10 s a lock (clients/locktest;
# once), and a cold run in the locksim image against the local one (deploy;
# skipped without the image: make docker builds it).
bench: deps
	$(GO) test -p 1 -run '^$$' -bench . -skip ClientProgramVsGoWorker -benchtime 5x -count 1 $$($(GO) list ./... | grep -v -e '/sweep$$' -e '/reliability$$' -e '/locktest$$' -e '/hunt$$')
	$(GO) test -run '^$$' -bench ClientProgramVsGoWorker -benchtime 1x -count 1 ./runner
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./sweep
	$(GO) test -run '^$$' -bench . -benchtime 3x -count 1 ./hunt
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./clients/locktest

# findings rebuilds docs/findings.md (.html, .json): every registered lock
# and every client program under examples/ against the stories of its
# servers and a hunt, in JOBS shard processes at once. About 52 minutes
# on 2 cores with JOBS=2 (98 minutes of play; 2026-12-07); JOBS=3 took 37
# but played most rows above load 2, which the page marks. ONLY=name,...
# refreshes those locks alone (a library's new version).
ONLY ?=
JOBS ?= 2
findings: build test-deps
	$(SIM) findings --jobs $(JOBS) $(if $(ONLY),--only $(ONLY))

# reliability prints the reliability figures: 100 runs killed with SIGKILL
# at random moments, then one ordinary start (processes, temp dirs, bytes in
# /dev/shm and SysV segments left: all must be 0); then every scripted
# story RUNS times under a CPU hog on every core (expected verdict, or
# unknown from the timing guard; never the opposite). About 40 minutes.
KILLS ?= 100
RUNS  ?= 20
reliability: deps
	$(GO) test -run '^$$' -bench BenchmarkKillAndReap -benchtime $(KILLS)x -timeout 60m ./reliability
	$(GO) test -run '^$$' -bench BenchmarkCatalogueUnderLoad -benchtime $(RUNS)x -timeout 120m ./reliability

# fuzz runs each fuzz target for FUZZTIME (default 1m; the figures in docs/reliability.md used 10m).
FUZZTIME ?= 1m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./scenarios
	$(GO) test -run '^$$' -fuzz '^FuzzReadCheck$$' -fuzztime $(FUZZTIME) ./checker
	$(GO) test -run '^$$' -fuzz '^FuzzServe$$' -fuzztime $(FUZZTIME) ./worker

clean:
	rm -rf bin runs

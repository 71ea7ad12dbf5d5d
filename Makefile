# locksim: lock-safety scenarios on real servers.
# make demo   installs what is missing, builds bin/sim, runs redlock-clock-jump
# make test   every test, against real redis-server and PostgreSQL
# make bench  the benchmarks, with their figures

GO      ?= go
SIM     := bin/sim
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all setup deps build demo test bench vet clean reliability fuzz

all: build

# deps installs the servers (redis-server, PostgreSQL, pgbouncer, etcd) and the C compiler the harness drives, and
# Chromium (the report test renders report.html headless), when missing.
deps:
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	[ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null || missing="$$missing pgbouncer"; \
	command -v etcd >/dev/null || missing="$$missing etcd-server"; \
	command -v cc >/dev/null || missing="$$missing gcc"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build:
	$(GO) build -buildvcs=auto -o $(SIM) ./cmd/sim

setup: deps build

demo: setup
	$(SIM) list
	$(SIM) run redlock-clock-jump

# -p 1: the packages drive real servers and time-sensitive stories; on a
# 2-core machine, running them one package at a time keeps each story's
# timing margins intact.
test: deps
	$(GO) vet ./...
	$(GO) test -p 1 -count=1 -timeout 30m ./...

# bench prints the figures: generator throughput against the loopback floor
# (runner), checking 100k operations with the harness's peak RSS (checker),
# and one sweep of 10 points x 30 trials (sweep; once: it takes ~50 s).
bench: deps
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 5x -count 1 $$($(GO) list ./... | grep -v -e '/sweep$$' -e '/reliability$$')
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./sweep

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

# fuzz runs each fuzz target for FUZZTIME (default 1m; the figures in the README used 10m).
FUZZTIME ?= 1m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./scenarios
	$(GO) test -run '^$$' -fuzz '^FuzzReadCheck$$' -fuzztime $(FUZZTIME) ./checker
	$(GO) test -run '^$$' -fuzz '^FuzzServe$$' -fuzztime $(FUZZTIME) ./worker

clean:
	rm -rf bin runs

# Giraffe: the two commands a newcomer needs are `make run` and `make test`.
# Both install what they need (Go modules, kazoo in .venv, ZooKeeper jars via
# Maven for the Java client and the differential tests) on first use.

GO      ?= go
BIN     := bin/giraffe
LAB     := bin/giraffe-lab
ROLES   ?= /tmp/giraffe-roles.jsonl
VENV    := .venv
PY      := $(VENV)/bin/python
ZKPEER  := ../shared/peers/zookeeper
RUN_DIR ?= /tmp/giraffe-run
PORT    ?= 2181
# VERSION is stamped into the binary (giraffe version): the checkout's
# tag or commit, "-dirty" when it has uncommitted changes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS := -X github.com/giraffe-coord/giraffe/internal/buildinfo.Version=$(VERSION)
UI_DIR  := internal/console/web
NPM     ?= npm
# The console's front end is built when npm is there; without it the
# binary still builds and serves a page saying to run `make ui`.
HAVE_NPM := $(shell command -v $(NPM) 2>/dev/null)

.PHONY: all build ui setup-browser test-ui ui-screenshots lab run run-standalone test test-go test-ensemble test-sim test-python test-java test-curator vet setup setup-python setup-java setup-curator fuzz sim-long sim-reconfig sim-bench bench-roles bench-vs-zookeeper bench-interleaved bench-etcd bench-open-loop bench-bigtree bench-catchup bench-sessions bench-failover bench-failover-bigtree bench-ensemble bench-primitives bench-zk-tables bench-ns bench-ns-figures bench-hc test-hc-long docker-check clean

all: build

build: $(if $(HAVE_NPM),ui)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/giraffe

## ui: the web console's front end (TypeScript, bundled with uPlot by esbuild; packages from the npm registry) into $(UI_DIR)/dist, which the binary embeds.
ui: $(UI_DIR)/dist/index.html
$(UI_DIR)/node_modules/.installed: $(UI_DIR)/package.json $(UI_DIR)/package-lock.json
	cd $(UI_DIR) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@
$(UI_DIR)/dist/index.html: $(UI_DIR)/node_modules/.installed $(wildcard $(UI_DIR)/src/*) $(UI_DIR)/build.mjs $(UI_DIR)/tsconfig.json
	cd $(UI_DIR) && $(NPM) run --silent build

## setup-browser: Debian's Chromium, for the console's browser tests.
setup-browser:
	scripts/setup-chromium.sh

## test-ui: the console in headless Chromium (playwright-core) against a 9-server ensemble of processes.
test-ui: ui build setup-browser
	cd $(UI_DIR) && GIRAFFE_BIN=$(CURDIR)/$(BIN) node --test e2e/

## ui-screenshots: test-ui, keeping screenshots of the main views in docs/img (the README shows them).
ui-screenshots: ui build setup-browser
	cd $(UI_DIR) && GIRAFFE_BIN=$(CURDIR)/$(BIN) CONSOLE_SCREENSHOTS=$(CURDIR)/docs/img node --test e2e/

## lab: the laboratory binary (simulator, its benchmarks, the lock experiments).
lab:
	$(GO) build -o $(LAB) ./cmd/giraffe-lab

## run: start a local 9-server ensemble (forest 3-3) on 127.0.0.1:$(PORT)..; Ctrl-C stops it.
run: build
	$(BIN) cluster start --nodes 9 --trees 3 --children 3 --dir $(RUN_DIR) --base-port $(PORT) --foreground

## run-standalone: one standalone server on 127.0.0.1:$(PORT) (data in $(RUN_DIR)-standalone).
run-standalone: build
	$(BIN) server --data-dir $(RUN_DIR)-standalone --client-addr 127.0.0.1 --client-port $(PORT) --metrics-port 7000

## test: everything CI runs. The simulator's sweep (test-sim, CPU only) runs beside the tests of processes and clients at the lowest CPU priority: those spend most of their time waiting, and the sweep fills the idle cores without taking the CPU from them.
test: vet build setup
	@simlog=$$(mktemp); nice -n 19 $(MAKE) --no-print-directory test-sim > $$simlog 2>&1 & sim=$$!; \
	$(MAKE) --no-print-directory test-go test-ensemble test-python test-java test-curator test-ui; rc=$$?; \
	wait $$sim; simrc=$$?; echo "== test-sim, run beside the others: exit $$simrc"; cat $$simlog; rm -f $$simlog; \
	test $$rc -eq 0 && test $$simrc -eq 0

vet:
	@test -z "$$(gofmt -l . | grep -v '^.cache/')" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...
	scripts/check-architecture.sh

## test-go: every package's tests; the seed sweep is test-sim's (SIM_SEEDS=0 here keeps go test from running its first seeds twice).
test-go: build
	SIM_SEEDS=0 GIRAFFE_BIN=$(CURDIR)/$(BIN) ZK_LIB=$(CURDIR)/$(ZKPEER)/lib $(GO) test -count=1 -timeout 12m ./...

## test-ensemble: the go-zookeeper tests of the server against a classic-3 and a forest 9-3-3 ensemble of processes.
ZK_CLIENT_TESTS := TestCreateGetSetDelete|TestSequentialEphemeralContainerTTL|TestWatchesFireOnceAndInOrder|TestMultiAtomicity|TestACLsAndAuth|TestSessionExpiryAndReconnect|TestFourLetterWords|TestNamespaceRoots|TestMassExpiryDeletesEveryEphemeral
test-ensemble: build
	for shape in classic-3 forest-9-3-3; do \
		GIRAFFE_BIN=$(CURDIR)/$(BIN) GIRAFFE_ENSEMBLE=$$shape $(GO) test -count=1 -timeout 5m -run '$(ZK_CLIENT_TESTS)' ./server || exit 1; \
	done

## test-sim: 500 simulator seeds over classic-3, 9-3-3, 27-3-3 and 50-5-10, half in swarm mode (where the seed picks the faults, configuration changes included).
test-sim:
	SIM_SEEDS=125 $(GO) test -count=1 -timeout 20m -run TestSeeds ./sim

## docker-check: lint the Dockerfile (BuildKit's parser and rules), check that the binary it ships is static and serves the image's zoo.cfg as a non-root user, and verify packaging/giraffe.service (no Docker engine needed).
docker-check:
	scripts/docker-check.sh

## test-hc-long: the hierarchical lock service's tests at full size (churn: 30 clients over 300 locks in 3 domains for 90 s, 6 holders killed; 100 recalcitrant moves).
test-hc-long: build setup-java
	HC_LONG=1 GIRAFFE_BIN=$(CURDIR)/$(BIN) ZK_LIB=$(CURDIR)/$(ZKPEER)/lib $(GO) test -count=1 -timeout 15m -v -run 'TestHC' ./itest

## sim-long: 100,000 simulator seeds (hours).
sim-long:
	SIM_SEEDS=25000 SIM_SEED_BASE=1000000 $(GO) test -count=1 -timeout 0 -run TestSeeds ./sim

## sim-reconfig: 500 simulator seeds with configuration changes in every run (make test's sweep has them in a quarter of its runs).
sim-reconfig:
	SIM_RECONFIG=1 SIM_SEEDS=125 $(GO) test -count=1 -timeout 40m -run TestSeeds ./sim

## sim-bench: the simulator's calibrated benchmarks over 9 to 1,000 servers (docs/sim/*.csv, *.svg; about 5 minutes).
sim-bench: lab
	$(LAB) simbench --out docs/sim

## bench-roles: real servers' CPU per write by role at 3 to 9 servers, the simulator's cost model fitted to it, and its predictions checked (about 4 minutes).
bench-roles: lab
	OUT=$(ROLES) scripts/bench-roles.sh "classic-3 classic-5 classic-7 classic-9 forest-9-3-3" "300 1000 3000" 8
	$(LAB) costmodel --runs $(ROLES)

## bench-vs-zookeeper: giraffe bench against standalone Giraffe and ZooKeeper 3.9.4 in one run.
bench-vs-zookeeper:
	scripts/bench-vs-zookeeper.sh 10s 3

## bench-interleaved: Giraffe beside ZooKeeper at 1, 3 and 9 servers, interleaved rounds, equal warm-up, server CPU per op, go-zookeeper too (about 15 minutes).
bench-interleaved:
	scripts/bench-interleaved.sh "1 3 9" 3 5s

## bench-etcd: Giraffe classic-3 beside ZooKeeper (3 servers) and etcd (3 members, peers/etcd, a module of its own), interleaved rounds, equal warm-up, 8 x 64 writes, one writer on a follower, server CPU per write (about 5 minutes).
bench-etcd:
	scripts/bench-vs-etcd.sh 3 5s

## bench-open-loop: open-loop write latency curves (Poisson arrivals at 10-95% of ZooKeeper's saturation) beside ZooKeeper, standalone and 3 servers (about 10 minutes).
bench-open-loop:
	scripts/bench-open-loop.sh "1 3" 3 5s

## bench-bigtree: reads and writes on 1,000,000 znodes of 1 KiB while the servers snapshot them, standalone, beside ZooKeeper (about 10 minutes).
bench-bigtree:
	scripts/bench-bigtree.sh 1 1000000 3 20s

## bench-catchup: a follower that lost its disk catches up on 1,000,000 znodes of 1 KiB under reads and writes on the leader, classic-3 beside ZooKeeper (about 6 minutes).
bench-catchup:
	scripts/bench-catchup.sh 1000000 40s

## bench-sessions: many sessions and watches (issue 17): 100,000 idle sessions (capped at what 3 servers hold), 10,000 expiring with 10 ephemerals each under 5,000 writes/s, 10,000 watchers of one znode, at 3 and 9 servers beside ZooKeeper (about an hour).
bench-sessions:
	scripts/bench-sessions.sh "3 9" 100000 10000 10000

## bench-failover: the longest write gap when the leader is killed, 20 kills at 3 and 9 servers (about 15 minutes).
bench-failover:
	scripts/bench-failover.sh "3 9" 20

## bench-failover-bigtree: the same at 3 servers holding 1,000,000 znodes of 1 KiB, 10 kills (about 10 minutes).
bench-failover-bigtree:
	ZNODES=1000000 scripts/bench-failover.sh 3 10

## bench-ensemble: Giraffe ensembles (classic, forest 3-3) beside ZooKeeper ensembles of 3, 5, 7, 9 servers.
bench-ensemble:
	scripts/bench-ensemble-vs-zookeeper.sh 8s 5

## bench-primitives: seed 001's lock experiments on a local ensemble (CSV + SVG in docs/primitives/; about 40 minutes).
bench-primitives: build lab
	$(LAB) primitives --out docs/primitives --requests 100

## bench-zk-tables: the ZooKeeper paper's Tables 2 (creates/s) and 3 (double barriers), Giraffe beside ZooKeeper 3.9.
bench-zk-tables:
	scripts/bench-create-table.sh 8s
	scripts/bench-barriers-table.sh

## bench-ns: the namespace paper's Figures 11-14 setting (3 strong + 3 weak clients, classic-3) for each weak mode.
bench-ns:
	scripts/bench-ns-modes.sh 30s

## bench-ns-figures: the namespace paper's Figures 7-10 (seven strong/weak client mixes, 100% and 50% writes, on off, dynamicfsync, shortcircuit, two Giraffe and two ZooKeeper ensembles; tables and PNG plots; DOCS=1 puts the plots in docs/img; about 50 minutes).
bench-ns-figures:
	scripts/bench-ns-figures.sh 30s

## bench-hc: Hierarchical Chubby's Table 1 (tests 1-4, 5 runs of 50 s, every ensemble under 0.25 CPU and without quotas; docs/hc/; about 45 minutes; the quotas need root).
bench-hc: build lab
	GIRAFFE_BIN=$(BIN) GIRAFFE_LAB=$(LAB) scripts/bench-hc-table.sh 50s 5 0.25 docs/hc/table1

setup: setup-python setup-java setup-curator setup-browser

setup-python: $(VENV)/.installed
$(VENV)/.installed: tests/python/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests/python/requirements.txt
	touch $@

setup-java:
	bash $(ZKPEER)/setup.sh

## setup-curator: Apache Curator 5.9 and its dependencies (tests/curator/pom.xml) into tests/curator/lib, through Maven.
setup-curator:
	bash tests/curator/setup.sh

## test-python: the kazoo tests against a standalone server, a classic-3 and a forest 9-3-3 ensemble, and kazoo's API suite inside a strong and a weak namespace (chroot /1, /2).
test-python: build setup-python
	GIRAFFE_BIN=$(CURDIR)/$(BIN) $(PY) -m pytest -q tests/python
	GIRAFFE_BIN=$(CURDIR)/$(BIN) GIRAFFE_CHROOT=/1 $(PY) -m pytest -q tests/python/test_kazoo_api.py
	GIRAFFE_BIN=$(CURDIR)/$(BIN) GIRAFFE_CHROOT=/2 $(PY) -m pytest -q tests/python/test_kazoo_api.py
	GIRAFFE_BIN=$(CURDIR)/$(BIN) GIRAFFE_ENSEMBLE=classic-3 $(PY) -m pytest -q tests/python
	GIRAFFE_BIN=$(CURDIR)/$(BIN) GIRAFFE_ENSEMBLE=forest-9-3-3 $(PY) -m pytest -q tests/python

test-java: build setup-java
	GIRAFFE_BIN=$(CURDIR)/$(BIN) ZK_LIB=$(CURDIR)/$(ZKPEER)/lib bash tests/java/zkcli_test.sh

## test-curator: Apache Curator's framework and recipes (tests/curator) against a standalone server and a classic-3 ensemble of processes.
test-curator: build setup-curator
	GIRAFFE_BIN=$(CURDIR)/$(BIN) bash tests/curator/run.sh standalone
	GIRAFFE_BIN=$(CURDIR)/$(BIN) bash tests/curator/run.sh classic-3

## fuzz: run every fuzz target for FUZZTIME each (default 30s).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin $(VENV) $(UI_DIR)/node_modules tests/curator/lib tests/curator/build
	find $(UI_DIR)/dist -mindepth 1 ! -name .gitkeep -delete

# Giraffe: the two commands a newcomer needs are `make run` and `make test`.
# Both install what they need (Go modules, kazoo in .venv, ZooKeeper jars via
# Maven for the Java client and the differential tests) on first use.

GO      ?= go
BIN     := bin/giraffe
VENV    := .venv
PY      := $(VENV)/bin/python
ZKPEER  := ../shared/peers/zookeeper
RUN_DIR ?= /tmp/giraffe-run
PORT    ?= 2181

.PHONY: all build run test test-go test-python test-java vet setup setup-python setup-java fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/giraffe

## run: start a local Giraffe server on 127.0.0.1:$(PORT) (data in $(RUN_DIR)); Ctrl-C stops it.
run: build
	$(BIN) server --data-dir $(RUN_DIR) --client-addr 127.0.0.1 --client-port $(PORT) --metrics-port 7000

## test: everything CI runs.
test: vet build setup test-go test-python test-java

vet:
	@test -z "$$(gofmt -l . | grep -v '^.cache/')" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...

test-go: build
	GIRAFFE_BIN=$(CURDIR)/$(BIN) ZK_LIB=$(CURDIR)/$(ZKPEER)/lib $(GO) test -count=1 -timeout 12m ./...

setup: setup-python setup-java

setup-python: $(VENV)/.installed
$(VENV)/.installed: tests/python/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests/python/requirements.txt
	touch $@

setup-java:
	bash $(ZKPEER)/setup.sh

test-python: build setup-python
	GIRAFFE_BIN=$(CURDIR)/$(BIN) $(PY) -m pytest -q tests/python

test-java: build setup-java
	GIRAFFE_BIN=$(CURDIR)/$(BIN) ZK_LIB=$(CURDIR)/$(ZKPEER)/lib bash tests/java/zkcli_test.sh

## fuzz: run every fuzz target for FUZZTIME each (default 30s).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin $(VENV)

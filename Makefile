# gpusuite build. `make demo` and `make test` are the two commands a newcomer needs.
SHELL := /bin/bash
GO ?= go
# go-nvml's cgo bindings use deprecated NVML symbols on purpose; the warnings
# say nothing to a user of gpusuite.
# Setting CGO_CFLAGS replaces cgo's default "-O2 -g": keep -O2, or SQLite
# is compiled unoptimised (a year-long report ran 1.5× slower).
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export GOFLAGS ?= -buildvcs=false

BINS := sbuild srun-wrap prolog epilog hook-gpus gpuacct nfs-sync
# The hooks start at every job start: static binaries (no dynamic loader,
# 0.6 ms), which link no NVML; without an agent they ask hook-gpus, beside
# them, which does. prolog/deps_test.go holds them to it.
HOOKS := prolog epilog
GPUSUITE_VERSION ?= 0.1.0
GPUSUITE_REVISION ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# -s -w drop the symbol table and DWARF (the prolog from 8.9 to 6.1 MB, it is
# started at every job start); --version reads the -X values and Go's build
# info, which stay.
VERSION_PKG := github.com/prometheus/common/version
GO_LDFLAGS ?= -s -w -X $(VERSION_PKG).Version=$(GPUSUITE_VERSION) -X $(VERSION_PKG).Revision=$(GPUSUITE_REVISION)
BIN_DIR := $(CURDIR)/bin
export GPUSUITE_SLURM_DIR ?= /run/gpusuite-slurm
export GPUSUITE_CLUSTER_DIR ?= /run/gpusuite-cluster

.PHONY: all build build-simulated test test-unit test-slurm lint bench demo deps clean package package-test

all: build

build:
	@mkdir -p $(BIN_DIR)
	$(GO) build -ldflags="$(GO_LDFLAGS)" -o $(BIN_DIR)/ $(addprefix ./,$(filter-out $(HOOKS),$(BINS)))
	CGO_ENABLED=0 $(GO) build -ldflags="$(GO_LDFLAGS)" -o $(BIN_DIR)/ $(addprefix ./,$(HOOKS))

# build-simulated builds the binaries that may open gpu.backend =
# "simulated" (-tags simulated) into bin/simulated: the real-Slurm harness
# runs its hooks (the same static hooks, asking bin/simulated/gpuacct), and
# make bench times them. bin/ itself links no simulator.
build-simulated:
	@mkdir -p $(BIN_DIR)/simulated
	$(GO) build -tags simulated -ldflags="$(GO_LDFLAGS)" -o $(BIN_DIR)/simulated/ $(addprefix ./,$(filter-out $(HOOKS),$(BINS)))
	CGO_ENABLED=0 $(GO) build -ldflags="$(GO_LDFLAGS)" -o $(BIN_DIR)/simulated/ $(addprefix ./,$(HOOKS))

# deps installs what the tests need from Debian's packages (root only).
deps:
	./test/deps.sh

# test runs every test: unit tests and the real-Slurm integration tests,
# then the packages that read or write the ledger again on PostgreSQL
# (PG_PKGS; tests about the SQLite file itself have SQLite in their names
# and stay in the first pass). The single-node Slurm, the multi-node
# cluster (test/cluster, docs/testing.md) and a throwaway PostgreSQL are
# started here, shared by all test packages, and torn down however the
# tests end.
export GPUSUITE_PG_DIR ?= /run/gpusuite-pg
export GPUSUITE_SMTP_DIR ?= /run/gpusuite-smtp
PG_PKGS := ./internal/store/... ./internal/ingest/... ./internal/report/... ./internal/web/... \
	./internal/board/... ./internal/requests/... ./internal/notes/... ./internal/notify/... ./internal/sim/simcluster/... ./gpuacct/...
test: build build-simulated deps
	@set -o pipefail; ./test/slurm/harness.sh start && \
	  { ./test/cluster/harness.sh start && ./test/pg/harness.sh start && ./test/smtp/harness.sh start && \
	    set -a && . $(GPUSUITE_PG_DIR)/env && . $(GPUSUITE_SMTP_DIR)/env && set +a && \
	    export GPUSUITE_REQUIRE_SLURM=1 GPUSUITE_SLURM_ENV=$(GPUSUITE_SLURM_DIR)/env GPUSUITE_BIN=$(BIN_DIR) \
	      GPUSUITE_CLUSTER_ENV=$(GPUSUITE_CLUSTER_DIR)/env && \
	    $(GO) test -count=1 -timeout 30m ./... && $(GO) test -count=1 -tags simulated ./gpuacct/ && \
	    GPUSUITE_TEST_ENGINE=postgres $(GO) test -count=1 -timeout 30m -skip SQLite $(PG_PKGS) ; \
	    rc=$$?; ./test/smtp/harness.sh stop; ./test/pg/harness.sh stop; ./test/cluster/harness.sh stop; ./test/slurm/harness.sh stop; \
	    $(MAKE) --no-print-directory package-test; prc=$$?; [ $$rc -ne 0 ] && exit $$rc; exit $$prc; }

# test-unit runs internal/'s tests, which need PostgreSQL too (not Slurm).
test-unit:
	@./test/pg/harness.sh start && \
	  { set -a && . $(GPUSUITE_PG_DIR)/env && set +a && $(GO) test -count=1 ./internal/... ; \
	    rc=$$?; ./test/pg/harness.sh stop; exit $$rc; }

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: build build-simulated
	./bench/run.sh

# The demo runs on simulated GPUs: bin/simulated's gpuacct links them,
# bin/gpuacct (what packages ship) does not. Its nodes run the agent and
# the hooks in process, so it builds gpuacct alone: a newcomer's first
# make demo compiles nothing else (docs/performance.md).
demo:
	@mkdir -p $(BIN_DIR)/simulated
	$(GO) build -tags simulated -ldflags="$(GO_LDFLAGS)" -o $(BIN_DIR)/simulated/ ./gpuacct
	$(BIN_DIR)/simulated/gpuacct demo

# package builds dist/gpusuite_VERSION_amd64.deb and .rpm with nfpm.
NFPM_VERSION := v2.41.0
NFPM = GOFLAGS= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)
package: build
	@mkdir -p dist
	GPUSUITE_VERSION=$(GPUSUITE_VERSION) $(NFPM) pkg -f packaging/nfpm.yaml --packager deb --target dist/
	GPUSUITE_VERSION=$(GPUSUITE_VERSION) $(NFPM) pkg -f packaging/nfpm.yaml --packager rpm --target dist/

# package-test installs the .deb on this machine and checks it (files,
# owners, modes, the service user, systemd-analyze verify, an upgrade to
# dist/next/ that keeps an edited config, a purge that keeps the data),
# inspects the .rpm, and purges again (root; test/package/). make test runs
# it after the other tests, which must not see /etc/gpusuite appear.
package-test: package
	@rm -rf dist/next && mkdir -p dist/next
	@GPUSUITE_VERSION=$(GPUSUITE_VERSION).1 $(NFPM) pkg -f packaging/nfpm.yaml --packager deb --target dist/next/ >/dev/null
	GPUSUITE_DIST=$(CURDIR)/dist GPUSUITE_VERSION=$(GPUSUITE_VERSION) $(GO) test -count=1 -tags packagetest ./test/package/

clean:
	rm -rf $(BIN_DIR) dist

# Pitlane: gRPC and Protocol Buffers for Swift on Linux.
#   make run    install what is missing, build release, run the main job
#   make test   install what is missing, run every test suite
#   make bench  install what is missing, run the benchmarks against their peers
#   make soak   build release, run mixed traffic for MINUTES (5), fail on growth after warm-up
#   make screenshots   the web app's pages in headless Chromium, as PNGs in docs/screenshots
#   make cluster  three orders-server replicas on one PostgreSQL database, behind nginx
#   make docs   the library modules' documentation as a static site in .build/docs/site
#   make format / make lint   apply / check the Swift format (.swift-format)

SHELL := /bin/bash
VENV := $(CURDIR)/.venv
# The build plugin finds protoc through PROTOC_PATH; the peers' Python comes from .venv.
export PROTOC_PATH := $(VENV)/bin/protoc
export PATH := $(VENV)/bin:$(PATH)

MINUTES ?= 5

.PHONY: bootstrap build run test bench soak screenshots cluster docs format lint clean

bootstrap:
	@scripts/bootstrap

build: bootstrap
	swift build -c release
	swift build --package-path Services -c release

# swiftkart-server on data/swiftkart.sqlite, then the swiftkart client against it.
run: build
	@scripts/run-swiftkart

# PostgreSQL (data/cluster/postgres), orders-server on 8101-8103 sharing it, nginx on 8100 (gRPC)
# and 8180 (HTTP/1.1) in front; a demonstration, then until Ctrl-C from a terminal
# (scripts/cluster says more). Builds the release server and its two CLIs only.
cluster: bootstrap
	swift build --package-path Services -c release --product orders-server
	swift build --package-path Services -c release --product orders
	swift build --package-path Services -c release --product chat
	@scripts/cluster

# The Swift tests of both packages (the libraries at the root, the services in Services/) start
# the Python peers (Tests/Peers) themselves, one test target per process under a time limit
# (scripts/test-swift says why); then the documentation site is built (it fails on a public
# declaration without a doc comment or on any DocC warning); then Examples/Greeter proves a gRPC-only
# program links no web or database library, and the Containerfile's build command runs here
# exactly as written.
test: bootstrap
	@scripts/test-swift
	@scripts/docs
	@scripts/check-grpc-only
	@scripts/check-containerfile

# DocC from the compiler's symbol graphs, one site for every library module; fails when a
# public declaration has no doc comment (scripts/docs, scripts/doc-coverage).
docs: bootstrap
	@scripts/docs

bench: bootstrap
	@scripts/bench

# Mixed traffic against every server for MINUTES; fails if a server's memory, descriptors or
# threads grow after the warm-up (scripts/soak; PITLANE_BIN picks other executables).
soak: build
	@scripts/soak $(MINUTES)

# The browser test (Tests/Peers/browser_peer.py) against the debug servers, keeping a PNG of
# each page for the README.
screenshots: bootstrap
	swift build --package-path Services
	.venv/bin/python Tests/Peers/browser_peer.py --bin Services/.build/debug --screenshots docs/screenshots

# One format for every Swift file (.swift-format), applied and checked; generated *.pb.swift
# files are left as the generator writes them.
SWIFT_SOURCES = find Sources Tests Services Benchmarks Plugins Examples Fuzz Package.swift -name .build -prune -o -type f -name '*.swift' ! -name '*.pb.swift' -print0

format:
	$(SWIFT_SOURCES) | xargs -0 swift-format format --in-place --parallel

lint:
	$(SWIFT_SOURCES) | xargs -0 swift-format lint --strict --parallel

clean:
	rm -rf .build Services/.build Examples/Greeter/.build

# Pitlane: gRPC and Protocol Buffers for Swift on Linux.
#   make run    install what is missing, build release, run the main job
#   make test   install what is missing, run every test suite
#   make bench  install what is missing, run the benchmarks against their peers
#   make soak   build release, run mixed traffic for MINUTES (5), fail on growth after warm-up
#   make screenshots   the web app's pages in headless Chromium, as PNGs in docs/screenshots

SHELL := /bin/bash
VENV := $(CURDIR)/.venv
# The build plugin finds protoc through PROTOC_PATH; the peers' Python comes from .venv.
export PROTOC_PATH := $(VENV)/bin/protoc
export PATH := $(VENV)/bin:$(PATH)

MINUTES ?= 5

.PHONY: bootstrap build run test bench soak screenshots clean

bootstrap:
	@scripts/bootstrap

build: bootstrap
	swift build -c release

# swiftkart-server on data/swiftkart.sqlite, then the swiftkart client against it.
run: build
	@scripts/run-swiftkart

# The Swift tests start the Python peers (Tests/Peers) themselves, one test target per process
# under a time limit (scripts/test-swift says why); then the Containerfile's build command
# runs here exactly as written.
test: bootstrap
	@scripts/test-swift
	@scripts/check-containerfile

bench: bootstrap
	@scripts/bench

# Mixed traffic against every server for MINUTES; fails if a server's memory, descriptors or
# threads grow after the warm-up (scripts/soak; PITLANE_BIN picks other executables).
soak: build
	@scripts/soak $(MINUTES)

# The browser test (Tests/Peers/browser_peer.py) against the debug servers, keeping a PNG of
# each page for the README.
screenshots: bootstrap
	swift build
	.venv/bin/python Tests/Peers/browser_peer.py --bin .build/debug --screenshots docs/screenshots

clean:
	rm -rf .build

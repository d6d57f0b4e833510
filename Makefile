# Pitlane: gRPC and Protocol Buffers for Swift on Linux.
#   make run    install what is missing, build release, run the main job
#   make test   install what is missing, run every test suite
#   make bench  install what is missing, run the benchmarks against their peers

SHELL := /bin/bash
VENV := $(CURDIR)/.venv
# The build plugin finds protoc through PROTOC_PATH; the peers' Python comes from .venv.
export PROTOC_PATH := $(VENV)/bin/protoc
export PATH := $(VENV)/bin:$(PATH)

.PHONY: bootstrap build run test bench clean

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

clean:
	rm -rf .build

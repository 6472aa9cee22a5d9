# Thin wrapper over CMake so the common tasks are one word.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build test clean demo demo-stop demo-status bench

all: build

deps:
	@bash scripts/install-deps

$(BUILD)/build.ninja:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: deps $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS)

# Tests that skipped themselves (or a part) are named with their reasons.
test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 1800; rc=$$?; \
	  bash $(CURDIR)/scripts/test-skips .; exit $$rc

# The main job: target on 127.0.0.1:3260 with data in var/demo, two backup
# generations written through iSCSI, what was stored; the target keeps running.
# DEMO_SIZE=4G etc.: see scripts/demo.
demo:
	@BUILD=$(BUILD) JOBS=$(JOBS) bash scripts/demo run

demo-stop:
	@BUILD=$(BUILD) bash scripts/demo stop

demo-status:
	@BUILD=$(BUILD) bash scripts/demo status || true

clean:
	rm -rf $(BUILD)

# Benchmarks (bench/run-bench; sizes via BENCH_SIZE etc.): results in
# bench/results/, charts in docs/benchmarks/. Root for the iSCSI stage.
bench:
	@BUILD=$(BUILD) JOBS=$(JOBS) bash bench/run-bench

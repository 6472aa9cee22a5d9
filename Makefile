# Thin wrapper over CMake so the common tasks are one word.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build test clean

all: build

deps:
	@bash scripts/install-deps

$(BUILD)/build.ninja:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: deps $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 1800

clean:
	rm -rf $(BUILD)

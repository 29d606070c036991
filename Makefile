# wgt: top-level commands. `make run` and `make test` install what is missing, build, then act.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps build run test install clean bench fuzz

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@$(BUILD)/wgt info

test: build
	@bash tests/run.sh $(BUILD)

bench: build
	@$(BUILD)/wgt bench --device

install: build
	@cmake --install $(BUILD)

fuzz: deps
	@bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD)

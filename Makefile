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

MODEL ?= models/bible-llama.gguf
PROMPT ?= In the beginning, God created the heavens and the earth.

run: build
	@$(BUILD)/wgt info
	@echo
	@$(BUILD)/wgt generate -m $(MODEL) -p "$(PROMPT)" -n 64 --temp 0.7 --top-p 0.9 --seed 7

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

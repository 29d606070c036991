# wgt: top-level commands. `make run` and `make test` install what is missing, build, then act.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps build run test test-long house install clean bench fuzz asan asan-build

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

# the hostile-input suite (tests/reliability/test_hostile.sh) runs the CLI built with AddressSanitizer
# and UndefinedBehaviorSanitizer in $(BUILD)-asan
test: build asan-build web
	@WGT_ASAN_BIN=$(abspath $(BUILD))-asan/wgt bash tests/run.sh $(BUILD)

# everything make test runs plus the longer sweeps of tests/long.txt (make test stays under 40
# minutes on a 2-core machine)
test-long: build asan-build web
	@WGT_TEST_LONG=1 WGT_ASAN_BIN=$(abspath $(BUILD))-asan/wgt bash tests/run.sh $(BUILD)

# the repository's own rules, in about two minutes and without a GPU run: file names by op family,
# WGSL only in src/kernels, the layers' includes, the library's exports, one JSON parser, README's
# op tables, the op table against the public header. Run before landing: stop 27's CI failed on two
# of them, and this session's first JSON-mode commit on the last.
HOUSE_TESTS = test_family_names test_wgsl_files test_layers test_exports test_json_one_parser test_readme_ops test_optable
house: build
	@bash tests/run.sh $(BUILD) "$(HOUSE_TESTS)"

asan-build: deps
	@cmake -S . -B $(BUILD)-asan $(CMAKE_FLAGS) -DWGT_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS) --target wgt

# only the sanitized hostile-input suite
asan: build asan-build
	@WGT_ASAN_BIN=$(abspath $(BUILD))-asan/wgt bash tests/run.sh $(BUILD) hostile

bench: build
	@$(BUILD)/wgt bench --device

install: build
	@cmake --install $(BUILD)

fuzz: deps
	@bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD)

# The browser build (build/web) and `make serve` to open it: web/web.mk, README "Browser".
include web/web.mk
web: deps

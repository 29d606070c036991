# The browser build: the library's C sources, clang's wasm32-wasi target and Debian's wasi-libc ->
# $(WEB_OUT)/wgt.wasm, with the pages and their JavaScript. Included by the top-level Makefile
# (`make web`); the sources of cJSON, utf8proc and PCRE2 come from scripts/deps_web.sh.
WEB_OUT ?= $(BUILD)/web
WEB_OBJ := $(BUILD)/web-obj
WEB_SRC_DEPS := .web-deps/src
WEB_CJSON := $(WEB_SRC_DEPS)/cJSON-1.7.15
WEB_UTF8PROC := $(WEB_SRC_DEPS)/utf8proc-2.8.0
WEB_PCRE2 := $(WEB_SRC_DEPS)/pcre2-10.42
WEB_CC := clang --target=wasm32-wasi
# -mexception-handling with -wasm-enable-sjlj: setjmp/longjmp (the chat templates' Jinja) through
# WebAssembly exceptions (web/compat/sjlj.c); -nostdlibinc keeps the host's glibc headers out.
WEB_CFLAGS := -O2 -g0 -std=c11 -D_GNU_SOURCE -D_WASI_EMULATED_MMAN -D_WASI_EMULATED_SIGNAL \
  -D_WASI_EMULATED_PROCESS_CLOCKS -mexception-handling -mllvm -wasm-enable-sjlj -ftls-model=local-exec \
  -nostdlibinc -isystem web/compat -isystem /usr/include/wasm32-wasi \
  -isystem $(WEB_OBJ)/pcre2-include -isystem $(WEB_UTF8PROC) -isystem $(WEB_OBJ)/cjson-include \
  -Wall -Wno-unused-parameter -Wno-missing-field-initializers -Wno-unused-function
WEB_DEFS := -DWGT_VERSION_STRING='"0.1.0"' -DPCRE2_STATIC -DPCRE2_CODE_UNIT_WIDTH=8

# The library as natively (every .c under src/), with src/gpu/web/loader.c in place of the dlopen
# loader and without src/io/safe_write.c (crash-safe output files: signals, mkstemp, fchmod; a page
# writes no files); the op harness of the test kit; the page's entry points. The library and its
# three C dependencies go into archives, so the module holds only what the entry points reach.
WEB_LIB_SRCS := $(filter-out src/gpu/loader.c src/gpu/elf.c src/gpu/napi_stub/% src/io/safe_write.c,\
  $(shell find src -name '*.c' | sort))
WEB_APP_SRCS := $(wildcard testkit/harness/*.c) web/main.c web/compat/sjlj.c
WEB_PCRE2_SRCS := $(addprefix $(WEB_PCRE2)/src/pcre2_,auto_possess.c chartables.c compile.c config.c context.c \
  convert.c dfa_match.c error.c extuni.c find_bracket.c jit_compile.c maketables.c match.c match_data.c \
  newline.c ord2utf.c pattern_info.c script_run.c serialize.c string_utils.c study.c substitute.c \
  substring.c tables.c ucd.c valid_utf.c xclass.c)
WEB_DEP_SRCS := $(WEB_CJSON)/cJSON.c $(WEB_UTF8PROC)/utf8proc.c $(WEB_PCRE2_SRCS)
WEB_LIB_OBJS := $(patsubst %.c,$(WEB_OBJ)/%.o,$(WEB_LIB_SRCS) $(WEB_DEP_SRCS)) $(WEB_OBJ)/kernels_embedded.o
WEB_APP_OBJS := $(patsubst %.c,$(WEB_OBJ)/%.o,$(WEB_APP_SRCS)) $(WEB_OBJ)/sjlj_throw.o
WEB_PAGES := $(addprefix $(WEB_OUT)/,index.html app.js harness.html harness.js wgt.js wgpu.js wasi.js style.css)

.PHONY: web serve
web: $(WEB_OUT)/wgt.wasm $(WEB_PAGES) $(WEB_OUT)/models/bible-llama.gguf

$(WEB_OBJ)/pcre2-include/pcre2.h: | $(WEB_PCRE2)/src/pcre2.h.generic
	@mkdir -p $(dir $@) && cp $(WEB_PCRE2)/src/pcre2.h.generic $@ && cp $(WEB_PCRE2)/src/config.h.generic $(dir $@)config.h
$(WEB_OBJ)/cjson-include/cjson/cJSON.h: | $(WEB_CJSON)/cJSON.h
	@mkdir -p $(dir $@) && cp $(WEB_CJSON)/cJSON.h $@
$(WEB_PCRE2)/src/pcre2_chartables.c: | $(WEB_PCRE2)/src/pcre2_chartables.c.dist
	@cp $(WEB_PCRE2)/src/pcre2_chartables.c.dist $@
$(WEB_PCRE2)/src/pcre2.h.generic $(WEB_CJSON)/cJSON.h $(WEB_PCRE2)/src/pcre2_chartables.c.dist:
	@bash scripts/deps_web.sh

# The op names and recorder ids written from the op table's rows (cmake/gen_optable.cmake, as the
# native build does), included as "generated/op_names.h" and "generated/op_grad_ids.h": made before
# any object (each file is rewritten only when its text changes; the objects' .d files name them).
WEB_GENERATED := $(WEB_OBJ)/generated/.stamp
$(WEB_GENERATED): $(wildcard src/ops/*.def) cmake/gen_optable.cmake
	@mkdir -p $(dir $@) && cmake -DOPS_DIR=$(CURDIR)/src/ops -DOUT_DIR=$(CURDIR)/$(dir $@) \
	  -P cmake/gen_optable.cmake && touch $@

WEB_HEADERS := $(WEB_OBJ)/pcre2-include/pcre2.h $(WEB_OBJ)/cjson-include/cjson/cJSON.h

$(WEB_OBJ)/$(WEB_PCRE2)/%.o: $(WEB_PCRE2)/%.c $(WEB_HEADERS)
	@mkdir -p $(dir $@)
	@$(WEB_CC) $(WEB_CFLAGS) -w $(WEB_DEFS) -DHAVE_CONFIG_H -DSUPPORT_UNICODE -I$(WEB_OBJ)/pcre2-include -c $< -o $@
$(WEB_OBJ)/$(WEB_SRC_DEPS)/%.o: $(WEB_SRC_DEPS)/%.c $(WEB_HEADERS)
	@mkdir -p $(dir $@)
	@$(WEB_CC) $(WEB_CFLAGS) -w $(WEB_DEFS) -DUTF8PROC_STATIC -c $< -o $@
$(WEB_OBJ)/%.o: %.c $(WEB_HEADERS) | $(WEB_GENERATED)
	@mkdir -p $(dir $@)
	@echo "wasm  $<"
	@$(WEB_CC) $(WEB_CFLAGS) $(WEB_DEFS) -Iinclude -Isrc -Itestkit -I$(WEB_OBJ) -MMD -MP -c $< -o $@
$(WEB_OBJ)/sjlj_throw.o: web/compat/sjlj_throw.S
	@mkdir -p $(dir $@) && $(WEB_CC) -mexception-handling -c $< -o $@
$(WEB_OBJ)/kernels_embedded.c: $(wildcard src/kernels/*.wgsl) cmake/embed_kernels.cmake
	@mkdir -p $(dir $@) && cmake -DKERNEL_DIR=$(CURDIR)/src/kernels -DOUT=$(CURDIR)/$@ -P cmake/embed_kernels.cmake
$(WEB_OBJ)/kernels_embedded.o: $(WEB_OBJ)/kernels_embedded.c
	@$(WEB_CC) $(WEB_CFLAGS) -c $< -o $@

-include $(shell find $(WEB_OBJ) -name '*.d' 2>/dev/null)

# A WASI reactor (no main: the page calls the exports). The wgpu and wgt imports come from
# web/wgpu.js and web/wgt.js; wasi_snapshot_preview1 from web/wasi.js.
$(WEB_OBJ)/libwgt.a: $(WEB_LIB_OBJS)
	@rm -f $@ && llvm-ar-14 rcs $@ $^
$(WEB_OUT)/wgt.wasm: $(WEB_APP_OBJS) $(WEB_OBJ)/libwgt.a
	@mkdir -p $(dir $@)
	@echo "link  $@"
	@$(WEB_CC) -mexec-model=reactor -O2 -Wl,--strip-all -Wl,--export-table -Wl,--growable-table \
	  -Wl,--export=__stack_pointer -Wl,-u,wgt_web_layout -Wl,-z,stack-size=1048576 -Wl,--initial-memory=33554432 \
	  -Wl,--max-memory=4294967296 -o $@ $^ -lwasi-emulated-mman -lwasi-emulated-signal \
	  -lwasi-emulated-process-clocks
	@ls -l $@ | awk '{printf "wasm  %s: %d bytes\n", $$NF, $$5}'

$(WEB_OUT)/%: web/%
	@mkdir -p $(dir $@) && cp $< $@
$(WEB_OUT)/models/bible-llama.gguf: models/bible-llama.gguf
	@mkdir -p $(dir $@) && cp $< $@

# The page on http://127.0.0.1:$(PORT)/ through Python's http.server (it serves .wasm as
# application/wasm, which WebAssembly.instantiateStreaming needs).
PORT ?= 8000
serve: web
	@echo "serving $(WEB_OUT) on http://127.0.0.1:$(PORT)/ (harness: /harness.html); Ctrl-C stops"
	@python3 -m http.server $(PORT) --bind 127.0.0.1 --directory $(WEB_OUT)

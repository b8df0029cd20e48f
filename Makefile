# etwdecode - the two commands of the README, and a few more.
#   make run [TRACE=path.etl]   install what is missing, build, decode a trace to the terminal
#   make test                   install what is missing, build, run every test (release,
#                               ASan+UBSan, and a short fuzzing run)
#   make fuzz-long              a long fuzzing campaign (FUZZ_LONG_SECONDS per target,
#                               FUZZ_LONG_TARGETS="fuzz_etwdump ..." to pick targets), its
#                               corpus kept in build-fuzz/corpus-long/ between runs
TRACE ?= tests/data/primitive-types.etl
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 20
FUZZ_LONG_SECONDS ?= 600
FUZZ_LONG_TARGETS ?=

.PHONY: all deps build run test test-release test-sanitize fuzz fuzz-build fuzz-long bench clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build -j$(JOBS)

run: build
	./build/etwdump $(TRACE)

test: deps test-release test-sanitize fuzz

test-release:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build -j$(JOBS)
	cd build && ctest --output-on-failure -j$(JOBS)

test-sanitize:
	cmake -S . -B build-sanitize -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DETW_SANITIZE=ON -DETW_BENCH=OFF >/dev/null
	cmake --build build-sanitize -j$(JOBS)
	cd build-sanitize && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j$(JOBS)

fuzz-build:
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DETW_FUZZ=ON -DETW_TESTS=OFF >/dev/null
	cmake --build build-fuzz -j$(JOBS)

fuzz: fuzz-build
	bash scripts/run-fuzz.sh build-fuzz $(FUZZ_SECONDS)

fuzz-long: deps fuzz-build
	FUZZ_CORPUS_DIR=$(CURDIR)/build-fuzz/corpus-long bash scripts/run-fuzz.sh build-fuzz $(FUZZ_LONG_SECONDS) $(FUZZ_LONG_TARGETS)

bench: build
	@for b in build/bench_*; do echo "== $$b"; $$b; done

clean:
	rm -rf build build-sanitize build-fuzz

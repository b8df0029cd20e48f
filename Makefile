# etwdecode - the two commands of the README, and a few more.
#   make run [TRACE=path.etl]   install what is missing, build, decode a trace to the terminal
#   make test                   install what is missing, build, run every test (release,
#                               ASan+UBSan, and a short fuzzing run)
TRACE ?= tests/data/primitive-types.etl
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 20

.PHONY: all deps build run test test-release test-sanitize fuzz bench clean

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

fuzz:
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DETW_FUZZ=ON -DETW_TESTS=OFF >/dev/null
	cmake --build build-fuzz -j$(JOBS)
	bash scripts/run-fuzz.sh build-fuzz $(FUZZ_SECONDS)

bench: build
	@for b in build/bench_*; do echo "== $$b"; $$b; done

clean:
	rm -rf build build-sanitize build-fuzz

# gpusched - top-level entry points. `make run` and `make test` work on a fresh machine:
# they install missing Debian packages, build and run.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
# CI=true: a skipped test fails the run (GS_CI in CMakeLists.txt, skip() in the test helpers).
# The mode is part of each build folder's configuration; a change of $CI configures again.
GS_CI := $(if $(filter true,$(CI)),ON,OFF)

.PHONY: deps build build-asan run test test-fast e2e bench bench-e2e format clean fuzz

deps:
	@./scripts/install-deps.sh

# DIR/.gs-ci-ON or -OFF: the mode DIR was last configured in
%/.gs-ci-$(GS_CI):
	@mkdir -p $* && rm -f $*/.gs-ci-* && touch $@

$(BUILD)/build.ninja: CMakeLists.txt $(BUILD)/.gs-ci-$(GS_CI) | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DGS_CI=$(GS_CI)
	@touch $@

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/build.ninja: CMakeLists.txt $(ASAN_BUILD)/.gs-ci-$(GS_CI) | deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGS_SANITIZE=ON -DGS_CI=$(GS_CI)
	@touch $@

build-asan: deps $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

run: build
	./$(BUILD)/gpusched sim

# the whole suite, then again under ASan+UBSan
test: build build-asan
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		GS_TEST_SANITIZED=1 ctest --output-on-failure -j $(JOBS)

# end-to-end tests against a real kube-apiserver and etcd (built from pinned Go modules on
# first use, cached in ~/.cache/gpusched-e2e)
e2e: build
	cd $(BUILD) && ctest --output-on-failure -L e2e

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	./scripts/bench.sh $(BUILD)

# scheduling throughput on the real control plane: gpusched and kube-scheduler, same QPS
bench-e2e: build
	./bench/e2e_throughput.sh $(BUILD)/gpusched $(BUILD)/e2e_driver 1000 5000
	QPS=1000 BURST=2000 ./bench/e2e_throughput.sh $(BUILD)/gpusched $(BUILD)/e2e_driver 1000 5000

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

# libFuzzer builds of every fuzz target (clang), each run for FUZZ_SECONDS on its corpus
FUZZ_SECONDS ?= 30
fuzz: deps
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DGS_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS)
	for t in build-fuzz/fuzzer_*; do n=$${t#build-fuzz/fuzzer_}; mkdir -p build-fuzz/corpus-$$n; \
		$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 build-fuzz/corpus-$$n fuzz/corpus/$$n || exit 1; done

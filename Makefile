# gpusched - top-level entry points. `make run` and `make test` work on a fresh machine:
# they install missing Debian packages, build and run.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
JOBS ?= $(shell nproc)
# CI=true: a skipped test fails the run (GS_CI in CMakeLists.txt, skip() in the test helpers).
# The mode is part of each build folder's configuration; a change of $CI configures again.
GS_CI := $(if $(filter true,$(CI)),ON,OFF)
# seconds each fuzz target runs in `make test` (`make fuzz`: FUZZ_SECONDS), and the fixed
# libFuzzer seed it runs with there (`make fuzz` draws one per run)
FUZZ_TEST_SECONDS ?= 15
FUZZ_TEST_SEED ?= 1
# `make test` times each stage (scripts/stage.sh) and prints the table at the end; the log is
# set for `test` and, through it, for its prerequisites. $(call stage,NAME) prefixes a command.
STAGE_LOG ?=
stage = $(if $(STAGE_LOG),scripts/stage.sh $(STAGE_LOG) "$(1)",)

.PHONY: deps build build-asan build-tsan build-fuzz control-plane control-plane-start run test test-fast test-tsan \
	test-fuzz e2e bench bench-e2e format clean fuzz image

deps:
	@$(if $(STAGE_LOG),scripts/stage.sh $(STAGE_LOG) --reset)
	@$(call stage,deps) ./scripts/install-deps.sh

# DIR/.gs-ci-ON or -OFF: the mode DIR was last configured in
%/.gs-ci-$(GS_CI):
	@mkdir -p $* && rm -f $*/.gs-ci-* && touch $@

$(BUILD)/build.ninja: CMakeLists.txt $(BUILD)/.gs-ci-$(GS_CI) | deps
	$(call stage,configure release) cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DGS_CI=$(GS_CI)
	@touch $@

build: deps $(BUILD)/build.ninja
	$(call stage,build release) cmake --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/build.ninja: CMakeLists.txt $(ASAN_BUILD)/.gs-ci-$(GS_CI) | deps
	$(call stage,configure asan) cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
		-DGS_SANITIZE=ON -DGS_CI=$(GS_CI)
	@touch $@

build-asan: deps $(ASAN_BUILD)/build.ninja
	$(call stage,build asan) cmake --build $(ASAN_BUILD) -j $(JOBS)

# ThreadSanitizer: only what the threaded tests (ctest label tsan) run
$(TSAN_BUILD)/build.ninja: CMakeLists.txt $(TSAN_BUILD)/.gs-ci-$(GS_CI) | deps
	$(call stage,configure tsan) cmake -S . -B $(TSAN_BUILD) -G Ninja \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGS_TSAN=ON -DGS_CI=$(GS_CI)
	@touch $@

build-tsan: deps $(TSAN_BUILD)/build.ninja
	$(call stage,build tsan) cmake --build $(TSAN_BUILD) -j $(JOBS) --target tsan-tests

# libFuzzer binaries of every fuzz target (clang)
$(FUZZ_BUILD)/build.ninja: CMakeLists.txt $(FUZZ_BUILD)/.gs-ci-$(GS_CI) | deps
	$(call stage,configure fuzz) cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_C_COMPILER=clang \
		-DCMAKE_BUILD_TYPE=Debug -DGS_FUZZ=ON -DGS_CI=$(GS_CI)
	@touch $@

build-fuzz: deps $(FUZZ_BUILD)/build.ninja
	$(call stage,build fuzz) cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers

# the upstream control plane the e2e tests run against, built from pinned Go modules on first
# use (cached in ~/.cache/gpusched-e2e): its own step, so a cold build is not timed as a test.
# `make test` starts it in the background beside the C builds (control-plane-start); the
# control-plane step then waits for it (the script's lock) and finds the cache complete.
control-plane:
	@$(call stage,control plane ready) tests/e2e/build-control-plane.sh >/dev/null

control-plane-start: deps
	@$(if $(STAGE_LOG),scripts/stage.sh $(STAGE_LOG) --background "control plane" \
		tests/e2e/build-control-plane.sh,tests/e2e/build-control-plane.sh >/dev/null)

run: build
	./$(BUILD)/gpusched sim

# the container image gpusched.local/gpusched:VERSION (project(VERSION) in CMakeLists.txt) as an
# OCI archive for `ctr -n k8s.io images import`: the Release binary, the libraries ldd lists,
# the CA bundle and a non-root user, nothing else (scripts/image.py). Reproducible: dated by
# SOURCE_DATE_EPOCH, else by the last commit. Prints the archive's path last.
GS_VERSION := $(shell sed -En 's/^project.gpusched VERSION ([0-9.]+) .*/\1/p' CMakeLists.txt)
image: build
	@SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)} \
	python3 scripts/image.py --binary $(BUILD)/gpusched --path /usr/local/bin/gpusched \
		--ref gpusched.local/gpusched:$(GS_VERSION) \
		--ca-certs /etc/ssl/certs/ca-certificates.crt --out $(BUILD)/image/gpusched-image.tar

# the whole suite, again under ASan+UBSan (but the real-node install tests, label realnode),
# the threaded tests under TSan, and every fuzz target for FUZZ_TEST_SECONDS. The e2e tests
# run side by side (ctest -j; the real-node ones one at a time, RESOURCE_LOCK in
# CMakeLists.txt); the upstream control plane builds beside the C builds; the stage timings
# ($(BUILD)/stage-times) are printed at the end.
test: STAGE_LOG := $(abspath $(BUILD))/stage-times
test: deps control-plane-start build build-asan build-tsan build-fuzz control-plane
	@$(call stage,ctest release) sh -c 'cd $(BUILD) && ctest --output-on-failure -j $(JOBS)'
	@$(call stage,ctest asan) sh -c 'cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 \
		UBSAN_OPTIONS=print_stacktrace=1 GS_TEST_SANITIZED=1 \
		ctest --output-on-failure -j $(JOBS) -LE realnode'
	@$(call stage,tsan) ./scripts/tsan.sh $(TSAN_BUILD) $(JOBS)
	@$(call stage,fuzz) env FUZZ_SEED=$(FUZZ_TEST_SEED) \
		./scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_TEST_SECONDS) $(JOBS)
	@scripts/stage.sh $(STAGE_LOG) --report

# the threaded tests under ThreadSanitizer; every report (from any process) fails the run
test-tsan: build-tsan
	./scripts/tsan.sh $(TSAN_BUILD) $(JOBS)

test-fuzz: build-fuzz
	FUZZ_SEED=$(FUZZ_TEST_SEED) ./scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_TEST_SECONDS) $(JOBS)

# end-to-end tests against a real kube-apiserver and etcd, side by side as in `make test`
e2e: build control-plane
	cd $(BUILD) && ctest --output-on-failure -L e2e -j $(JOBS)

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	./scripts/bench.sh $(BUILD)

# scheduling throughput on the real control plane: gpusched and kube-scheduler, same QPS;
# then pods with DRA claims on 500 nodes' ResourceSlices (NVIDIA's driver's shape); then 5,000
# production-shaped nodes and 10,000 pods, with each scheduler's peak RSS
bench-e2e: build
	./bench/e2e_throughput.sh $(BUILD)/gpusched $(BUILD)/e2e_driver 1000 5000
	QPS=1000 BURST=2000 ./bench/e2e_throughput.sh $(BUILD)/gpusched $(BUILD)/e2e_driver 1000 5000
	QPS=1000 BURST=2000 ./bench/e2e_dra.sh $(BUILD)/gpusched $(BUILD)/e2e_driver 500 1000
	QPS=1000 BURST=2000 ./bench/e2e_scale.sh $(BUILD)/gpusched $(BUILD)/e2e_driver 5000 10000

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)

# every fuzz target for FUZZ_SECONDS on its corpus
FUZZ_SECONDS ?= 30
fuzz: build-fuzz
	./scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

GO    ?= go
BIN   := bin/pplaunch
# Packages to test; override to test one: make test PKGS=./schedules/...
PKGS  ?= ./...

.PHONY: build train test test-loaded faults lint bench gpu-bin gpu-dry sgemm-asm clean

build:
	$(GO) build -o $(BIN) ./cmd/pplaunch

# The main job: 4 ranks train the default GPT on the embedded corpus.
train: build
	./$(BIN) --nproc 4 train

# gofmt check, vet, and every test with the race detector; then the compute
# tests again on the Go SIMD kernels, the path of a machine without OpenBLAS
# (the first pass uses OpenBLAS when the machine has it; the tensor tests run
# gonum in both), and the allocation counts of the transport without the
# race detector, which changes them.
test: lint
	$(GO) test -race -timeout 40m $(PKGS)
	PPLAUNCH_BLAS=go $(GO) test -race -timeout 20m ./models/...
	$(GO) test -timeout 5m -run Allocate ./collective/

# The suite as a loaded CI machine runs it: RUNS times in a row, uncached,
# while two busy loops keep both cores occupied. Every run must pass: a test
# that fails here reads a clock or sleeps to synchronise.
RUNS ?= 3
test-loaded:
	@busy=""; for i in 1 2; do sh -c 'while :; do :; done' & busy="$$busy $$!"; done; \
	  trap "kill $$busy" EXIT INT TERM; \
	  for r in $$(seq $(RUNS)); do echo "== make test, run $$r of $(RUNS), both cores kept busy"; \
	    GOFLAGS=-count=1 $(MAKE) --no-print-directory test || exit 1; done

# Every case of the fault suite (launch/faults) against a fresh build: real
# jobs killed, stopped, preempted, given damaged checkpoints, bad flags,
# mismatched nodes, full disks, hostile connections; -v lists every case with
# its result. `make test` runs the cases marked fast.
faults:
	$(GO) test -v -count=1 -timeout 30m ./launch/faults -all

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

# What bench/gpu/check.sh runs on a GPU machine, which needs no Go: the binary
# and the test binaries of the CUDA code, stripped (carry bin/ there).
gpu-bin:
	$(GO) build -ldflags='-s -w' -o $(BIN) ./cmd/pplaunch
	mkdir -p bin/gpu
	$(GO) test -c -ldflags='-s -w' -o bin/gpu/cbits.test ./cbits
	$(GO) test -c -ldflags='-s -w' -o bin/gpu/collective.test ./collective
	$(GO) test -c -ldflags='-s -w' -o bin/gpu/tensor.test ./models/tensor
	$(GO) test -c -ldflags='-s -w' -o bin/gpu/models.test ./models

# Regenerate the matrix product's micro-kernels (the generated .s is committed).
sgemm-asm:
	cd models/tensor/sgemm && $(GO) run ./internal/gen kernel_amd64.s

# bench/gpu/check.sh end to end over the CPU emulator (DRY=1 QUICK=1, a small
# model), from the binaries gpu-bin builds: OUT gets summary.md and logs.tgz,
# as on a GPU machine.
OUT ?= /tmp/pplaunch-gpu-dry
gpu-dry: gpu-bin
	PPLAUNCH_GPU_DRY_OUT=$(abspath $(OUT)) PPLAUNCH_BIN=$(abspath bin) \
	  $(GO) test -count=1 -v -timeout 20m -run '^TestGPUDry$$' ./bench/gpu

clean:
	rm -rf bin

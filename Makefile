# Thin entry points; the work is done by cargo and scripts/.
CARGO ?= cargo

.PHONY: setup build test fuzz conformance run bench

# System packages the tests and benchmark peers need (fio, qemu-nbd, nbdkit, fuse3, ...).
setup:
	bash scripts/setup

build:
	$(CARGO) build --release

test: setup
	$(CARGO) test --workspace --release
	$(MAKE) fuzz FUZZ_SECONDS=30
	$(MAKE) conformance

# pjdfstest (POSIX) on vecio fuse mounts: plain, --uring and --passthrough; 0 failures each.
conformance:
	bash scripts/conformance

# The NBD request and option decoders under libFuzzer for a bounded time. cargo-fuzz comes from
# crates.io; the stable toolchain builds the target (RUSTC_BOOTSTRAP for the -Z flags it passes,
# no sanitizer: the decoders have no unsafe code, the fuzzer hunts panics and round-trip breaks).
FUZZ_SECONDS ?= 60
fuzz:
	command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run nbd_decoders --sanitizer none -- -max_total_time=$(FUZZ_SECONDS)

# Every experiment, quick mode, on scratch files in a temp dir on the current filesystem; the
# report goes to ./report.
run: setup
	$(CARGO) run --release -p vecio-cli -- bench all --quick --report report

# Every experiment at full length.
bench: setup
	$(CARGO) run --release -p vecio-cli -- bench all

# Thin entry points; the work is done by cargo and scripts/.
CARGO ?= cargo

.PHONY: setup build test run bench

# System packages the tests and benchmark peers need (fio, qemu-nbd, nbdkit, fuse3, ...).
setup:
	bash scripts/setup

build:
	$(CARGO) build --release

test: setup
	$(CARGO) test --workspace --release

# Every experiment, quick mode, on a scratch file in a temp dir on the current filesystem.
run: setup
	$(CARGO) run --release -p vecio-cli -- bench all --quick

# Every experiment at full length.
bench: setup
	$(CARGO) run --release -p vecio-cli -- bench all

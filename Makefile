# The two commands: `make demo` (the main job) and `make check` (all tests).
# Each installs missing dependencies first.
.PHONY: all build check demo install clean

all: build

build:
	@scripts/deps.sh
	@scripts/build.sh build

check:
	@scripts/check.sh

# Until the training demo exists, the demo is the store's self-check: a
# server started in-process and spoken to in both PyTorch dialects.
demo: build
	@build/tools/ftc/ftc store --self-check

install: build
	cmake --install build

clean:
	rm -rf build build-asan build-tsan build-fuzz

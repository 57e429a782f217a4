# The two commands: `make demo` (the main job) and `make check` (all tests).
# Each installs missing dependencies first.
.PHONY: all build check demo install clean

all: build

build:
	@scripts/deps.sh
	@scripts/build.sh build

check:
	@scripts/check.sh

# The main job: fault-tolerant training of the example model by 3 replica
# groups x 2 ranks for about a minute while a replica group is killed every
# 10 s, against a fault-free run (`make demo ALGO=diloco`: streaming
# DiLoCo; `build/tools/ftc/ftc demo --help` for the knobs).
# `make demo TRAINER=torch`: the same with the PyTorch trainer
# (examples/python/train_ft.py on ftc.Manager; PyTorch in .venv).
ALGO ?= ddp
TRAINER ?= c
demo: build
ifeq ($(TRAINER),torch)
	@scripts/pydeps.sh
	@FTC_PYTHON=$(CURDIR)/.venv/bin/python build/tools/ftc/ftc demo \
	  --trainer examples/python/train_ft --steps 1000
else
	@build/tools/ftc/ftc demo --algo $(ALGO)
endif

install: build
	cmake --install build

clean:
	rm -rf build build-asan build-tsan build-fuzz

# Shared rules for the examples: each example's Makefile names its PROGRAM
# and includes this file, so `make -C examples/X run` works for every X.
MICATOOL ?= micatool
TIER ?= checked
TARGET ?= native
ARGS ?=

run:
	$(MICATOOL) run --tier $(TIER) $(PROGRAM).mica -- $(ARGS)

build:
	$(MICATOOL) build --tier $(TIER) --target $(TARGET) $(PROGRAM).mica -o build/$(PROGRAM)-$(TARGET)

check:
	$(MICATOOL) check $(PROGRAM).mica

.PHONY: run build check

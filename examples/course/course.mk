# Shared rules for the course's folders: each folder's Makefile (written by
# tools/course.py) names its PROGRAMS in the chapter's order and includes this
# file, so `make -C examples/course/NN-slug run` runs them all, one after another.
MICATOOL ?= micatool
TIER ?= checked

run:
	@for program in $(PROGRAMS); do echo "== $$program.mica"; $(MICATOOL) run --tier $(TIER) $$program.mica || exit 1; done

check:
	@for program in $(PROGRAMS); do $(MICATOOL) check $$program.mica || exit 1; done

.PHONY: run check

# Every target runs through uv, so the locked environment is the one used.
UV ?= uv

.PHONY: help check test typecheck meta matrix sweep fixtures fixtures-check train tokenizer train-bpe bench margins lint format ci grade handout test-slow test-grading test-grading-together test-grading-alone platforms

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

check:  ## the main job: check the bundled implementation, per-component table
	$(UV) run cs336-grade

test:  ## the everyday suite: the component tests and the harness's and package's own (seconds)
	$(UV) run pytest tests

test-slow:  ## the bundled package's slow tests: torch.compile, Inductor's C++ build included (minutes) [SLOW_SELECT="not inductor"]
	$(UV) run pytest tests -m slow $(if $(SLOW_SELECT),-k "$(SLOW_SELECT)")

typecheck:  ## the everyday suite, every call into cs336_basics checked against its jaxtyping shapes
	$(UV) run pytest tests --typecheck

# The meta-test's in-process runs are independent of each other: spread over the cores.
META_WORKERS ?= auto
meta:  ## tests of the tests: every wrong module caught, both correct ones pass [META_WORKERS=auto CI_SCOPE=]
	$(UV) run pytest tests -m "meta$(if $(CI_SCOPE), and not extended)" -p xdist -n $(META_WORKERS)

matrix:  ## the suite and the sandboxed self-check on Python 3.11-3.13, torch 2.6-2.15, each in a throwaway env [CELLS="py3.12 ..."]
	$(UV) run python .ci/matrix.py $(CELLS)

SEEDS ?= 50
FIRST_SEED ?= 1
sweep:  ## every fresh draw fair and sharp: make sweep SEEDS=50 [FIRST_SEED=1] [SELECT="adamw or ..."]
	$(UV) run python -m cs336_staff.seed_sweep --seeds $(SEEDS) --first $(FIRST_SEED) \
	  $(if $(SELECT),-k "$(SELECT)")

fixtures:  ## rebuild every fixture from the oracle (byte-for-byte reproducible)
	$(UV) run python -m cs336_staff.fixturegen

fixtures-check:  ## rebuild into a temporary directory and compare with the committed manifest
	@tmp=$$(mktemp -d) && $(UV) run python -m cs336_staff.fixturegen --quiet --out $$tmp \
	  && diff -u tests/fixtures/MANIFEST.sha256 $$tmp/MANIFEST.sha256 \
	  && echo "fixtures reproduce byte for byte"; status=$$?; rm -rf $$tmp; exit $$status

grade:  ## grade submissions: make grade SUBMISSIONS="dir ..." [GRADE_ARGS="-j 4 --seed 7"]
	$(UV) run cs336-grade $(SUBMISSIONS) $(GRADE_ARGS)

handout:  ## write the student copy (stubbed cs336_basics, no oracle) to DEST=dir
	@test -n "$(DEST)" || { echo "usage: make handout DEST=dir"; exit 2; }
	$(UV) run python -m cs336_harness.grading.packaging.handout $(DEST)

test-grading: test-grading-together test-grading-alone  ## the grader's own tests: sandbox, hostile submissions, shards, fresh inputs, handout (minutes)

# Most of them wait on time-outs and processes as much as they compute: two files at a time
# (GRADING_WORKERS), each file on one worker, so its grading runs are made once. Those whose verdicts
# need a quiet host (marked `alone`: load, wall-clock caps, deadlines) after, one at a time.
# The longest files are handed out first (LONGEST_FIRST in tests/grading/conftest.py).
GRADING_WORKERS ?= 2
# CI_SCOPE=1: those CI runs, without the files marked `extended` (BEYOND_CI).
test-grading-together:  ## the grader's tests that may run beside others, two files at a time [GRADING_WORKERS=2 CI_SCOPE=]
	$(UV) run pytest -m "grading and not alone$(if $(CI_SCOPE), and not extended)" -p xdist \
	  -n $(GRADING_WORKERS) --dist loadfile --no-loadscope-reorder tests/grading

test-grading-alone:  ## the grader's tests that need a quiet host, one at a time [CI_SCOPE=]
	$(UV) run pytest -m "grading and alone$(if $(CI_SCOPE), and not extended)" tests/grading

# Not in CI (minutes): the reporter's JavaScript and PrairieLearn's repository are fetched
# copies (CLASSROOM_REPORTER, PRAIRIELEARN_REPO: docs/grading.md, "Checked against the
# platforms"), and the emulated container needs root.
platforms:  ## the grader on the platforms end to end: GitHub Classroom's reporter, PrairieLearn's emulated container, Gradescope's autograder
	$(UV) run pytest -m platforms tests/platforms

train:  ## train a small byte-level LM on Shakespeare (minutes; configs/train_small.toml)
	$(UV) run cs336-train --config configs/train_small.toml

tokenizer:  ## train a 10,000-token BPE vocabulary on Shakespeare into runs/bpe_shakespeare_10k
	$(UV) run cs336-train-bpe data/shakespeare_tragedies.txt --vocab-size 10000 \
	  --out runs/bpe_shakespeare_10k

train-bpe: tokenizer  ## train the small LM on BPE tokens instead of bytes (configs/train_small_bpe.toml)
	$(UV) run cs336-train --config configs/train_small_bpe.toml

bench:  ## speed and memory targets: forward pass, suite vs import torch, grading per submission
	$(UV) run python benchmarks/bench.py

margins:  ## how much of each tolerance the correct modules use (the evidence for cs336_harness/families.py)
	$(UV) run python -m cs336_staff.error_margins

lint:  ## ruff lint and format check, and the import contracts of the house plan (pyproject.toml)
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run lint-imports --no-cache

format:  ## apply ruff's formatting and safe fixes
	$(UV) run ruff format .
	$(UV) run ruff check --fix .

ci: lint meta fixtures-check  ## lint, the meta-test and the fixtures' reproducibility (.ci/run runs each beside the README's tests)

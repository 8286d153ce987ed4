# codeboost: the two commands a new user needs are `make demo` and `make test`.
GO ?= go

.PHONY: build test fuzz fuzz-parse scenarios vet staticcheck bite reanchor bench demo replay race mutate mutate-all unreached docker soak leaks leaks-list

# staticcheck is pinned; `go run pkg@version` fetches it from the module proxy.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

build:
	$(GO) build -o bin/codeboost ./cmd/codeboost

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

# test is what CI runs: vet, staticcheck, every package (the browser tests
# drive Debian's chromium; the bite test builds one shard of the named
# mutants with -overlay and runs what claims them), then RACE_PKGS under
# the race detector (the bite test and the browser tests skip themselves
# there). CODEBOOST_SCENARIOS_SPLIT=1 splits the scenario replays: the
# plain pass's TestTracesRepeat replays every scenario at GOMAXPROCS 1 and 2
# and compares the traces, the race pass's TestScenarios replays each once.
# In the background beside them: go vet, staticcheck and the plan parser's
# fuzz target briefly (fuzz-parse). Every fuzz target's seed corpus runs as
# a plain test in both passes; fuzzing the
# server's POST endpoints needs an instrumented build of the whole server
# (three minutes of a cold CI run), so `make fuzz` does that.
#
# The bite test's shard is BITE_SHARD, one in BITE_SHARDS of the mutants,
# turning with the commit count: every mutant is built within BITE_SHARDS
# commits, and every mutant is checked to apply and to be claimed on every
# run. All 280-odd mutants take about 19 minutes of this machine's two
# cores (about 4 s each: a compile, a link, the claiming runs), more than a
# CI run may; `make bite` builds them all.
#
# The Docker suites (dadapter/docker/..., e2e) need a Docker engine: they
# skip, saying so, when none answers (CODEBOOST_REQUIRE_DOCKER=1, which CI
# sets when an engine answers, turns that skip into a failure). They run
# once, not again under the race detector, one package at a time (and one
# test at a time whatever the package, by a lock file: objects one plants
# would make another's runner refuse admission), and beside the rest: they
# mostly wait on the engine, so they run in the background while the rest
# uses the CPU, and their output follows the rest's. The adapter's suite
# runs twice there: on the engine's socket, and over TCP through socat
# (dockertest's TestAdapterSuiteOverTCP, about as long again). go vet,
# staticcheck and fuzz-parse run in the background too: each test pass has
# a long tail (the scenarios, one package) that leaves a core idle for
# them. (Running the plain and race passes side by side as well was
# measured: no faster, and it slowed the Docker suites to the end of the
# run.)
DOCKER_PKGS = ./dadapter/docker/... ./e2e

# RACE_PKGS are the packages the race pass runs: every one with shared
# state or goroutines of its own. Left out, as the race detector finds
# nothing there worth its cost: the Docker suites (run once, above); the
# plan format, D's types and the conformance suite's cases (pure
# functions; the suite itself runs under -race through simd's test); the
# runner-owned repository (its time is git's processes: a minute under
# -race for one FIFO reader that procgroup's own tests race); and the
# build tools under internal/ (mutants, import rules).
RACE_PKGS = $$($(GO) list ./... | grep -v -e /dadapter/docker -e /e2e -e /internal/ -e /dadapter/gitrepo \
	-e '/plan$$' -e '/dadapter$$' -e /dadapter/dtest -e /dadapter/nodocker)
BITE_SHARDS ?= 48
BITE_SHARD ?= $(shell echo $$(( $$(git rev-list --count HEAD 2>/dev/null || echo 0) % $(BITE_SHARDS) )))/$(BITE_SHARDS)
test:
	@log=$$(mktemp); lint=$$(mktemp); \
	echo "go test -p 1 $(DOCKER_PKGS) (in the background; its output follows the rest)"; \
	$(GO) test -p 1 -timeout 20m $(DOCKER_PKGS) >$$log 2>&1 & docker=$$!; \
	echo "go vet, staticcheck, fuzz-parse (in the background; their output follows the rest)"; \
	$(MAKE) --no-print-directory vet staticcheck fuzz-parse >$$lint 2>&1 & linters=$$!; \
	echo "$$(date +%T) CODEBOOST_BITE_SHARD=$(BITE_SHARD) go test ./... (but the Docker suites)" && \
	CODEBOOST_BITE_SHARD=$(BITE_SHARD) CODEBOOST_SCENARIOS_SPLIT=1 $(GO) test -timeout 20m $$($(GO) list ./... | grep -v -e /dadapter/docker -e /e2e) && \
	echo "$$(date +%T) go test -race (RACE_PKGS: every package but the Docker suites, internal/, gitrepo, plan, dadapter, dtest, nodocker)" && \
	CODEBOOST_SCENARIOS_SPLIT=1 $(GO) test -timeout 20m -race $(RACE_PKGS); rc=$$?; \
	echo "$$(date +%T) the passes ended"; wait $$linters; lrc=$$?; \
	echo "go vet, staticcheck, fuzz-parse:"; cat $$lint; rm -f $$lint; \
	wait $$docker; drc=$$?; echo "$$(date +%T) the Docker suites ended"; \
	echo "go test $(DOCKER_PKGS):"; cat $$log; rm -f $$log; \
	[ $$rc -eq 0 ] && [ $$lrc -eq 0 ] && [ $$drc -eq 0 ]

# docker runs the Docker suites alone, one package at a time as make test
# does: dockertest's TestAdapterSuiteOverTCP runs dadapter/docker's suite a
# second time, over TCP, and beside another package's tests it would only
# wait for the lock and run into its timeout.
docker:
	$(GO) test -p 1 -count=1 -timeout 20m $(DOCKER_PKGS)

# soak runs, SOAK times in a row, the end-to-end cycle of `codeboost serve`
# on Docker (import, start, a completed item, cancel, clean shutdown, kill
# -9 and restart) and the kill soak (serve killed with SIGKILL at ten
# points from admission to commit extraction and restarted each time:
# every restart leaves the task where the requeue or a person can move it,
# never running with nothing running); CI runs each once, as part of make
# test.
SOAK ?= 20
soak:
	CODEBOOST_SOAK=$(SOAK) $(GO) test -count=1 -timeout 90m -run 'TestServeRunsAPlanInContainers|TestServeKilledAtEachPoint' -v ./e2e

# leaks fails if any container, volume or network carries a codeboost label
# (io.codeboost.*): CI runs it after the tests. LEAKS_BEFORE names a file
# that `make leaks-list` wrote before the tests: the objects it lists were
# on the engine before this run (a killed earlier process's, on a shared
# engine) and are reported, not counted; the comparison is by ID or name,
# as the engine prints labels in no fixed order.
LEAKS_BEFORE ?=
LEAK_LIST = { docker ps -a --format '{{.ID}} {{.Labels}}'; docker volume ls --format '{{.Name}} {{.Labels}}'; \
	docker network ls --format '{{.Name}} {{.Labels}}'; } | grep 'io\.codeboost\.' || true
leaks-list:
	@$(LEAK_LIST)
leaks:
	@left=$$($(LEAK_LIST)); \
	if [ -n "$(LEAKS_BEFORE)" ] && [ -s "$(LEAKS_BEFORE)" ]; then \
		old=$$(echo "$$left" | awk 'NR==FNR { before[$$1] = 1; next } ($$1 in before)' "$(LEAKS_BEFORE)" -); \
		left=$$(echo "$$left" | awk 'NR==FNR { before[$$1] = 1; next } !($$1 in before)' "$(LEAKS_BEFORE)" -); \
		if [ -n "$$old" ]; then echo "codeboost objects that were on the engine before this run (not counted):"; echo "$$old"; fi; \
	fi; \
	if [ -n "$$left" ]; then echo "codeboost objects left on the engine:"; echo "$$left"; exit 1; fi; \
	echo "no codeboost object is left on the engine"

# fuzz runs each fuzz target briefly from its seed corpus (testdata/fuzz):
# every POST endpoint of the review server, and the plan format's parser.
# One worker: the server's fuzz target drives one simulated world.
FUZZTIME ?= 10s
fuzz: fuzz-parse
	$(GO) test -run '^$$' -fuzz '^FuzzPost$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s -parallel 1 ./web

fuzz-parse:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s -parallel 1 ./plan

# bite runs only the bite test: every named mutant against what claims it.
bite:
	$(GO) test -count=1 -timeout 20m ./scenarios -run 'TestScenariosBite|TestEveryMutantIsKilled|TestMutantsApply' -v

# reanchor follows the named mutants after code moves: each block's "in:"
# line names its function, and a function moved to another file of its
# package or renamed takes its blocks along (the mutant files' "in:" lines
# and block paths are rewritten). It lists, and fails on, the blocks whose
# lines changed and the moved mutants that no longer compile: those a
# person rewrites.
reanchor:
	$(GO) run ./internal/mutant/cmd/reanchor -write

scenarios:
	$(GO) test ./scenarios -v -run 'TestScenarios$$'

race:
	$(GO) test -race $(RACE_PKGS)

bench:
	$(GO) test ./sim -run '^$$' -bench . -benchtime 200x

# demo runs `codeboost serve --demo` on 127.0.0.1:8080 (DEMO_LISTEN): the
# real server, Store and runner on a simulated agent. Open the URL it prints.
DEMO_LISTEN ?= 127.0.0.1:8080
demo: build
	./bin/codeboost serve --demo --listen $(DEMO_LISTEN)

# replay replays every scenario with its trace. The replay is a go test
# entry point (scenarios/replay_test.go), run in local directory mode so
# that go test shows its output; the codeboost binary links no scenario.
replay:
	cd scenarios && $(GO) test -count=1 -run '^TestReplay$$' -traces

# mutate is the automatic mutation sweep over every guarded package (runner/,
# store/, the lanes, web/, app/, codehost/github, dadapter/docker; package
# internal/mutate): a seeded sample of MUTATE_N mutants spread over the
# packages in proportion to their mutant counts, each run against its
# package's tests and the test binaries that exercise it (the scenarios, the
# simulator's, the importers', and e2e on Docker; dadapter/docker's own
# Docker suite), but only the tests whose coverage run entered the mutant's
# function; every survivor then runs again with every test. It prints the
# score, the score per package and every survivor. Not part of `make test`,
# and it needs a Docker engine (the Docker suites run with
# CODEBOOST_REQUIRE_DOCKER=1). -j 1 by default: the Docker suites hold a
# machine-wide lock, and a Docker stage gets 15 minutes at least, for a wait
# on that lock is not a kill. Measured on two shared cores with -j 2: the
# baseline and the coverage collection about 27 minutes for the adapter's
# stages alone (its Docker suite, 7 minutes, then each of its tests alone,
# 11 minutes; e2e twice), then about 10 s a mutant outside the adapter and,
# inside it, 4 s for one its engineless tests kill up to 19 minutes for one
# whose Docker tests all pass (1.8 minutes on average over seed 2718's
# first 19): roughly 2.5 hours for 300, before the survivors' second run
# with every test. '-not-pkgs dadapter/docker' or '-ops swap-steps' narrow
# it; make unreached lists the certain survivors in ten minutes.
MUTATE_SEED ?= 1
MUTATE_N ?= 300
MUTATE_FLAGS ?=

mutate:
	$(GO) run ./internal/mutate/cmd/mutate -seed $(MUTATE_SEED) -n $(MUTATE_N) -j 1 -o bin/mutate-report.json $(MUTATE_FLAGS)

# mutate-all runs every mutant (days: over 3000).
mutate-all:
	$(GO) run ./internal/mutate/cmd/mutate -all -j 1 -o bin/mutate-report-all.json $(MUTATE_FLAGS)

# unreached is the sweep's cheap half: one coverage run of the tests the
# sweep runs (the mutated packages' own, the scenarios, the simulator's,
# the CLI's and the Docker adapter's suite, which needs an engine), with
# -coverpkg naming every mutated package, then the drop-guard and
# ignore-error mutants whose guarded body no test ran: each is a survivor
# in every sample that draws it. e2e is left out (the serve processes it
# starts write no profile here), so a guard only e2e reaches is listed
# too. About ten minutes on two cores, most of it the adapter's suite.
UNREACHED_PKGS = ./runner/... ./store/... ./holder/... ./ask/... ./suggest/... ./planning/... ./merge/... \
	./web/... ./app/... ./codehost/github/... ./dadapter/docker ./scenarios ./sim ./cmd/codeboost/cli
unreached:
	@mkdir -p bin
	$(GO) test -count=1 -timeout 30m -skip 'Bites$$|TestScenariosBite|TestEveryMutantIsKilled' \
		-coverpkg=$$(echo $(UNREACHED_PKGS) | tr ' ' '\n' | grep -v -e scenarios -e sim -e cli | paste -sd, -) \
		-coverprofile=bin/unreached.out $(UNREACHED_PKGS) >bin/unreached-tests.log || { tail -30 bin/unreached-tests.log; exit 1; }
	$(GO) run ./internal/mutate/cmd/mutate -unreached bin/unreached.out

# codeboost: the two commands a new user needs are `make demo` and `make test`.
GO ?= go

.PHONY: build test fuzz scenarios vet staticcheck bite bench demo replay race mutate mutate-all

# staticcheck is pinned; `go run pkg@version` fetches it from the module proxy.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

build:
	$(GO) build -o bin/codeboost ./cmd/codeboost

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

# test is what CI runs: vet, staticcheck, every package (the bite test
# builds every named mutant with -overlay and runs what claims it; the
# browser tests drive Debian's chromium), then every package under the race
# detector (the bite test and the browser tests skip themselves there;
# scenarios/TestTracesRepeat compares every trace at GOMAXPROCS 1 and 2),
# then the fuzz targets briefly.
test: vet staticcheck
	$(GO) test -timeout 20m ./...
	$(GO) test -timeout 20m -race ./...
	$(MAKE) fuzz

# fuzz runs each fuzz target briefly from its seed corpus (testdata/fuzz):
# every POST endpoint of the review server, and the plan format's parser.
# One worker: the server's fuzz target drives one simulated world.
FUZZTIME ?= 10s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPost$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s -parallel 1 ./web
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s -parallel 1 ./plan

# bite runs only the bite test: every named mutant against what claims it.
bite:
	$(GO) test -count=1 -timeout 20m ./scenarios -run 'TestScenariosBite|TestEveryMutantIsKilled|TestMutantsApply' -v

scenarios:
	$(GO) test ./scenarios -v -run 'TestScenarios$$'

race:
	$(GO) test -race ./...

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

# mutate is the automatic mutation sweep over runner/ and store/ (package
# internal/mutate): a seeded sample of MUTATE_N mutants, each run against its
# package's tests, the scenarios and the simulator's tests; it prints the
# score and every survivor. Not part of `make test` (about half an hour).
# MUTATE_FLAGS passes more, e.g. MUTATE_FLAGS='-j 3' or '-ops swap-steps'.
MUTATE_SEED ?= 1
MUTATE_N ?= 300
MUTATE_FLAGS ?=

mutate:
	$(GO) run ./internal/mutate/cmd/mutate -seed $(MUTATE_SEED) -n $(MUTATE_N) -o bin/mutate-report.json $(MUTATE_FLAGS)

# mutate-all runs every mutant (a few hours).
mutate-all:
	$(GO) run ./internal/mutate/cmd/mutate -all -o bin/mutate-report-all.json $(MUTATE_FLAGS)

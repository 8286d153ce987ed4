# codeboost: the two commands a new user needs are `make demo` and `make test`.
GO ?= go

.PHONY: build test scenarios vet bench demo race

build:
	$(GO) build -o bin/codeboost ./cmd/codeboost

vet:
	$(GO) vet ./...

# test is what CI runs: vet, every package, the race detector, and the
# scenario determinism check (same results at 1 and 2 CPUs, three times).
test: vet
	$(GO) test -timeout 20m ./...
	$(GO) test -timeout 20m -race ./...
	$(GO) test -timeout 20m ./scenarios -count=3 -race -cpu 1,2

scenarios:
	$(GO) test ./scenarios -v -run 'TestScenarios$$'

race:
	$(GO) test -race ./...

bench:
	$(GO) test ./sim -run '^$$' -bench . -benchtime 200x

# demo replays every scenario with its trace, until `codeboost serve --demo`
# exists (a later issue). The replay is a go test entry point
# (scenarios/replay_test.go), run in local directory mode so that go test
# shows its output; the codeboost binary links no scenario.
demo: build
	cd scenarios && $(GO) test -count=1 -run '^TestReplay$$' -traces

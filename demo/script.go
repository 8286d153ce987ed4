package demo

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/codeboost/codeboost/dadapter"
)

// A run's length, and how often it fails: long enough to watch, short
// enough that a newcomer sees attempts end within a minute.
const (
	minRun    = 6 * time.Second
	runRange  = 6 * time.Second // a run takes minRun plus up to this
	failOneIn = 4
)

// step is one thing the agent does: after a pause, it prints lines and may
// have made one more change.
type step struct {
	after time.Duration // since the step before (the first: since Start)
	lines []string
	edits int // the item's hunks made once this step has run
}

// script is one run, fixed when it starts: what the agent prints and
// changes, when, and how it ends.
type script struct {
	item        item
	steps       []step
	settleAfter time.Duration // from the last step to the agent's exit
	fail        bool
	usage       dadapter.Usage // what a completed run reports
}

// newScript draws the run with the given ordinal (1 for the agent's first
// Start) from seed: the same seed and ordinal always give the same run.
// Runs take the plan's items in turn, as a plan run starts them.
func newScript(seed uint64, ordinal int) script {
	rng := rand.New(rand.NewPCG(seed, uint64(ordinal)))
	s := script{item: items[(ordinal-1)%len(items)], fail: rng.IntN(failOneIn) == 0}
	it := s.item

	var lines [][]string
	var edits []int
	made := 0
	say := func(ls ...string) { lines, edits = append(lines, ls), append(edits, made) }
	say("demo agent: " + it.title)
	if !slices.Contains(it.files, "README.md") {
		say("reading README.md") // every agent looks at it first
	}
	for _, f := range it.files {
		say("reading " + f)
	}
	say("tool: "+it.grep, it.grepHit)
	say("thinking: " + it.thought)
	for _, h := range it.hunks {
		made++
		plus, minus := h.changes()
		say(fmt.Sprintf("editing %s (+%d -%d)", h.file, plus, minus))
	}
	say("running go test ./...")
	if s.fail {
		say(it.failure...)
	} else {
		say(fmt.Sprintf("ok  \texample.com/wordcount\t0.%03ds", 5+rng.IntN(20)))
		say("running go vet ./...")
		say("done: " + it.summary)
	}

	// The steps are spread evenly over the run, each shifted by up to 40%
	// of its share so that the output does not tick like a metronome; the
	// agent exits at the end of the run.
	total := minRun + time.Duration(rng.Int64N(int64(runRange)))
	share := float64(total) / float64(len(lines))
	var last time.Duration
	for i := range lines {
		at := time.Duration(share * (float64(i) + 0.5 + 0.8*(rng.Float64()-0.5)))
		s.steps = append(s.steps, step{after: at - last, lines: lines[i], edits: edits[i]})
		last = at
	}
	s.settleAfter = total - last

	// Tokens grow with the run's length; the cost is at $3 and $15 per
	// million input and output tokens, to the hundredth of a cent.
	in := int64(total.Seconds() * float64(2500+rng.IntN(1500)))
	out := in/10 + int64(rng.IntN(800))
	s.usage = dadapter.Usage{InputTokens: in, OutputTokens: out,
		CostUSD: math.Round((float64(in)*3+float64(out)*15)/1e6*1e4) / 1e4}
	return s
}

// result is what a completed run reports (dadapter.Result).
func (s script) result() []byte {
	u := s.usage
	b, err := json.Marshal(dadapter.Result{Summary: s.item.summary, Usage: &u})
	if err != nil {
		panic(err) // strings and numbers: cannot fail
	}
	return b
}

// answer is a question attempt's result (Ask): the demo agent read the
// item its script is about and says so, plainly marked as the demo's.
func (s script) answer() []byte {
	u := s.usage
	b, err := json.Marshal(struct {
		Summary string          `json:"summary"`
		Answer  string          `json:"answer"`
		Usage   *dadapter.Usage `json:"usage"`
	}{"answered a question", "(demo agent) I read the task's code for this. " + s.item.summary +
		" is where I would start; the plan's order keeps each step testable on its own.", &u})
	if err != nil {
		panic(err) // strings and numbers: cannot fail
	}
	return b
}

// failureOutput is what a failed run prints last, which the runner keeps as
// its diagnostic ("exit code 1: …").
func (s script) failureOutput() []byte {
	return []byte("go test ./... failed: " + s.item.failedTest)
}

package holder

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/words"
)

var update = flag.Bool("update", false, "rewrite testdata/steps.txt from the code (then read the diff)")

var errX = errors.New("x")

// events is every event the holder takes, each with and without its error.
var events = []Event{
	Prepared{}, Prepared{Err: errX},
	Started{}, Started{Err: errX},
	StartSaved{}, StartSaved{Err: errX},
	Stop{Reason: words.ReasonCancelled}, Stop{Reason: words.ReasonShutdown},
	PrepDeadline{},
	SettledEv{},
	Inspected{Completed: true}, Inspected{}, Inspected{Err: errX},
	Exported{},
	Overruled{},
	Wrote{}, Wrote{Err: errX}, Wrote{NotCompleted: true},
	HostFilesRemoved{}, HostFilesRemoved{Err: errX},
	StorageRemoved{}, StorageRemoved{Err: errX},
	CommitReleased{},
	Abandon{},
}

func evString(e Event) string {
	s := e.event()
	switch e := e.(type) {
	case Prepared:
		s += errWord(e.Err)
	case Started:
		s += errWord(e.Err)
	case StartSaved:
		s += errWord(e.Err)
	case Wrote:
		s += errWord(e.Err)
		if e.NotCompleted {
			s += " not-completed"
		}
	case HostFilesRemoved:
		s += errWord(e.Err)
	case StorageRemoved:
		s += errWord(e.Err)
	case Stop:
		s += " " + string(e.Reason)
	case Inspected:
		if e.Completed {
			s += " completed"
		}
		s += errWord(e.Err)
	}
	return s
}

func errWord(err error) string {
	if err != nil {
		return " err"
	}
	return ""
}

func effString(effs []Effect) string {
	var names []string
	for _, e := range effs {
		names = append(names, e.effect())
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func (h Holder) String() string {
	s := h.Phase.String()
	for _, f := range []struct {
		on   bool
		name string
	}{{h.First != "", "first=" + string(h.First)}, {h.PrepTimedOut, "prep-timed-out"}, {h.Launched, "launched"},
		{h.StartNotSaved, "start-not-saved"}, {h.CancelSent, "cancel-sent"}, {h.Completed, "completed"},
		{h.Marker != "", "marker=" + h.Marker}} {
		if f.on {
			s += " " + f.name
		}
	}
	return s
}

// policies are the shapes of lane: a read-only one (Ask, planning), the
// runner's read-only attempts (host-side files: the clone) and its
// writable ones, and the suggestion coordinator's abandonable invocations.
var policies = []struct {
	name string
	p    Policy
}{{"read-only", Policy{}}, {"read-only with host files", Policy{HostFiles: true}},
	{"writable", Policy{Writable: true, HostFiles: true}}, {"abandonable", Policy{Abandonable: true}}}

// canonical is, per phase, the holder an attempt on the main path has
// there.
func canonical(p Policy, ph Phase) Holder {
	h := Holder{Phase: ph, Policy: p, Launched: ph >= Running}
	switch ph {
	case Launching:
		h.Launched = false
	case Freed:
		h.Completed = true
	case Held:
		h.Marker = words.ResultNotSaved
	}
	return h
}

// TestEveryPhaseAndEvent is the table: every (phase, event) pair from the
// main path's holder, for both shapes of lane, against
// testdata/steps.txt. A pair that is missing there, or answers otherwise,
// fails; -update rewrites the file, whose diff a person then reads.
func TestEveryPhaseAndEvent(t *testing.T) {
	var b strings.Builder
	b.WriteString("# holder: every (phase, event) pair from the main path's holder in that phase.\n")
	b.WriteString("# <holder> | <event> -> <holder after> <effects>, or -> unexpected. Regenerate: go test ./holder -update\n")
	for _, pol := range policies {
		fmt.Fprintf(&b, "\npolicy %s\n", pol.name)
		for _, ph := range Phases {
			h := canonical(pol.p, ph)
			for _, ev := range events {
				next, effs, err := Step(h, ev)
				switch {
				case err != nil:
					fmt.Fprintf(&b, "%s | %s -> unexpected\n", h, evString(ev))
				default:
					fmt.Fprintf(&b, "%s | %s -> %s %s\n", h, evString(ev), next, effString(effs))
				}
			}
		}
	}
	path := filepath.Join("testdata", "steps.txt")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			g, w := at(gl, i), at(wl, i)
			if g != w {
				t.Fatalf("%s:%d:\n got  %s\n want %s\n(go test ./holder -update rewrites it; read the diff)", path, i+1, g, w)
			}
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<none>"
}

// TestWalk explores every holder reachable from New by any sequence of
// events, for both shapes of lane, and checks on every transition the
// rules the holder exists for. It also checks that every reachable holder
// can still end, freed or held: no sequence of answers strands a slot.
func TestWalk(t *testing.T) {
	for _, pol := range policies {
		t.Run(pol.name, func(t *testing.T) {
			start, effs := New(pol.p)
			if start.Phase != Preparing || effString(effs) != "[prepare]" {
				t.Fatalf("New = %s %s", start, effString(effs))
			}
			seen := map[Holder]bool{start: true}
			edges := map[Holder][]Holder{}
			queue := []Holder{start}
			for len(queue) > 0 {
				h := queue[0]
				queue = queue[1:]
				for _, ev := range events {
					next, effs, err := Step(h, ev)
					where := fmt.Sprintf("%s | %s -> %s %s", h, evString(ev), next, effString(effs))
					if err != nil {
						if next != h || len(effs) > 0 || !errors.Is(err, ErrUnexpected) {
							t.Errorf("%s: a refused event changed the holder or asked for work (%v)", where, err)
						}
						continue
					}
					checkTransition(t, where, h, ev, next, effs)
					edges[h] = append(edges[h], next)
					if !seen[next] {
						seen[next] = true
						queue = append(queue, next)
					}
				}
			}
			for h := range seen {
				if h.Phase.Final() && len(edges[h]) > 0 {
					t.Errorf("%s: a final holder took an event", h)
				}
				if !h.Phase.Final() && !canEnd(h, edges) {
					t.Errorf("%s: no sequence of events ends it", h)
				}
			}
			t.Logf("%d reachable holders", len(seen))
		})
	}
}

func checkTransition(t *testing.T, where string, h Holder, ev Event, next Holder, effs []Effect) {
	t.Helper()
	if h.First != "" && next.First != h.First {
		t.Errorf("%s: the first reason was replaced", where)
	}
	if next.Phase < h.Phase && !(h.Phase == Inspecting || h.Phase == Exporting) {
		t.Errorf("%s: went back in the holder order", where)
	}
	for _, e := range effs {
		switch e := e.(type) {
		case FreeSlot:
			// The slot is freed only after the terminal write succeeded
			// and the storage is gone.
			if h.Phase != Releasing || next.Phase != Freed {
				t.Errorf("%s: the slot freed outside Releasing → Freed", where)
			}
		case Mark:
			if next.Phase != Held || next.Marker != e.Reason {
				t.Errorf("%s: a marker without holding", where)
			}
		case Cancel:
			if h.CancelSent || !next.Launched {
				t.Errorf("%s: D asked to stop twice, or before it had the invocation", where)
			}
		case Start:
			if h.First != "" || h.PrepTimedOut {
				t.Errorf("%s: started though stopped", where)
			}
		case AbortPreparation:
			// One abort per preparation: a stop after the deadline (or
			// the deadline after a stop) has nothing left to abort.
			if h.First != "" || h.PrepTimedOut || h.Phase != Preparing {
				t.Errorf("%s: the preparation aborted twice, or when none was in flight", where)
			}
		case WriteTerminal:
			if h.StartNotSaved {
				t.Errorf("%s: a terminal write over a start that was never saved", where)
			}
			if _, ok := ev.(Abandon); ok && !h.Policy.Abandonable {
				t.Errorf("%s: abandoned under a policy that may not", where)
			}
		case RemoveStorage:
			if next.Phase != Releasing {
				t.Errorf("%s: storage removed outside Releasing", where)
			}
			if _, wrote := ev.(Wrote); !wrote && h.Phase != Written {
				t.Errorf("%s: storage removed before the terminal write was saved", where)
			}
		case Export:
			if !h.Policy.Writable || next.Completed {
				t.Errorf("%s: exported a read-only or completed attempt", where)
			}
		case Audit:
			if !h.Policy.Writable {
				t.Errorf("%s: audited a read-only attempt", where)
			}
		}
	}
	// Every failed write or removal holds the slot under its own marker.
	if want := markerFor(h, ev); want != "" && (next.Phase != Held || next.Marker != want) {
		t.Errorf("%s: want held under %s", where, want)
	}
	if next.Phase == Held && !slices.ContainsFunc(effs, func(e Effect) bool { _, ok := e.(Mark); return ok }) {
		t.Errorf("%s: held without a marker effect", where)
	}
	if next.Phase == Freed && h.Phase != Freed && len(effs) != 1 {
		t.Errorf("%s: freed without exactly its FreeSlot", where)
	}
}

func canEnd(h Holder, edges map[Holder][]Holder) bool {
	seen := map[Holder]bool{h: true}
	queue := []Holder{h}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if x.Phase.Final() {
			return true
		}
		for _, y := range edges[x] {
			if !seen[y] {
				seen[y] = true
				queue = append(queue, y)
			}
		}
	}
	return false
}

// markerFor is the marker an event must leave the holder under, or "".
func markerFor(h Holder, ev Event) string {
	switch ev := ev.(type) {
	case Wrote:
		if ev.Err != nil {
			return words.ResultNotSaved
		}
	case Inspected:
		if ev.Err != nil {
			return words.ResultNotSaved
		}
	case HostFilesRemoved:
		if ev.Err != nil {
			return words.PreparationNotRemoved
		}
	case StorageRemoved:
		if ev.Err != nil {
			return words.StorageNotRemoved
		}
	case SettledEv:
		if h.StartNotSaved {
			return words.StartNotSaved
		}
	case Abandon:
		if h.StartNotSaved && h.Policy.Abandonable {
			return words.StartNotSaved
		}
	}
	return ""
}

// TestPhaseNames: every phase has its word, and a value past the last
// says what it is rather than panicking.
func TestPhaseNames(t *testing.T) {
	for _, p := range Phases {
		if strings.HasPrefix(p.String(), "phase(") {
			t.Errorf("phase %d has no name", p)
		}
	}
	for _, p := range []Phase{0, Held + 1} {
		if got, want := p.String(), fmt.Sprintf("phase(%d)", p); got != want {
			t.Errorf("Phase(%d) = %q, want %q", p, got, want)
		}
	}
}

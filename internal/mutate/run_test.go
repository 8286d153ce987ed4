package mutate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const toyLib = `package lib

// Clamp keeps n within [0, max].
func Clamp(n, max int) int {
	if n > max {
		return max
	}
	if n < 0 {
		return 0
	}
	return n
}

// Spin returns at once unless stuck.
func Spin(stuck bool) {
	for stuck {
	}
}
`

const toyTest = `package lib

import "testing"

func TestClamp(t *testing.T) {
	if Clamp(5, 3) != 3 {
		t.Fatal("not clamped")
	}
	Spin(false)
}
`

// A sweep over a toy module: a mutant the test sees is killed, one it does
// not see survives, one that does not compile is invalid, one that hangs
// times out, and a listed one is equivalent without running.
func TestSweepVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	root := toyModule(t, map[string]string{"lib/lib.go": toyLib, "lib/lib_test.go": toyTest})
	gen, err := Generate(root, []string{"lib"})
	if err != nil {
		t.Fatal(err)
	}
	find := func(op, orig string) Mutant {
		for _, m := range gen {
			if m.Op == op && strings.Contains(m.Edit.Original, orig) {
				return m
			}
		}
		t.Fatalf("no %s mutant of %q", op, orig)
		return Mutant{}
	}
	killed := find(OpDropGuard, "if n > max {")
	survivor := find(OpDropGuard, "if n < 0 {")
	listed := find(OpNegate, "if n < 0 {")
	invalid := killed
	invalid.ID, invalid.Edit.Replacement = "lib/lib.go:Clamp:broken:0", "\tif n > {\n"
	hang := killed
	hang.ID, hang.Edit.Original, hang.Edit.Replacement, hang.Edit.Line = "lib/lib.go:Spin:hang:0", "\tfor stuck {\n", "\tfor !stuck {\n", 16
	hang.Line = 16

	opts := Options{Root: root, Jobs: 2, Timeout: 3 * time.Second,
		Stages: func(m Mutant) []Stage { return []Stage{{Pkg: m.Pkg(), Run: "."}} }}
	sw, _, err := Baseline(context.Background(), opts, gen)
	if err != nil {
		t.Fatal(err)
	}
	ms := []Mutant{killed, survivor, invalid, hang, listed}
	rs := sw.Run(context.Background(), ms, map[string]string{listed.ID: "toy reason"}, false)
	want := []Verdict{Killed, Survived, Invalid, TimedOut, Equivalent}
	for i, r := range rs {
		if r.Verdict != want[i] {
			t.Errorf("%s: %s, want %s (by %s)\n%s", r.ID, r.Verdict, want[i], r.By, r.Detail)
		}
	}
	if rs[0].By != "./lib TestClamp" {
		t.Errorf("killed by %q", rs[0].By)
	}
	rep := NewReport(rs)
	// killed 2 (one by timeout) of 5 − 1 equivalent − 1 invalid.
	if rep.Score < 66.6 || rep.Score > 66.7 {
		t.Errorf("score %.2f", rep.Score)
	}
	var b bytes.Buffer
	rep.Print(&b)
	for _, s := range []string{"survivors", survivor.ID, "- \tif n < 0 {", "+ \tif n < 0 && false {", "toy reason", "score 66.7%"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the report lacks %q:\n%s", s, b.String())
		}
	}
}

// toyModule writes a module "toy" with files in a temporary directory.
func toyModule(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files["go.mod"] = "module toy\n\ngo 1.22\n"
	for p, s := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const toyCounter = `package lib

import "sync"

// Counter is a count read and written under its lock.
type Counter struct {
	mu sync.Mutex
	n  int
}

// Inc adds one.
func (c *Counter) Inc() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

// Get is the count.
func (c *Counter) Get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
`

const toyCounterTest = `package lib

import (
	"sync"
	"testing"
)

func TestIncFromManyGoroutines(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Inc()
			}
		}()
	}
	wg.Wait()
	if c.Get() == 0 {
		t.Fatal("nothing counted")
	}
}
`

// A swap that moves a step out of its lock is judged by a second pass
// built with -race: the plain binary cannot tell it from the original (the
// test above checks only that something was counted), the race detector
// kills it, and a swap that does not touch a lock gets no race pass.
func TestRacePassJudgesLockSwaps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	root := toyModule(t, map[string]string{"lib/counter.go": toyCounter, "lib/counter_test.go": toyCounterTest})
	gen, err := Generate(root, []string{"lib"})
	if err != nil {
		t.Fatal(err)
	}
	var swaps []Mutant
	for _, m := range gen {
		if m.Op == OpSwapSteps {
			if !m.Race {
				t.Errorf("%s moves a step across a lock but is not marked Race", m.ID)
			}
			swaps = append(swaps, m)
		}
	}
	if len(swaps) != 2 {
		t.Fatalf("%d swaps, want Lock/n++ and n++/Unlock", len(swaps))
	}
	opts := Options{Root: root, Jobs: 1, Timeout: time.Minute,
		Stages: func(m Mutant) []Stage { return []Stage{{Pkg: m.Pkg(), Run: "."}} }}
	sw, _, err := Baseline(context.Background(), opts, gen)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sw.Run(context.Background(), swaps, nil, false) {
		if r.Verdict != Killed || !strings.Contains(r.By, "(the race detector)") || !strings.Contains(r.Detail, DataRace) {
			t.Errorf("%s: %s by %q, want killed by the race detector\n%s\n%s", r.ID, r.Verdict, r.By, strings.Join(r.Steps, "\n"), r.Detail)
		}
	}
	plain := generateFixture(t, toyLib)
	for _, m := range plain {
		if m.Race {
			t.Errorf("%s touches no lock but is marked Race", m.ID)
		}
	}
}

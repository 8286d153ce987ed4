package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
)

// Config sets up a world.
type Config struct {
	Seed           uint64
	Slots          int
	AttemptTimeout time.Duration
	Budget         time.Duration
	DiagnosticsCap int64
	Kinds          []string
}

// World is one scenario's universe: its own clock, loop, IDs, failpoints, D,
// SQLite file and runner.
type World struct {
	Dir    string
	DBPath string
	Clock  *Clock
	Loop   *Loop
	IDs    *ids.Seeded
	FP     *failpoints.Set
	D      *D
	Store  *store.Store
	Runner *runner.Coordinator
	Owner  string
	Config Config

	trace    []string
	aliases  map[string]string // UUID → name given by the script
	names    map[string]string // name → UUID
	findings map[string]string // attempt ID → safety finding the audit reports
	nextName string            // the name the next admitted attempt gets
}

// NewWorld builds a world in dir (a fresh directory of its own).
func NewWorld(dir string, cfg Config, fp *failpoints.Set) (*World, error) {
	if fp == nil {
		fp = failpoints.New()
	}
	w := &World{Dir: dir, DBPath: filepath.Join(dir, "codeboost.db"), Loop: &Loop{}, IDs: ids.NewSeeded(cfg.Seed),
		FP: fp, Config: cfg, aliases: map[string]string{}, names: map[string]string{}, findings: map[string]string{}}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w.Clock = NewClock(w.Loop)
	w.Owner = w.IDs.Token()
	w.D = NewD(w.Name, w.Trace)
	st, err := store.Open(w.DBPath, store.Options{Now: w.Clock.Now, IDs: w.IDs, Failpoints: fp})
	if err != nil {
		return nil, err
	}
	w.Store = st
	capability := st.ShutdownCapability()
	root := filepath.Join(dir, "runner-root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	w.Runner, err = runner.New(runner.Config{
		Slots: cfg.Slots, Kinds: cfg.Kinds, AttemptTimeout: cfg.AttemptTimeout, Budget: cfg.Budget,
		Root: root, Owner: w.Owner, DiagnosticsCap: cfg.DiagnosticsCap,
	}, runner.Deps{
		Store: st, Capability: capability, D: w.D, Clock: w.Clock, Loop: w.Loop, IDs: w.IDs, Failpoints: fp,
		Trace: w.Trace, Audit: w.audit,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	w.Runner.Open()
	return w, nil
}

// Close closes the store.
func (w *World) Close() error { return w.Store.Close() }

func (w *World) audit(a store.Attempt, _ dadapter.Settlement) string { return w.findings[a.ID] }

// SetFinding makes the runner's audit report a safety finding for attemptID.
func (w *World) SetFinding(attemptID, finding string) { w.findings[attemptID] = finding }

// Name gives a known ID its script name (else the ID itself).
func (w *World) Name(id string) string {
	if n, ok := w.aliases[id]; ok {
		return n
	}
	return id
}

// Alias names an ID for the trace and for later commands.
func (w *World) Alias(id, name string) error {
	if prev, ok := w.names[name]; ok && prev != id {
		return fmt.Errorf("name %s is already used for another attempt", name)
	}
	w.aliases[id], w.names[name] = name, id
	return nil
}

// NameNext gives the next admitted attempt a name.
func (w *World) NameNext(name string) error {
	if _, ok := w.names[name]; ok {
		return fmt.Errorf("name %s is already used", name)
	}
	w.nextName = name
	return nil
}

// ID resolves a script name to its ID.
func (w *World) ID(name string) (string, error) {
	if id, ok := w.names[name]; ok {
		return id, nil
	}
	return "", fmt.Errorf("no attempt is named %s", name)
}

var uuidInLine = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)

// Trace appends one line, with known IDs replaced by their names and the
// virtual time in front.
func (w *World) Trace(line string) {
	if w.nextName != "" && strings.HasPrefix(line, "admitted ") {
		if id := uuidInLine.FindString(line); id != "" && w.aliases[id] == "" {
			w.Alias(id, w.nextName)
			w.nextName = ""
		}
	}
	line = uuidInLine.ReplaceAllStringFunc(line, w.Name)
	line = strings.ReplaceAll(line, w.Owner, "<owner>")
	w.trace = append(w.trace, fmt.Sprintf("%s %s", w.Clock.Now().Sub(Epoch), line))
}

// Lines returns the trace so far.
func (w *World) Lines() []string { return append([]string(nil), w.trace...) }

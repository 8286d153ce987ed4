package app_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/app"
)

// TestTextLogIsOnePlainLinePerRecord: the text format is "codeboost:
// <message>" and the attributes the message does not already name, quoted
// where needed; debug records are dropped. An attribute with no key is
// ignored, as slog's own handlers do (a group with no key is inlined).
// Kills the sweep's app/log.go:appendAttr:drop-guard:0826a079 (seed 8675309).
func TestTextLogIsOnePlainLinePerRecord(t *testing.T) {
	var b bytes.Buffer
	log, err := app.NewLogger(&b, app.LogText)
	if err != nil {
		t.Fatal(err)
	}
	id := "3f2a8c10-1b2c-4d3e-8f40-5a6b7c8d9e0f"
	log.Info("released the preparation of "+id, "attempt", id)
	log.Warn("export failed", "attempt", id, "cause", "disk full", "n", 1)
	log.With("attempt", id).WithGroup("d").Info("item 1 done", "item", 1, "op", "clone")
	log.Info("empty", "v", "")
	log.Info("no key", slog.String("", "dropped"), slog.Group("", slog.Int("n", 2)))
	log.Debug("not shown")
	want := "codeboost: released the preparation of " + id + "\n" +
		"codeboost: export failed attempt=" + id + " cause=\"disk full\" n=1\n" +
		"codeboost: item 1 done attempt=" + id + " d.op=clone\n" +
		"codeboost: empty v=\"\"\n" +
		"codeboost: no key n=2\n"
	if b.String() != want {
		t.Errorf("text log:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestJSONLogKeepsEveryAttribute: --log-format json writes one object per
// line with time, level, msg and every attribute, including those the
// message names.
func TestJSONLogKeepsEveryAttribute(t *testing.T) {
	var b bytes.Buffer
	log, err := app.NewLogger(&b, app.LogJSON)
	if err != nil {
		t.Fatal(err)
	}
	id := "3f2a8c10-1b2c-4d3e-8f40-5a6b7c8d9e0f"
	log.Info("released the preparation of "+id, "attempt", id)
	var rec map[string]any
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	if rec["msg"] != "released the preparation of "+id || rec["attempt"] != id || rec["level"] != "INFO" || rec["time"] == nil {
		t.Errorf("json record %v", rec)
	}
	if _, err := app.NewLogger(&b, "xml"); err == nil {
		t.Error("an unknown log format was accepted")
	}
}

// TestStartupLogsNoPlaceholder: a whole start and shutdown, logged as JSON,
// gives one valid record per line, and no message carries a placeholder
// (an unfilled <owner>, a fmt verb's complaint).
func TestStartupLogsNoPlaceholder(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "codeboost.db")
	var out syncBuffer
	log, _ := app.NewLogger(&out, app.LogJSON)
	a, err := app.New(app.Options{DB: db, Check: true, Log: log, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	placeholder := regexp.MustCompile(`<[a-z]+>|%!|\(MISSING\)|<nil>`)
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON record: %q", line)
		}
		msgs = append(msgs, rec.Msg)
		if placeholder.MatchString(rec.Msg) {
			t.Errorf("placeholder in a log message: %q", rec.Msg)
		}
	}
	for _, want := range []string{"recovery: D recovery for ", "recovery: done; runner open", "stopping"} {
		if !strings.Contains(strings.Join(msgs, "\n"), want) {
			t.Errorf("no %q in the log:\n%s", want, strings.Join(msgs, "\n"))
		}
	}
}

// TestAttemptLinesCarryTheAttemptID: a runner line about one attempt carries
// its ID as the "attempt" attribute, so JSON logs can be filtered by attempt
// (here recovery finalizing what a crash left).
func TestAttemptLinesCarryTheAttemptID(t *testing.T) {
	dir, db, token := firstStart(t)
	attempt, _, _ := leaveCrashedAttempt(t, db, dir, token)
	var out syncBuffer
	log, _ := app.NewLogger(&out, app.LogJSON)
	a, err := app.New(app.Options{DB: db, Check: true, Log: log, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec struct {
			Msg     string
			Attempt string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON record: %q", line)
		}
		if strings.Contains(rec.Msg, "finalized "+attempt.ID) {
			found = true
			if rec.Attempt != attempt.ID {
				t.Errorf("%q carries attempt=%q, want %s", rec.Msg, rec.Attempt, attempt.ID)
			}
		}
		if rec.Attempt != "" && !strings.Contains(rec.Msg, rec.Attempt) {
			t.Errorf("%q carries attempt=%q, which it is not about", rec.Msg, rec.Attempt)
		}
	}
	if !found {
		t.Fatalf("no finalization line for %s:\n%s", attempt.ID, out.String())
	}
}

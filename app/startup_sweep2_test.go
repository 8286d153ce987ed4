package app_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/app"
)

// TestRunSaysTheRootCannotBeMade: a runner root that cannot be created
// (here a file stands where it should be) fails startup with the error of
// making that directory, naming it, before anything is recovered under it.
// Sweep survivor (seed 20261203): app/app.go:App.recoverStartup:ignore-error:cb9b026d.
func TestRunSaysTheRootCannotBeMade(t *testing.T) {
	dir, db, _ := firstStart(t)
	root := filepath.Join(dir, "root-file")
	if err := os.WriteFile(root, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logs, _, err := runApp(t, app.Options{DB: db, Root: root, Check: true})
	if err == nil || !strings.Contains(err.Error(), "mkdir "+root+": not a directory") {
		t.Fatalf("err %v, want the error of making %s\n%s", err, root, logs)
	}
}

// TestConfigOfExactlyTheLimitIsRead: the bound on a configuration file is
// "over 1 MiB": a file of exactly 1 MiB is read like any other.
// Sweep survivor (seed 20261203): app/config.go:LoadConfig:boundary:7d5319c6.
func TestConfigOfExactlyTheLimitIsRead(t *testing.T) {
	const limit = 1 << 20
	body := []byte(`{"listen": "127.0.0.1:9"}`)
	b := append(body, bytes.Repeat([]byte(" "), limit-len(body))...)
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := app.LoadConfig(path)
	if err != nil || c.Listen != "127.0.0.1:9" {
		t.Fatalf("a config of exactly %d bytes: %+v, %v", limit, c, err)
	}
	if err := os.WriteFile(path, append(b, ' '), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := app.LoadConfig(path); err == nil || !strings.Contains(err.Error(), "over 1048576 bytes") {
		t.Errorf("a config one byte over: %v", err)
	}
}

// TestTextLogPrefixesAGroupsKeys: a named group's attributes are written
// as group.key, and an inline group (no key) adds no prefix of its own.
// Sweep survivor (seed 20261203): app/log.go:appendAttr:negate:5356e5bc.
func TestTextLogPrefixesAGroupsKeys(t *testing.T) {
	var b bytes.Buffer
	log, err := app.NewLogger(&b, app.LogText)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("pulled", slog.Group("d", "op", "clone"), slog.Group("", "n", 3))
	want := "codeboost: pulled d.op=clone n=3\n"
	if b.String() != want {
		t.Errorf("text log %q, want %q", b.String(), want)
	}
}

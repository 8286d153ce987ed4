package app_test

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/app"
)

// TestLoadConfigSaysWhyItCannotRead: a configuration file that is not
// there is the read's own error; one over 1 MiB is refused before it is
// parsed, naming the file; one that does not parse is refused, naming the
// file and what is wrong in it.
func TestLoadConfigSaysWhyItCannotRead(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "codeboost.json")
	if _, err := app.LoadConfig(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadConfig of a missing file: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), 1<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := app.LoadConfig(big); err == nil || err.Error() != big+": over 1048576 bytes" {
		t.Errorf("LoadConfig of a file over 1 MiB: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"listen": 8080}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := app.LoadConfig(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("LoadConfig of a file that does not parse: %+v, %v", c, err)
	}
}

// TestTextLogGroupWithNoNameAddsNoPrefix: slog's rule for handlers, "if
// the name is empty, WithGroup returns the receiver": a group with no name
// leaves the attributes' keys as they are.
func TestTextLogGroupWithNoNameAddsNoPrefix(t *testing.T) {
	var b bytes.Buffer
	log, err := app.NewLogger(&b, app.LogText)
	if err != nil {
		t.Fatal(err)
	}
	slog.New(log.Handler().WithGroup("")).Info("done", "item", 1)
	if got := strings.TrimSpace(b.String()); got != "codeboost: done item=1" {
		t.Errorf("text log %q, want the key without a group prefix", got)
	}
}

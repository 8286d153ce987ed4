package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// run runs one command line in this process.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errs bytes.Buffer
	code = Run(args, Options{Stdout: &out, Stderr: &errs})
	return code, out.String(), errs.String()
}

// TestHelpAndUsageErrors: help goes to stdout with exit code 0, for every
// command; a usage error goes to stderr with exit code 2 and prints nothing
// on stdout.
func TestHelpAndUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stream string // where the text goes: "stdout" or "stderr"
		want   string
	}{
		{[]string{"--help"}, 0, "stdout", "codeboost serve --config FILE"},
		{[]string{"-h"}, 0, "stdout", "codeboost serve --config FILE"},
		{[]string{"help"}, 0, "stdout", "codeboost serve --config FILE"},
		{[]string{"help", "serve"}, 0, "stdout", "--release-preparation ATTEMPT_ID"},
		{[]string{"serve", "--help"}, 0, "stdout", "--log-format FORMAT"},
		{[]string{"serve", "-h"}, 0, "stdout", "--root DIR"},
		{nil, 2, "stderr", "Usage:"},
		{[]string{"scenarios"}, 2, "stderr", `unknown command "scenarios"`},
		{[]string{"help", "nope"}, 2, "stderr", `unknown command "nope"`},
		{[]string{"serve"}, 2, "stderr", "--db PATH (or a configuration file"},
		{[]string{"serve", "--db", "x.db", "extra"}, 2, "stderr", `unexpected argument "extra"`},
		{[]string{"serve", "--nope"}, 2, "stderr", "flag provided but not defined: -nope"},
		{[]string{"serve", "--db", "x.db", "--log-format", "xml"}, 2, "stderr", `unknown log format "xml"`},
		{[]string{"serve", "--db"}, 2, "stderr", "flag needs an argument"},
		{[]string{"serve", "--db", "x.db", "--release-preparation", "../x"}, 2, "stderr", "is not a lowercase UUID v4"},
	} {
		code, stdout, stderr := run(tc.args...)
		got, other := stdout, stderr
		if tc.stream == "stderr" {
			got, other = stderr, stdout
		}
		if code != tc.code || !strings.Contains(got, tc.want) || other != "" {
			t.Errorf("codeboost %s: exit %d (want %d)\nstdout: %q\nstderr: %q\nwant %q on %s and nothing on the other",
				strings.Join(tc.args, " "), code, tc.code, stdout, stderr, tc.want, tc.stream)
		}
	}
}

// TestServeRuntimeErrorExitsOne: a startup that fails prints its message
// alone on stderr, nothing on stdout, and exits 1.
func TestServeRuntimeErrorExitsOne(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // the lock refuses a parent others can write
		t.Fatal(err)
	}
	code, stdout, stderr := run("serve", "--db", filepath.Join(dir, "cb.db"), "--check")
	if code != 1 || stdout != "" || !strings.HasSuffix(stderr, "directory is not owned by the current user or is writable by group or others\n") {
		t.Errorf("exit %d\nstdout: %q\nstderr: %q", code, stdout, stderr)
	}
}

// TestServeLogFormats: the default log is plain text lines; --log-format
// json makes every stdout line one JSON record. Nothing goes to stderr.
func TestServeLogFormats(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "cb.db")
	code, stdout, stderr := run("serve", "--db", db, "--check")
	if code != 0 || stderr != "" || !regexp.MustCompile(`(?m)^codeboost: runner owner [0-9a-f]{32}$`).MatchString(stdout) ||
		!strings.Contains(stdout, "\ncodeboost: stopping\n") {
		t.Fatalf("text: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, stderr = run("serve", "--db", db, "--check", "--log-format", "json")
	if code != 0 || stderr != "" {
		t.Fatalf("json: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level == "" || rec.Msg == "" {
			t.Errorf("not a JSON log record: %q", line)
		}
	}
}

// TestReadmeSpellsEveryServeFlag: the README's flag table names every
// flag serve defines, as --name, and no `codeboost scenarios` command is
// left in it.
func TestReadmeSpellsEveryServeFlag(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	fl, _ := serveFlags(io.Discard)
	fl.VisitAll(func(f *flag.Flag) {
		if !bytes.Contains(readme, []byte("| `--"+f.Name)) {
			t.Errorf("README.md's flag table lacks --%s", f.Name)
		}
	})
	if bytes.Contains(readme, []byte("codeboost scenarios")) {
		t.Error("README.md still names `codeboost scenarios`, which the binary no longer has")
	}
}

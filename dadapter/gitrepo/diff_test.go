package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter/procgroup"
)

func TestDiff(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	want := []byte(hostGit(t, u.dir, "diff", "--binary", u.c1, u.c3) + "\n")

	for _, tc := range []struct {
		max       int
		truncated bool
	}{
		{1 << 20, false},
		{len(want), false},
		{len(want) - 1, true},
		{10, true},
		{0, true},
	} {
		got, truncated, err := r.Diff(ctx, u.c1, u.c3, tc.max)
		if err != nil {
			t.Fatalf("max %d: %v", tc.max, err)
		}
		n := min(tc.max, len(want))
		if truncated != tc.truncated || !bytes.Equal(got, want[:n]) {
			t.Fatalf("max %d: got %d bytes, truncated %v; want %d bytes, truncated %v\n%s", tc.max, len(got), truncated, n, tc.truncated, got)
		}
	}
	if d, truncated, err := r.Diff(ctx, u.c3, u.c3, 100); err != nil || truncated || len(d) != 0 {
		t.Fatalf("empty diff = %q, %v, %v", d, truncated, err)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A diff far larger than maxBytes, a pipe's buffer and procgroup's output
// limit returns its first maxBytes.
func TestDiffStopsGitAtTheLimit(t *testing.T) {
	u := newUserRepo(t)
	var big strings.Builder
	for i := 0; big.Len() < 8<<20; i++ {
		fmt.Fprintf(&big, "line %d of a generated file\n", i)
	}
	write(t, filepath.Join(u.dir, "big.txt"), big.String())
	hostGit(t, u.dir, "add", "big.txt")
	hostGit(t, u.dir, "commit", "-q", "-m", "big")
	head := hostGit(t, u.dir, "rev-parse", "HEAD")

	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, head, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, truncated, err := r.Diff(ctx, u.c3, head, 1000)
	if err != nil || !truncated || len(got) != 1000 {
		t.Fatalf("Diff = %d bytes, truncated %v, %v", len(got), truncated, err)
	}
	if !bytes.HasPrefix(got, []byte("diff --git a/big.txt b/big.txt\n")) {
		t.Fatalf("diff starts %q", got[:80])
	}
	t.Logf("a 1000-byte cut of an 8 MiB diff took %v", time.Since(start))
	if left := leftovers(t, r); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestDiffRefuses(t *testing.T) {
	u := newUserRepo(t)
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, u.c3, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Diff(ctx, "HEAD", u.c3, 100); !errors.Is(err, ErrBadCommit) {
		t.Fatalf("from HEAD: err = %v, want ErrBadCommit", err)
	}
	if _, _, err := r.Diff(ctx, u.c3, "--output=/tmp/x", 100); !errors.Is(err, ErrBadCommit) {
		t.Fatalf("to an option: err = %v, want ErrBadCommit", err)
	}
	// A commit the repository does not hold: git's reason, and no hang
	// waiting for a writer that never came.
	_, _, err := r.Diff(ctx, u.c3, u.lost, 100)
	if err == nil || !strings.Contains(err.Error(), "bad object") {
		t.Fatalf("missing commit: err = %v, want git's 'bad object'", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := r.Diff(cancelled, u.c1, u.c3, 100); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped: err = %v, want context.Canceled", err)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// readBounded stops a writer that would never end: without the stop this
// test hangs.
func TestReadBoundedStopsAnEndlessWriter(t *testing.T) {
	dir := t.TempDir()
	var g groups
	got, truncated, err := readBounded(context.Background(), dir, 100_000, func(ctx context.Context, fifo string) error {
		res := procgroup.Run(ctx, "/bin/sh", []string{"-c", `exec yes > "$0"`, fifo}, procgroup.Options{}, g.on)
		if !res.Aborted && !res.Signaled {
			return fmt.Errorf("the writer was neither stopped nor killed: %+v", res)
		}
		return errors.New("stopped")
	})
	if err != nil || !truncated || len(got) != 100_000 || !bytes.Equal(got[:4], []byte("y\ny\n")) {
		t.Fatalf("readBounded = %d bytes %q…, truncated %v, %v", len(got), got[:min(len(got), 4)], truncated, err)
	}
	if g.count() != 1 {
		t.Fatalf("%d groups", g.count())
	}

	// A writer that exits without opening the FIFO: its error, at once.
	_, _, err = readBounded(context.Background(), dir, 10, func(ctx context.Context, fifo string) error {
		return errors.New("never opened")
	})
	if err == nil || err.Error() != "never opened" {
		t.Fatalf("err = %v, want the writer's", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("%d entries left", len(entries))
	}
}

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
		got, truncated, err := diffOf(r, ctx, u.c1, u.c3, tc.max)
		if err != nil {
			t.Fatalf("max %d: %v", tc.max, err)
		}
		n := min(tc.max, len(want))
		if truncated != tc.truncated || !bytes.Equal(got, want[:n]) {
			t.Fatalf("max %d: got %d bytes, truncated %v; want %d bytes, truncated %v\n%s", tc.max, len(got), truncated, n, tc.truncated, got)
		}
	}
	if d, truncated, err := diffOf(r, ctx, u.c3, u.c3, 100); err != nil || truncated || len(d) != 0 {
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
	got, truncated, err := diffOf(r, ctx, u.c3, head, 1000)
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
	if _, _, err := diffOf(r, ctx, "HEAD", u.c3, 100); !errors.Is(err, ErrBadCommit) {
		t.Fatalf("from HEAD: err = %v, want ErrBadCommit", err)
	}
	if _, _, err := diffOf(r, ctx, u.c3, "--output=/tmp/x", 100); !errors.Is(err, ErrBadCommit) {
		t.Fatalf("to an option: err = %v, want ErrBadCommit", err)
	}
	// A commit the repository does not hold: git's reason, and no hang
	// waiting for a writer that never came.
	_, _, err := diffOf(r, ctx, u.c3, u.lost, 100)
	if err == nil || !strings.Contains(err.Error(), "bad object") {
		t.Fatalf("missing commit: err = %v, want git's 'bad object'", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := diffOf(r, cancelled, u.c1, u.c3, 100); !errors.Is(err, context.Canceled) {
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

// diffOf is Diff into memory, with no large-file summary.
func diffOf(r *Repo, ctx context.Context, from, to string, max int) ([]byte, bool, error) {
	var b bytes.Buffer
	cut, err := r.Diff(ctx, &b, from, to, DiffOptions{MaxBytes: max})
	if err != nil {
		return nil, false, err
	}
	return b.Bytes(), cut, nil
}

// A blob over BigBytes is one summary line, never diffed: a 64 MiB file
// added beside a small edit, and the view still shows the edit. Without
// the summary git deflates the whole blob into a binary patch (and a
// 2 GiB one makes the host's git fail with "Out of memory").
func TestDiffSummarizesLargeBlobs(t *testing.T) {
	u := newUserRepo(t)
	big := filepath.Join(u.dir, "data", "big.bin")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 64<<20); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(u.dir, "small.txt"), "a small edit\n")
	// core.bigFileThreshold streams the blob into a pack: the test's own
	// git holds none of it either.
	hostGit(t, u.dir, "-c", "core.bigFileThreshold=1m", "add", "data/big.bin", "small.txt")
	hostGit(t, u.dir, "commit", "-q", "-m", "big")
	head := hostGit(t, u.dir, "rev-parse", "HEAD")
	r := openRepo(t, u)
	ctx := context.Background()
	if err := r.Materialize(ctx, head, nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	start := time.Now()
	cut, err := r.Diff(ctx, &b, u.c3, head, DiffOptions{MaxBytes: 1 << 20, BigBytes: 8 << 20})
	if err != nil || cut {
		t.Fatalf("Diff: cut %v, %v", cut, err)
	}
	t.Logf("a diff with a 64 MiB blob took %v, %d bytes", time.Since(start), b.Len())
	got := b.String()
	want := fmt.Sprintf("codeboost: not diffed, a file over %d bytes: data/big.bin (0 -> %d bytes)\n", 8<<20, 64<<20)
	if !strings.HasPrefix(got, want) {
		t.Fatalf("diff starts %.300q, want the summary %q", got, want)
	}
	if !strings.Contains(got, "+a small edit") || strings.Contains(got, "b/data/big.bin") {
		t.Fatalf("diff after the summary:\n%.2000s", got)
	}
	// Back again: the deletion is summarized with its old size.
	b.Reset()
	if _, err := r.Diff(ctx, &b, head, u.c3, DiffOptions{MaxBytes: 1 << 20, BigBytes: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("a file over %d bytes: data/big.bin (%d -> 0 bytes)\n", 8<<20, 64<<20); !strings.Contains(b.String(), want) {
		t.Fatalf("reverse diff %.300q lacks %q", b.String(), want)
	}
	// A cut inside the summary lines writes exactly the bound.
	b.Reset()
	if cut, err := r.Diff(ctx, &b, u.c3, head, DiffOptions{MaxBytes: 20, BigBytes: 8 << 20}); err != nil || !cut || b.String() != want[:20] {
		t.Fatalf("a cut summary: %q, cut %v, %v", b.String(), cut, err)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/codeboost/codeboost/dadapter/procgroup"
)

// DiffOptions bound a diff (Repo.Diff).
type DiffOptions struct {
	// MaxBytes is the most Diff writes; past it the diff is cut and git
	// is stopped.
	MaxBytes int
	// BigBytes is the blob size over which a changed path is summarized
	// in one line instead of diffed (either side; 0: none is). git never
	// reads such a blob: a diff of it would hold it whole in memory (and
	// deflate it, with --binary), whatever core.bigFileThreshold says.
	BigBytes int64
}

// Diff writes `git diff --binary from to` between two commits in the
// runner-owned repository to w, for the review screen's view of runner
// commits, streamed: nothing is held but a pipe's buffer. First comes one
// line per changed path whose blob is over opt.BigBytes on either side,
//
//	codeboost: not diffed, a file over N bytes: PATH (OLD -> NEW bytes)
//
// (a newline in PATH shows as "?"), then the diff of every other path. The
// sizes come from the objects' headers (cat-file --batch-check) and the
// large paths are excluded from the diff by pathspec, so git reads none of
// them. At most opt.MaxBytes are written; when there is more, truncated is
// set and git is stopped, so a huge diff costs little more than that. A
// write to w that fails stops git too, and is the error.
func (r *Repo) Diff(ctx context.Context, w io.Writer, from, to string, opt DiffOptions) (truncated bool, err error) {
	if err := checkCommit("from", from); err != nil {
		return false, err
	}
	if err := checkCommit("to", to); err != nil {
		return false, err
	}
	if opt.MaxBytes < 0 || opt.BigBytes < 0 {
		return false, fmt.Errorf("gitrepo: diff: a negative bound (%d bytes, big %d bytes)", opt.MaxBytes, opt.BigBytes)
	}
	truncated, err = r.diff(ctx, w, from, to, opt)
	if err != nil {
		return false, fmt.Errorf("gitrepo: diff %s %s: %w", from, to, err)
	}
	return truncated, nil
}

func (r *Repo) diff(ctx context.Context, w io.Writer, from, to string, opt DiffOptions) (bool, error) {
	var big []bigPath
	if opt.BigBytes > 0 {
		var err error
		if big, err = r.bigPaths(ctx, from, to, opt.BigBytes); err != nil {
			return false, err
		}
	}
	var notes bytes.Buffer
	exclude := []string{}
	excluded := 0
	for _, b := range big {
		fmt.Fprintf(&notes, "codeboost: not diffed, a file over %d bytes: %s (%d -> %d bytes)\n",
			opt.BigBytes, strings.ReplaceAll(b.path, "\n", "?"), b.old, b.new)
		spec := ":(exclude,literal)" + b.path
		excluded += len(spec)
		exclude = append(exclude, spec)
	}
	n := min(notes.Len(), opt.MaxBytes)
	if _, err := w.Write(notes.Bytes()[:n]); err != nil {
		return false, fmt.Errorf("write: %w", err)
	}
	if n < notes.Len() {
		return true, nil
	}
	if excluded > maxExcludeBytes {
		// More large paths than a command line holds: their lines are
		// all the view shows.
		line := "codeboost: not diffed, the other files: too many large files to leave out\n"
		_, err := io.WriteString(w, line[:min(len(line), opt.MaxBytes-n)])
		return len(line) > opt.MaxBytes-n, err
	}
	return copyBounded(ctx, r.path, w, opt.MaxBytes-n, func(ctx context.Context, fifo string) error {
		args := append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--binary",
			"--output=" + fifo, from, to, "--"}, exclude...)
		res := r.start(ctx, bareAt(r.path), nil, args...)
		return failure(ctx, "diff", res)
	})
}

// maxExcludeBytes bounds the pathspecs that leave large paths out of a
// diff, well within a command line's limit.
const maxExcludeBytes = 256 << 10

// maxRawBytes bounds the raw listing of a diff's changed paths.
const maxRawBytes = 32 << 20

// bigPath is a changed path with a blob over the bound, and its sizes
// (0 where the side has no blob).
type bigPath struct {
	path     string
	old, new int64
}

// bigPaths lists the paths from..to changes whose blob, on either side, is
// over limit. The changed paths and their blobs come from a raw diff (no
// renames, so both sides of a move are listed), their sizes from the
// objects' headers: no blob is read.
func (r *Repo) bigPaths(ctx context.Context, from, to string, limit int64) ([]bigPath, error) {
	raw, over, err := readBounded(ctx, r.path, maxRawBytes, func(ctx context.Context, fifo string) error {
		res := r.start(ctx, bareAt(r.path), nil, "diff", "--raw", "-z", "--no-renames", "--no-abbrev",
			"--output="+fifo, from, to, "--")
		return failure(ctx, "diff --raw", res)
	})
	if err != nil {
		return nil, err
	}
	if over {
		return nil, fmt.Errorf("the list of changed paths is over %d bytes", maxRawBytes)
	}
	type change struct {
		path     string
		old, new string // blob IDs; "" for no blob
	}
	var changes []change
	var ids []string
	blob := func(mode, id string) string {
		if mode == "160000" || strings.Trim(id, "0") == "" {
			return "" // a gitlink, or no object on this side
		}
		ids = append(ids, id)
		return id
	}
	for rest := raw; len(rest) > 0; {
		meta, after, ok := bytes.Cut(rest, []byte{0})
		path, next, ok2 := bytes.Cut(after, []byte{0})
		f := strings.Fields(strings.TrimPrefix(string(meta), ":"))
		if !ok || !ok2 || len(f) != 5 {
			return nil, fmt.Errorf("git diff --raw wrote %.80q, not a record", meta)
		}
		changes = append(changes, change{path: string(path), old: blob(f[0], f[2]), new: blob(f[1], f[3])})
		rest = next
	}
	sizes, err := r.blobSizes(ctx, ids)
	if err != nil {
		return nil, err
	}
	var big []bigPath
	for _, c := range changes {
		b := bigPath{path: c.path, old: sizes[c.old], new: sizes[c.new]}
		if b.old > limit || b.new > limit {
			big = append(big, b)
		}
	}
	return big, nil
}

// sizeBatch is how many objects one cat-file call is asked about: its
// answers, a size a line, stay well inside the standard output procgroup
// keeps (64 KiB).
const sizeBatch = 2048

// blobSizes reads the sizes of objects by ID from their headers (git
// cat-file --batch-check), which reads no object's content.
func (r *Repo) blobSizes(ctx context.Context, ids []string) (map[string]int64, error) {
	sizes := map[string]int64{"": 0}
	if len(ids) == 0 {
		return sizes, nil
	}
	tmp, err := os.MkdirTemp(r.path, "sizes-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for len(ids) > 0 {
		batch := ids[:min(len(ids), sizeBatch)]
		ids = ids[len(batch):]
		in := filepath.Join(tmp, "ids")
		if err := os.WriteFile(in, []byte(strings.Join(batch, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		f, err := os.Open(in)
		if err != nil {
			return nil, err
		}
		res := r.startIn(ctx, bareAt(r.path), f, nil, "cat-file", "--batch-check=%(objectsize)")
		f.Close()
		if err := failure(ctx, "cat-file", res); err != nil {
			return nil, err
		}
		lines := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n")
		if len(lines) != len(batch) {
			return nil, fmt.Errorf("git cat-file answered %d lines for %d objects", len(lines), len(batch))
		}
		for i, l := range lines {
			n, err := strconv.ParseInt(l, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("git cat-file: object %s: %.80q", batch[i], l)
			}
			sizes[batch[i]] = n
		}
	}
	return sizes, nil
}

// readBounded is copyBounded into memory: at most maxBytes of what write
// wrote, and whether there was more.
func readBounded(ctx context.Context, dir string, maxBytes int, write func(ctx context.Context, fifo string) error) ([]byte, bool, error) {
	var b bytes.Buffer
	cut, err := copyBounded(ctx, dir, &b, maxBytes, write)
	if err != nil {
		return nil, false, err
	}
	return b.Bytes(), cut, nil
}

// errCut is capWriter's answer past its limit.
var errCut = errors.New("cut at the limit")

// capWriter passes on at most n bytes, then answers errCut.
type capWriter struct {
	w io.Writer
	n int
}

func (c *capWriter) Write(p []byte) (int, error) {
	if len(p) <= c.n {
		n, err := c.w.Write(p)
		c.n -= n
		return n, err
	}
	n, err := c.w.Write(p[:c.n])
	c.n -= n
	if err == nil {
		err = errCut
	}
	return n, err
}

// copyBounded runs write, a call that writes into the FIFO it is given,
// and copies at most maxBytes of what it wrote to w. When there is more,
// or w fails, it closes the FIFO, so the writer's next write fails, and
// ends the call's ctx, so its process group is stopped; write's error is
// then ignored, since a stopped call fails by design, unless the group
// outlived the stop. cut reports more than maxBytes; w's failure is the
// error.
//
// The output goes through a FIFO (git's --output) rather than standard
// output because procgroup keeps only the first 64 KiB of standard output
// and drains the rest, which would let the writer run to its end.
func copyBounded(ctx context.Context, dir string, w io.Writer, maxBytes int, write func(ctx context.Context, fifo string) error) (cut bool, err error) {
	tmp, err := os.MkdirTemp(dir, "diff-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	fifo := filepath.Join(tmp, "out")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return false, err
	}
	r, keep, err := openFIFO(fifo)
	if err != nil {
		return false, err
	}
	defer r.Close()

	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	type copied struct {
		cut  bool
		werr error // w's
		rerr error // the FIFO's
	}
	done := make(chan copied, 1)
	go func() {
		cw := &capWriter{w: w, n: maxBytes}
		buf := make([]byte, 32<<10)
		var c copied
		for {
			n, rerr := r.Read(buf)
			if n > 0 {
				if _, err := cw.Write(buf[:n]); err != nil {
					c.cut, c.werr = err == errCut, err
					break
				}
			}
			if rerr != nil {
				if rerr != io.EOF {
					c.rerr = rerr
				}
				break
			}
		}
		if c.werr != nil {
			r.Close()
			stop()
		}
		done <- c
	}()
	werr := write(callCtx, fifo)
	// The writer is gone: without keep, the reader now reaches the end of
	// what was written.
	keep.Close()
	got := <-done
	if got.werr != nil {
		if errors.Is(werr, procgroup.ErrGroupAlive) {
			return false, werr
		}
		if got.cut {
			return true, nil
		}
		return false, fmt.Errorf("write: %w", got.werr)
	}
	if werr != nil {
		return false, werr
	}
	if got.rerr != nil {
		return false, fmt.Errorf("read: %w", got.rerr)
	}
	return false, nil
}

// openFIFO opens both ends of a FIFO without blocking: the read end first,
// with O_NONBLOCK (Go then polls it), which lets the write end open at
// once. keep is held until the writer has exited, so that reads wait for
// it instead of seeing end of file before it has opened the FIFO.
func openFIFO(path string) (r, keep *os.File, err error) {
	r, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	keep, err = os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, keep, nil
}

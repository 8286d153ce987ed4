package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"syscall"

	"github.com/codeboost/codeboost/dadapter/procgroup"
)

// Diff is `git diff --binary from to` between two commits in the
// runner-owned repository, for the review screen's view of runner commits.
// At most maxBytes are returned; when the diff is longer, truncated is set,
// reading stops and git is stopped, so a huge diff costs little more than
// maxBytes.
func (r *Repo) Diff(ctx context.Context, from, to string, maxBytes int) (diff []byte, truncated bool, err error) {
	if err := checkCommit("from", from); err != nil {
		return nil, false, err
	}
	if err := checkCommit("to", to); err != nil {
		return nil, false, err
	}
	if maxBytes < 0 {
		return nil, false, fmt.Errorf("gitrepo: diff: maxBytes %d is negative", maxBytes)
	}
	diff, truncated, err = readBounded(ctx, r.path, maxBytes, func(ctx context.Context, fifo string) error {
		res := r.start(ctx, bareAt(r.path), nil, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--binary",
			"--output="+fifo, from, to, "--")
		return failure(ctx, "diff", res)
	})
	if err != nil {
		return nil, false, fmt.Errorf("gitrepo: diff %s %s: %w", from, to, err)
	}
	return diff, truncated, nil
}

// readBounded runs write, a call that writes into the FIFO it is given, and
// returns at most maxBytes of what it wrote. When there is more, it closes
// the FIFO, so the writer's next write fails, and ends the call's ctx, so
// its process group is stopped; write's error is then ignored, since a
// stopped call fails by design, unless the group outlived the stop.
//
// The output goes through a FIFO (git's --output) rather than standard
// output because procgroup keeps only the first 64 KiB of standard output
// and drains the rest, which would let the writer run to its end.
func readBounded(ctx context.Context, dir string, maxBytes int, write func(ctx context.Context, fifo string) error) ([]byte, bool, error) {
	tmp, err := os.MkdirTemp(dir, "diff-")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(tmp)
	fifo := filepath.Join(tmp, "out")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return nil, false, err
	}
	r, keep, err := openFIFO(fifo)
	if err != nil {
		return nil, false, err
	}
	defer r.Close()

	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	limit := int64(maxBytes)
	if limit < math.MaxInt64 {
		limit++ // one byte more than maxBytes tells a cut from an exact fit
	}
	type read struct {
		data []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(r, limit))
		if int64(len(data)) == limit && len(data) > maxBytes {
			r.Close()
			stop()
		}
		done <- read{data, err}
	}()
	werr := write(callCtx, fifo)
	// The writer is gone: without keep, the reader now reaches the end of
	// what was written.
	keep.Close()
	got := <-done
	if len(got.data) > maxBytes {
		if errors.Is(werr, procgroup.ErrGroupAlive) {
			return nil, false, werr
		}
		return got.data[:maxBytes], true, nil
	}
	if werr != nil {
		return nil, false, werr
	}
	if got.err != nil {
		return nil, false, fmt.Errorf("read: %w", got.err)
	}
	return got.data, false, nil
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

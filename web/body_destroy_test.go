package web

import (
	"errors"
	"io"
	"testing"
)

// lastReadRC is a request body whose last read is still blocked when step
// 3 destroys the request, and returns the body's end (its last bytes and
// io.EOF) only once it is closed: the read lost the race with destroy.
type lastReadRC struct {
	reading, closed chan struct{}
}

func (r *lastReadRC) Read(p []byte) (int, error) {
	close(r.reading)
	<-r.closed
	return copy(p, `"}`), io.EOF
}

func (r *lastReadRC) Close() error { close(r.closed); return nil }

// TestReadThatEndsAfterDestroyIsDestroyed: step 3 destroys a request still
// reading its body. A read that was in flight and then returns the body's
// end must still fail: the request was destroyed, and a handler that got
// a whole body would go on to act (a write landing before the write gate
// closes) for a request shutdown already ended.
func TestReadThatEndsAfterDestroyIsDestroyed(t *testing.T) {
	rc := &lastReadRC{reading: make(chan struct{}), closed: make(chan struct{})}
	b := &body{rc: rc, declared: true}
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	go func() {
		n, err := b.Read(make([]byte, 16))
		got <- result{n, err}
	}()
	<-rc.reading
	b.destroy() // closes rc, which ends the blocked read with the body's end
	r := <-got
	if !errors.Is(r.err, errDestroyed) {
		t.Fatalf("the read in flight at destroy returned %d bytes, %v; want errDestroyed", r.n, r.err)
	}
	if !b.unread() {
		t.Fatal("a destroyed body counts as read to its end")
	}
	if n, err := b.Read(make([]byte, 16)); n != 0 || !errors.Is(err, errDestroyed) {
		t.Fatalf("a read after destroy: %d, %v; want errDestroyed", n, err)
	}
}

package web

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// These tests serve over real loopback TCP, where the kernel's buffers and
// net/http's own handling of unread bodies are part of what is tested: the
// in-memory listener of drain_test.go has neither.

// tcpFixture is a Server on 127.0.0.1 with the sim world behind it.
type tcpFixture struct {
	*fixture
	addr   string
	served chan error
}

func newTCPFixture(t *testing.T) *tcpFixture {
	f := newServedFixture(t)
	srv := f.srv
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &tcpFixture{fixture: f, addr: l.Addr().String(), served: make(chan error, 1)}
	go func() { c.served <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.SetStopping()
		srv.Close()
		if err := <-c.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

func (c *tcpFixture) dial(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// readReplyWithin reads one reply from r, which must arrive within d.
func readReplyWithin(t *testing.T, conn net.Conn, r *bufio.Reader, d time.Duration) (*http.Response, string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	defer conn.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no reply within %v: %v", d, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the reply's body: %v", err)
	}
	return resp, string(b)
}

// closedWithin asserts that the server closes conn within d: a read ends
// (EOF, or a reset) instead of timing out.
func closedWithin(t *testing.T, conn net.Conn, r *bufio.Reader, d time.Duration) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Errorf("the connection is still open %v after the reply", d)
	}
}

// TestDeclaredOversizedBodyRefusedUnread: a POST declaring a body of 100 GB
// is answered 413 with Connection: close at once, without the client
// sending a byte of it, and the connection closes; nothing is stored.
// Before issue 19 the server waited to read (and discard) the whole body.
//
// kills: mutant/http-413-reads-a-declared-body
func TestDeclaredOversizedBodyRefusedUnread(t *testing.T) {
	c := newTCPFixture(t)
	conn := c.dial(t)
	fmt.Fprintf(conn, "POST /api/runner HTTP/1.1\r\nHost: codeboost\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, body := readReplyWithin(t, conn, r, time.Second)
	if resp.StatusCode != 413 || !resp.Close || !strings.Contains(body, codeTooLarge) {
		t.Fatalf("declared 100 GB: %d close=%v %s; want 413 with Connection: close", resp.StatusCode, resp.Close, body)
	}
	closedWithin(t, conn, r, 5*time.Second)
	if n := c.actionCount(); n != 0 {
		t.Errorf("%d user actions after a refused body", n)
	}
}

// TestChunkedOversizedBodyCut: a chunked body with no declared length that
// keeps coming is cut once it passes its limit: 413 with Connection: close
// while the client is still sending, and then the connection closes, so the
// client's writes fail. Nothing is stored. Before issue 19 the server read
// and discarded it until the request timeout.
//
// kills: mutant/http-413-drains-the-body
func TestChunkedOversizedBodyCut(t *testing.T) {
	c := newTCPFixture(t)
	conn := c.dial(t)
	fmt.Fprintf(conn, "POST /api/runner HTTP/1.1\r\nHost: codeboost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 4096, strings.Repeat(" ", 4096))
	stop := make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		// It sends for at most a minute (about 1 GB would be more than
		// the kernel's buffers hold): past that, the server read it all.
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			select {
			case <-stop:
				sent <- nil
				return
			default:
			}
			if _, err := io.WriteString(conn, chunk); err != nil {
				sent <- err
				return
			}
		}
		sent <- errors.New("the server read a minute of body without answering")
	}()
	defer close(stop)
	r := bufio.NewReader(conn)
	resp, body := readReplyWithin(t, conn, r, 5*time.Second)
	if resp.StatusCode != 413 || !resp.Close || !strings.Contains(body, codeTooLarge) {
		t.Fatalf("chunked body over the limit: %d close=%v %s; want 413 with Connection: close", resp.StatusCode, resp.Close, body)
	}
	select {
	case err := <-sent:
		if err == nil {
			t.Fatal("the client stopped sending")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client can still send 10 s after the 413: the server reads the rest of the body")
	}
	if n := c.actionCount(); n != 0 {
		t.Errorf("%d user actions after a refused body", n)
	}
}

// TestStoppingAnswers503OnEveryConnection: after step 1 and until step 3,
// a request on a new connection and the next request on a kept-alive one
// are both answered 503 "The review server is shutting down." with
// Connection: close, while an admitted note whose body is still arriving
// drains normally (saved, 200). Before issue 19 step 1 closed the idle
// kept-alive connection without a reply and the drain closed the listener,
// so the new connection was refused.
//
// kills: mutant/http-stopping-closes-idle-connections mutant/http-drain-closes-the-listener mutant/http-stopping-keeps-connections
func TestStoppingAnswers503OnEveryConnection(t *testing.T) {
	c := newTCPFixture(t)
	kept := c.dial(t)
	keptR := bufio.NewReader(kept)
	fmt.Fprintf(kept, "GET /api/runner?task=demo HTTP/1.1\r\nHost: codeboost\r\n\r\n")
	if resp, body := readReplyWithin(t, kept, keptR, 5*time.Second); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("the first GET: %d close=%v %.200s", resp.StatusCode, resp.Close, body)
	}

	note := fmt.Sprintf(`{"task":"demo","action":"change-note","item":1,"text":"keep it","actionId":"%s"}`, c.actionID())
	admitted := c.dial(t)
	fmt.Fprintf(admitted, "POST /api/review HTTP/1.1\r\nHost: codeboost\r\nContent-Length: %d\r\n\r\n%s", len(note), note[:10])
	waitFor(t, "the note to be admitted", func() bool { return c.srv.Active() == 1 })

	c.srv.SetStopping()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-c.srv.BeginDrain()
		c.srv.AbortRequests()
		c.w.Store.CloseWriteGate()
		<-c.srv.RequestsEnded()
	}()

	fmt.Fprintf(kept, "GET /api/runner?task=demo HTTP/1.1\r\nHost: codeboost\r\n\r\n")
	resp, body := readReplyWithin(t, kept, keptR, 5*time.Second)
	if resp.StatusCode != 503 || !resp.Close || !strings.Contains(body, words.ServerShuttingDown) {
		t.Errorf("the kept-alive connection's next request: %d close=%v %s", resp.StatusCode, resp.Close, body)
	}
	closedWithin(t, kept, keptR, 5*time.Second)

	late, err := net.Dial("tcp", c.addr)
	if err != nil {
		t.Fatalf("a new connection during the drain is refused: %v", err)
	}
	defer late.Close()
	lateR := bufio.NewReader(late)
	fmt.Fprintf(late, "POST /api/runner HTTP/1.1\r\nHost: codeboost\r\nContent-Length: 2\r\n\r\n{}")
	resp, body = readReplyWithin(t, late, lateR, 5*time.Second)
	if resp.StatusCode != 503 || !resp.Close || !strings.Contains(body, words.ServerShuttingDown) {
		t.Errorf("a new connection's request: %d close=%v %s", resp.StatusCode, resp.Close, body)
	}

	select {
	case <-drained:
		t.Fatal("the drain ended with the note still arriving")
	default:
	}
	io.WriteString(admitted, note[10:])
	admittedR := bufio.NewReader(admitted)
	resp, body = readReplyWithin(t, admitted, admittedR, 5*time.Second)
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("the admitted note: %d close=%v %s; want 200, closing its connection", resp.StatusCode, resp.Close, body)
	}
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("the drain did not end after the admitted note")
	}
	if _, err := net.DialTimeout("tcp", c.addr, time.Second); err == nil {
		t.Errorf("step 3 left the listener open")
	}
	var notes int
	if err := c.w.Store.View(func(tx *store.Tx) error { ns, err := tx.Notes(c.key); notes = len(ns); return err }); err != nil {
		t.Fatal(err)
	}
	if notes != 1 || c.actionCount() != 1 {
		t.Errorf("%d notes, %d actions; want the drained note alone", notes, c.actionCount())
	}
}

// waitFor polls cond (a server's state, which has no event to wait on)
// for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestServeAfterShutdownReturnsAtOnce: a shutdown can end before the
// goroutine that serves got to run (a signal right after startup). Serve
// then returns nil without serving: started after Close, it would hold
// the listener and a goroutine that no step ends.
func TestServeAfterShutdownReturnsAtOnce(t *testing.T) {
	f := newServedFixture(t)
	f.srv.SetStopping()
	f.srv.AbortRequests()
	f.srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(l) }()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		l.Close() // ends the Serve that should not have started
		t.Fatal("Serve after shutdown served instead of returning")
	}
}

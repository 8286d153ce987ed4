package web

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// These tests are about connections and bodies, where net/http's own
// goroutines and timers run: they serve over an in-memory listener inside a
// testing/synctest bubble, so time (the drain limit on the real clock, the
// server's keep-alive timers) is the bubble's and every wait is exact.
// The scenarios (R005, R031, R032) drive the same steps in-process.

// pipeListener is a net.Listener whose connections are net.Pipe pairs.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- server
	return client
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// connFixture is a served Server in a bubble, with the sim world behind it.
type connFixture struct {
	*fixture
	l      *pipeListener
	served chan error
}

// newServedFixture is a fixture whose Server reads the real clock, as one
// serving connections does (the drain and TCP fixtures both serve it).
func newServedFixture(t *testing.T) *fixture {
	f := newFixture(t, 1)
	srv, err := New(Options{Runner: f.w.Runner, Store: f.w.Store, Clock: runner.NewRealClock(),
		Tasks: []Task{{Name: "demo", Identity: f.srv.tasks["demo"].Identity}}})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	return f
}

func newConnFixture(t *testing.T) *connFixture {
	f := newServedFixture(t)
	srv := f.srv
	c := &connFixture{fixture: f, l: newPipeListener(), served: make(chan error, 1)}
	go func() { c.served <- srv.Serve(c.l) }()
	// A failed test still ends every goroutine of the bubble.
	t.Cleanup(func() { srv.SetStopping(); srv.Close() })
	synctest.Wait()
	return c
}

// shutdown runs the server's steps 1 to 3 in order, as app does, and
// closes done when they end.
func (c *connFixture) shutdown() (done chan struct{}) {
	c.srv.SetStopping()
	return c.drain()
}

// drain runs steps 2 and 3 after step 1 ran.
func (c *connFixture) drain() (done chan struct{}) {
	done = make(chan struct{})
	go func() {
		defer close(done)
		<-c.srv.BeginDrain()
		c.srv.AbortRequests()
		c.w.Store.CloseWriteGate()
		<-c.srv.RequestsEnded()
	}()
	return done
}

func (c *connFixture) close(t *testing.T) {
	c.srv.Close()
	if err := <-c.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// readReply reads one HTTP reply from conn, or the error that ended it.
func readReply(conn net.Conn) (*http.Response, string, error) {
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// TestDrainDestroysHalfSentBody is R005 over a connection: a start whose
// body stops half-way is waited for up to the drain limit and no longer;
// then the request is destroyed (its connection closes with no reply) and
// no attempt exists.
// It fails under mutant/http-body-not-destroyed and
// mutant/http-drain-ignores-its-limit too; the bite test runs R005 for
// them, which builds one test binary instead of two.
func TestDrainDestroysHalfSentBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConnFixture(t)
		c.approveAll(1)
		st := c.status()
		body := fmt.Sprintf(`{"task":"demo","action":"start","expectedStateVersion":%d,"expectedReviewVersion":%d,"actionId":"%s"}`,
			st.StateVersion, st.ReviewVersion, c.actionID())
		conn := c.l.dial()
		defer conn.Close()
		go fmt.Fprintf(conn, "POST /api/runner HTTP/1.1\r\nHost: codeboost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)/2])
		synctest.Wait()
		if n := c.srv.Active(); n != 1 {
			t.Fatalf("%d requests active, want the half-sent one", n)
		}

		done := c.shutdown()
		time.Sleep(DrainLimit - time.Millisecond)
		synctest.Wait()
		if isClosed(done) || c.srv.Active() != 1 {
			t.Fatalf("shutdown did not wait for the admitted request up to the drain limit")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !isClosed(done) {
			t.Fatalf("shutdown still waits after the drain limit")
		}
		if _, _, err := readReply(conn); err == nil {
			t.Errorf("the destroyed request was answered")
		}
		if n := c.attempts(); n != 0 {
			t.Errorf("%d attempts after a destroyed start", n)
		}
		c.close(t)
	})
}

// TestShutdownClosesIdleConnections is R032 over a connection: a 405 sent
// before its body was read says Connection: close; a GET's connection is
// kept alive; and shutdown then ends at once, closing the idle keep-alive
// connection at step 3 instead of waiting for its timeout. (A body over
// its limit closes its connection too: tcp_test.go.)
// It fails under mutant/http-early-reply-keeps-connection too; the bite
// test runs R032 for it.
func TestShutdownClosesIdleConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConnFixture(t)
		big := `{"task":"demo"}` + strings.Repeat(" ", maxRunnerBody*3)

		conn := c.l.dial()
		defer conn.Close()
		go fmt.Fprintf(conn, "GET /api/runner?task=demo HTTP/1.1\r\nHost: codeboost\r\n\r\n")
		resp, _, err := readReply(conn)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("GET: %d, close=%v; want 200 on a connection kept alive", resp.StatusCode, resp.Close)
		}

		refused := c.l.dial()
		defer refused.Close()
		go fmt.Fprintf(refused, "PUT /api/runner HTTP/1.1\r\nHost: codeboost\r\nContent-Length: %d\r\n\r\n%s", len(big), big[:100])
		resp, _, err = readReply(refused)
		if err != nil || resp.StatusCode != 405 || !resp.Close {
			t.Fatalf("405 before the body was read: %v %+v; want Connection: close", err, resp)
		}

		start := time.Now()
		done := c.shutdown()
		<-done
		if took := time.Since(start); took > time.Second {
			t.Errorf("shutdown took %v with only idle connections", took)
		}
		synctest.Wait()
		conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("the idle keep-alive connection is still open after the drain: %v", err)
		}
		c.close(t)
	})
}

// TestDrainLetsAdmittedWritesLand: a note admitted before stopping whose
// body completes during the drain is saved and answered; a request arriving
// after stopping is 503 and records nothing.
// It fails under mutant/http-stopping-admits and
// mutant/http-drain-ignores-requests too; the bite test runs R004 and R031
// for them.
func TestDrainLetsAdmittedWritesLand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConnFixture(t)
		body := fmt.Sprintf(`{"task":"demo","action":"change-note","item":1,"text":"keep it","actionId":"%s"}`, c.actionID())
		conn := c.l.dial()
		defer conn.Close()
		go fmt.Fprintf(conn, "POST /api/review HTTP/1.1\r\nHost: codeboost\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
		synctest.Wait()

		// A request arriving on a new connection after step 1 (the
		// listener stays open until step 3) is 503, and its connection
		// closes after the reply.
		c.srv.SetStopping()
		late := c.l.dial()
		defer late.Close()
		go fmt.Fprintf(late, "GET /api/runner HTTP/1.1\r\nHost: codeboost\r\n\r\n")
		resp, text, err := readReply(late)
		if err != nil || resp.StatusCode != 503 || !strings.Contains(text, words.ServerShuttingDown) || !resp.Close {
			t.Fatalf("a request after stopping: %v %+v %s", err, resp, text)
		}
		done := c.drain()
		synctest.Wait()
		if isClosed(done) || c.srv.Active() != 1 {
			t.Fatalf("the drain did not wait for the admitted note")
		}

		go io.WriteString(conn, body[10:])
		resp, note, err := readReply(conn)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("the admitted note: %v %v %s", err, resp, note)
		}
		<-done
		var notes int
		if err := c.w.Store.View(func(tx *store.Tx) error { ns, err := tx.Notes(c.key); notes = len(ns); return err }); err != nil {
			t.Fatal(err)
		}
		if notes != 1 || c.actionCount() != 1 {
			t.Errorf("%d notes, %d actions; want the drained note alone", notes, c.actionCount())
		}
		c.close(t)
	})
}

// TestStalledBodyTimesOut: outside shutdown too, a body that stops
// arriving ends its request at the request timeout; nothing is stored.
func TestStalledBodyTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConnFixture(t)
		body := fmt.Sprintf(`{"task":"demo","action":"change-note","item":1,"text":"x","actionId":"%s"}`, c.actionID())
		conn := c.l.dial()
		defer conn.Close()
		go fmt.Fprintf(conn, "POST /api/review HTTP/1.1\r\nHost: codeboost\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
		synctest.Wait()
		time.Sleep(RequestTimeout - time.Millisecond)
		synctest.Wait()
		if c.srv.Active() != 1 {
			t.Fatalf("the request ended before the request timeout")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := c.srv.Active(); n != 0 {
			t.Fatalf("%d requests still active after the request timeout", n)
		}
		if c.actionCount() != 0 {
			t.Errorf("a timed-out request stored something")
		}
		c.close(t)
	})
}

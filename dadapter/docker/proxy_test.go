package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// proxy stands between an adapter and the real engine, on a unix socket of
// its own, so that a test can make the engine hang or vanish for that
// adapter alone while the test's own client still reaches it. It works on
// connections, not requests: its clients never keep a connection alive
// (newClient), so each request arrives on a connection of its own and is
// seen, stalled, withheld or dropped on its own.
type proxy struct {
	t      *testing.T
	net    string // the real engine's network: "unix" or "tcp"
	engine string // and its address there: the socket's path, or host:port
	ln     net.Listener
	wg     sync.WaitGroup

	mu       sync.Mutex
	stall    func(request string) bool   // nil: forward everything
	withhold func(request string) bool   // nil: pass every answer on
	cut      func(request string) bool   // nil: cut no request
	fail     func(request string) string // nil, or "": forward; else the engine's error message
	dropped  bool
	conns    map[net.Conn]struct{} // every connection open now, both sides
	requests []request             // every request seen, in order
}

// request is one request the proxy saw.
type request struct {
	line string // "DELETE /v1.41/containers/… HTTP/1.1"
	at   time.Time
	held bool // stalled, never forwarded
}

// newProxy listens in a fresh directory and forwards to the engine cli
// talks to, on a unix socket or over plain TCP (DOCKER_HOST=tcp://…): it
// forwards bytes, so it cannot stand in a TLS session. It stops when the
// test ends. Call it, and newClient, before the test makes anything on
// the engine: either may end the test, and a test that ends early leaves
// what it made but had not handed to a cleanup (a crashed runner's
// leftovers, say), failing every later test's leak check.
func newProxy(t *testing.T, cli *client.Client) *proxy {
	t.Helper()
	u, err := url.Parse(cli.DaemonHost())
	if err != nil {
		t.Fatalf("the engine's address %q: %v", cli.DaemonHost(), err)
	}
	p := &proxy{t: t, net: u.Scheme, conns: map[net.Conn]struct{}{}}
	switch {
	case u.Scheme == "unix":
		p.engine = u.Path
	case u.Scheme == "tcp" && os.Getenv("DOCKER_TLS_VERIFY") == "":
		p.engine = u.Host
	default:
		t.Fatalf("the proxy forwards to an engine on a unix socket or over plain TCP, not %s", cli.DaemonHost())
	}
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "e.sock"))
	if err != nil {
		t.Fatal(err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// newClient is an engine client that goes through the proxy.
func (p *proxy) newClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(
		client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}),
		client.WithHost("unix://"+p.ln.Addr().String()),
		client.WithScheme("http"), // a transport of our own would otherwise be taken for TLS
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	// Negotiate now, as production's Open does: a negotiation left for
	// the first request would hang with it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatalf("ping through the proxy: %v", err)
	}
	return cli
}

// Stall makes the engine hang for requests whose request line ("DELETE
// /v1.41/containers/…") match reports true: they are read and held open,
// never forwarded, until the client gives up. A nil match stalls them all.
// Connections already forwarded go on.
func (p *proxy) Stall(match func(request string) bool) {
	if match == nil {
		match = func(string) bool { return true }
	}
	p.mu.Lock()
	p.stall = match
	p.mu.Unlock()
}

// Resume forwards new requests again.
func (p *proxy) Resume() {
	p.mu.Lock()
	p.stall = nil
	p.mu.Unlock()
}

// Withhold makes the engine slow to answer requests whose request line
// match reports true: they are forwarded, so the engine carries them out,
// but their answers are held back until the client gives up (a loaded
// engine, whose answer comes after the caller stopped waiting).
func (p *proxy) Withhold(match func(request string) bool) {
	p.mu.Lock()
	p.withhold = match
	p.mu.Unlock()
}

// Cut makes the engine fail requests whose request line match reports
// true: each is read and its connection closed at once, without an
// answer and without reaching the engine (an engine that broke off the
// call). Other requests go on.
func (p *proxy) Cut(match func(request string) bool) {
	p.mu.Lock()
	p.cut = match
	p.mu.Unlock()
}

// Fail makes the engine refuse requests for which message returns words:
// each is read whole and answered 500 with those words as the engine's
// error message, without reaching the engine (an engine that refused the
// call, as a full disk or a daemon in trouble does). Other requests go on.
func (p *proxy) Fail(message func(request string) string) {
	p.mu.Lock()
	p.fail = message
	p.mu.Unlock()
}

// Drop makes the engine unreachable: every connection open now is closed,
// the streams already forwarded included, and every new one is closed as
// soon as it is accepted.
func (p *proxy) Drop() {
	p.mu.Lock()
	p.dropped = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Held lists the requests stalled so far.
func (p *proxy) Held() []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var held []request
	for _, r := range p.requests {
		if r.held {
			held = append(held, r)
		}
	}
	return held
}

// awaitSetup waits until the adapter's setup has registered its wait for
// the agent's exit (the last call of setup) and the engine has had a
// moment to acknowledge it: from then on the agent's output stream and its
// wait are connections the proxy already forwards.
func (p *proxy) awaitSetup(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !p.saw("/wait?") {
		if time.Now().After(deadline) {
			t.Fatal("the adapter did not wait for its agent within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
}

func (p *proxy) saw(path string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.requests {
		if !r.held && strings.Contains(r.line, path) {
			return true
		}
	}
	return false
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

// track records c as open; it reports false, having closed c, when the
// proxy drops everything.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *proxy) handle(c net.Conn) {
	if !p.track(c) {
		return
	}
	defer p.untrack(c)
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	held, withheld, cut, fail := p.record(strings.TrimSpace(line))
	if cut {
		return // untrack closes the connection, unanswered
	}
	if fail != "" {
		refuse(c, line, r, fail)
		return
	}
	if held {
		io.Copy(io.Discard, r) // until the client gives up, or Drop
		return
	}
	e, err := net.Dial(p.net, p.engine)
	if err != nil {
		return
	}
	if !p.track(e) {
		return
	}
	defer p.untrack(e)
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(e, io.MultiReader(strings.NewReader(line), r))
		done <- struct{}{}
	}()
	go func() {
		if withheld {
			io.Copy(io.Discard, e) // the answer, until the client gives up
		} else {
			io.Copy(c, e)
		}
		done <- struct{}{}
	}()
	<-done // either side ending ends the connection (a withheld answer's
	// end does not: the client has not given up)
	if withheld {
		<-done
	}
}

// record records the request and reports whether it is to be cut, held
// (never forwarded), its answer withheld, or failed with the words fail.
func (p *proxy) record(line string) (held, withheld, cut bool, fail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cut = p.cut != nil && p.cut(line)
	if !cut && p.fail != nil {
		fail = p.fail(line)
	}
	held = !cut && fail == "" && p.stall != nil && p.stall(line)
	withheld = !cut && fail == "" && !held && p.withhold != nil && p.withhold(line)
	p.requests = append(p.requests, request{line: line, at: time.Now(), held: held || fail != ""})
	return held, withheld, cut, fail
}

// refuse reads the request whose first line is line from r, body and all
// (a client may wait to finish sending before it reads an answer), and
// answers it 500 with message as the engine's error.
func refuse(c net.Conn, line string, r *bufio.Reader, message string) {
	req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(line), r)))
	if err != nil {
		return
	}
	io.Copy(io.Discard, req.Body)
	body, _ := json.Marshal(map[string]string{"message": message})
	fmt.Fprintf(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}

func (p *proxy) close() {
	p.ln.Close()
	p.Drop()
	waited := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		p.t.Error("the proxy's connections did not end")
	}
}

// isDelete matches requests that remove an object.
func isDelete(request string) bool { return strings.HasPrefix(request, "DELETE ") }

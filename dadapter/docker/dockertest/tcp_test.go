package dockertest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter/docker/dockertest"
)

// adapterPackage is the suite TestAdapterSuiteOverTCP runs again.
const adapterPackage = "github.com/codeboost/codeboost/dadapter/docker"

// TestAdapterSuiteOverTCP runs the Docker adapter's whole suite (a child
// `go test` of dadapter/docker) against the engine over TCP, as serve
// would talk to a remote engine (DOCKER_HOST=tcp://…): socat forwards a
// loopback port to the engine's socket. The adapter speaks only the
// engine's API, never its host paths, so nothing may depend on the unix
// socket: not the hijacked attach streams, not the tests' proxy. Every
// test of the child but those proxiedOnly names must pass, none skip (a skip there is a test that did
// not run over TCP; under -short the child runs -short too, and skips
// what that skips), and nothing labelled io.codeboost.* may be left.
//
// It holds no Docker lock while the child runs: the child's tests take it
// one by one, and would wait forever for this process. It takes the lock
// for its leak check, after the child.
func TestAdapterSuiteOverTCP(t *testing.T) {
	cli := dockertest.Client(t)
	u, err := url.Parse(cli.DaemonHost())
	if err != nil || u.Scheme != "unix" {
		t.Skipf("the engine is at %s, not on a unix socket: the suite already talks to it so", cli.DaemonHost())
	}
	// The child's own timeout comes first, so that it says which test
	// hung; killing it at this test's deadline is the last resort. Either
	// leaves what its running tests had made.
	ctx, timeout := context.Background(), 15*time.Minute
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-30*time.Second))
		defer cancel()
		timeout = min(timeout, time.Until(deadline)-time.Minute)
		if timeout < time.Minute {
			t.Fatalf("the suite over TCP takes minutes, and this test's deadline is %v away", time.Until(deadline).Round(time.Second))
		}
	}
	host := socat(t, u.Path)
	// Left out are the tests whose adapter talks only to a fault proxy
	// (proxy_test.go), on a unix socket of the proxy's own: DOCKER_HOST's
	// transport never reaches that adapter, only the proxy's forwarding,
	// which is the test's code. The engine-fault sweep (its 60-odd
	// attempts) and five proxied tests would add about three minutes to
	// every CI run, whose Docker suites are its long pole. One proxied
	// test stays (TestSettleWhenEngineUnreachable), so that the proxy's
	// own forwarding to a TCP engine keeps running here.
	args := []string{"test", "-count=1", "-json", "-timeout=" + timeout.Round(time.Second).String(), "-skip=" + proxiedOnly}
	if testing.Short() {
		args = append(args, "-short")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, adapterPackage)...) // go test puts its go first in PATH
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+host, dockertest.RequireEnv+"=1")
	// At this test's deadline, end go and the test binary it runs alike.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	t.Logf("%s: go %s %s (DOCKER_HOST=%s)", began.Format("15:04:05"), strings.Join(args, " "), adapterPackage, host)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := readTestEvents(t, out)
	err = cmd.Wait()
	took := time.Since(began).Round(time.Second)
	t.Logf("the suite over TCP: %d passed, %d failed, %d skipped in %v (%d of them waited for another process's Docker tests)",
		r.passed, len(r.failed), len(r.skipped), took, r.waited())
	if err != nil {
		t.Errorf("go test %s over TCP: %v\n%s%s", adapterPackage, err, r.unattached.String(), stderr.String())
	}
	for _, name := range r.failed {
		t.Errorf("%s failed over TCP:\n%s", name, r.output[name].String())
	}
	for _, name := range r.skipped {
		if testing.Short() {
			t.Logf("%s skipped (-short)", name)
			continue
		}
		t.Errorf("%s skipped over TCP:\n%s", name, r.output[name].String())
	}
	if r.passed == 0 {
		t.Errorf("no test of %s passed over TCP", adapterPackage)
	}
	if ctx.Err() != nil {
		// What the killed suite left is the leak check's to report, but
		// waiting for the lock may outlast this test's own deadline.
		t.Fatalf("the suite over TCP was ended at this test's deadline, after %v: the Docker tests of other processes share its lock (make docker runs the Docker packages one at a time, with a 20-minute timeout)", took)
	}

	dockertest.Serial(t)
	dockertest.NoLeaks(t, cli)
}

// testEvents is what a child `go test -json` reported: the top-level
// tests by outcome, the output of each test (its subtests' included), and
// the output of no test (a build failure, the package's result).
type testEvents struct {
	passed          int
	failed, skipped []string
	output          map[string]*strings.Builder
	unattached      strings.Builder
}

// waited counts the tests that waited for dockertest's lock: the suite's
// time includes what other processes' Docker tests took meanwhile.
func (ev *testEvents) waited() int {
	n := 0
	for _, out := range ev.output {
		if strings.Contains(out.String(), "waiting for "+dockertest.LockFile) {
			n++
		}
	}
	return n
}

// readTestEvents reads the child's events until its output ends, logging
// each top-level test's result as it comes, so a long run shows progress.
func readTestEvents(t *testing.T, r io.Reader) *testEvents {
	t.Helper()
	ev := &testEvents{output: map[string]*strings.Builder{}}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		var e struct {
			Action, Test, Output string
			Elapsed              float64
		}
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			ev.unattached.WriteString(s.Text() + "\n") // go's own words, not an event
			continue
		}
		top, _, _ := strings.Cut(e.Test, "/")
		if e.Test == "" {
			if e.Action == "output" {
				ev.unattached.WriteString(e.Output)
			}
			continue
		}
		if ev.output[top] == nil {
			ev.output[top] = &strings.Builder{}
		}
		if e.Action == "output" {
			ev.output[top].WriteString(e.Output)
		}
		if e.Test != top {
			continue
		}
		switch e.Action {
		case "pass":
			ev.passed++
		case "fail":
			ev.failed = append(ev.failed, e.Test)
		case "skip":
			ev.skipped = append(ev.skipped, e.Test)
		default:
			continue
		}
		t.Logf("%s %s %s (%.1fs)", time.Now().Format("15:04:05"), e.Action, e.Test, e.Elapsed)
	}
	if err := s.Err(); err != nil {
		t.Errorf("reading go test's events: %v", err)
	}
	return ev
}

// socat forwards a free loopback port to the engine's socket (socat
// TCP-LISTEN:PORT,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:socket) until
// the test ends, and returns the DOCKER_HOST that reaches it. The port is
// free when picked and may be taken before socat binds it: it tries three,
// and takes one only once the engine answers through it.
func socat(t *testing.T, socket string) string {
	t.Helper()
	bin, err := exec.LookPath("socat")
	if err != nil {
		dockertest.Unavailable(t, "socat is not installed (Debian's socat; .ci/run installs it): %v", err)
	}
	var tried []string
	for range 3 {
		port := freePort(t)
		cmd := exec.Command(bin, fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork", port), "UNIX-CONNECT:"+socket)
		// Its forks go with it; and it goes with this process, should a
		// timeout's panic end the test before its cleanup.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start socat: %v", err)
		}
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			close(exited)
		}()
		host := fmt.Sprintf("tcp://127.0.0.1:%d", port)
		err := answers(host, exited)
		if err == nil {
			t.Cleanup(func() {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
				<-exited
			})
			return host
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		tried = append(tried, fmt.Sprintf("port %d: %v (%s)", port, err, strings.TrimSpace(stderr.String())))
	}
	t.Fatalf("no socat forwarding to %s answered as the engine:\n\t%s", socket, strings.Join(tried, "\n\t"))
	return ""
}

// answers waits up to 10 s for the engine to answer a ping at host,
// unless socat exits first.
func answers(host string, exited <-chan struct{}) error {
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("socat exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Ping(ctx, client.PingOptions{})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort is a loopback port no one listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// proxiedOnly matches adapter tests whose every adapter is made behind a
// fault proxy (agentBehindProxy, proxied or newProxy first), the slowest.
const proxiedOnly = "^(TestEveryEngineRefusalIsReported|TestCleanupRetriesUntilEngineAnswers|TestSettleWhenEngineHangs|" +
	"TestStopAnsweredLate|TestHelperMadeWithoutAnAnswerIsRemoved|TestStartReturnsAtOnce)$"

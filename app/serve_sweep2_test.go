package app_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codeboost/codeboost/app"
)

// listeningFD is the descriptor of this process's listening socket on
// port, or -1.
func listeningFD(t *testing.T, port int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc here")
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if acc, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || acc == 0 {
			continue
		}
		if sa, err := syscall.Getsockname(fd); err == nil {
			if in, ok := sa.(*syscall.SockaddrInet4); ok && in.Port == port {
				return fd
			}
		}
	}
	return -1
}

// TestRunLogsAReviewServerThatStopsServing: when the review server's
// listener fails for good (here shut down under it, as a failing socket
// would), the process says so in its log ("the review server stopped
// serving", with the error) instead of running on with no server and no
// word of it.
// Sweep survivor (seed 20261203): app/serve.go:App.startServer:ignore-error:f9952830.
func TestRunLogsAReviewServerThatStopsServing(t *testing.T) {
	dir, db, _ := firstStart(t)
	base, out := serveUntilCleanup(t, app.Options{DB: db, Listen: "127.0.0.1:0"}, filepath.Join(dir, "ready"))
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	fd := listeningFD(t, port)
	if fd < 0 {
		t.Fatalf("no listening socket on port %d", port)
	}
	if err := syscall.Shutdown(fd, syscall.SHUT_RDWR); err != nil {
		t.Fatal(err)
	}
	for i := 0; !strings.Contains(out.String(), "the review server stopped serving"); i++ {
		if i > 1000 {
			t.Fatalf("the listener failed and nothing was logged:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

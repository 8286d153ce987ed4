package docker

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenSaysWhyTheHelperImageCannotBeMade: an engine that answers its
// ping but cannot give the helper image (a full disk, a storage driver
// that fails) stops Open with the image's own error, "the helper image:"
// and the engine's words, so the person starting codeboost reads what to
// fix, not a configuration error about an empty helper image name that
// nobody configured. The engine is a fake one on a socket of the test's
// own: it answers the ping and fails everything else, so no Docker is
// needed.
// Sweep survivor (seed 8675309): dadapter/docker/open.go:Open:ignore-error:31d5f59c~2.
func TestOpenSaysWhyTheHelperImageCannotBeMade(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "engine.sock"))
	if err != nil {
		t.Fatal(err)
	}
	engine := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			w.Write([]byte("OK"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"message":"write /var/lib/docker/tmp: no space left on device"}`))
	}))
	engine.Listener.Close()
	engine.Listener = ln
	engine.Start()
	defer engine.Close()
	t.Setenv("DOCKER_HOST", "unix://"+ln.Addr().String())
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_API_VERSION", "")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Open(ctx, Options{RunnerRoot: t.TempDir()})
	if err == nil {
		d.Close()
		t.Fatal("Open succeeded with an engine that cannot give the helper image")
	}
	if !strings.HasPrefix(err.Error(), "the helper image: ") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Open = %v, want the helper image's own error with the engine's words", err)
	}
}

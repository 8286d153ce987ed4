package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codeboost/codeboost/dadapter/livelog"
	"github.com/codeboost/codeboost/demo"
	"github.com/codeboost/codeboost/ids"
	"github.com/codeboost/codeboost/plan"
	"github.com/codeboost/codeboost/runner"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// The load benchmarks serve over loopback from a production-style world:
// a SQLite file, the coordinator on its goroutine loop and the real clock,
// the demo agent's simulated D (attempts really run for seconds and stream
// output), and the live output hub. The baseline is plain net/http serving
// a fixed JSON body of the same size, measured in the same run.
//
//	go test ./web -run '^$' -bench 'Poll' -benchtime 1x

type loadWorld struct {
	srv   *Server
	st    *store.Store
	loop  *runner.GoroutineLoop
	tasks []Task
}

func newLoadWorld(b *testing.B, ntasks int) *loadWorld {
	b.Helper()
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, "cb.db"), store.Options{Now: time.Now, IDs: ids.Random{}})
	if err != nil {
		b.Fatal(err)
	}
	loop := runner.NewGoroutineLoop()
	clock := runner.NewRealClock()
	hub := livelog.NewHub(0)
	c, err := runner.New(runner.Config{Root: dir, Owner: ids.Random{}.Token(), Slots: ntasks}, runner.Deps{
		Store: st, Capability: st.ShutdownCapability(), D: demo.New(demo.Options{Loop: loop, Clock: clock, Seed: 7}).D(),
		Clock: clock, Loop: loop, IDs: ids.Random{}, Output: hub.Sink,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Recover(context.Background()); err != nil {
		b.Fatal(err)
	}
	doc, err := plan.Parse(demo.Plan())
	if err != nil {
		b.Fatal(err)
	}
	items, err := store.ItemInputs(doc)
	if err != nil {
		b.Fatal(err)
	}
	w := &loadWorld{st: st, loop: loop}
	for i := 0; i < ntasks; i++ {
		id := store.Identity{RepositoryID: "wordcount", TaskID: fmt.Sprintf("t%d", i), PlanID: "p"}
		if err := st.Update(func(tx *store.Tx) error {
			if err := tx.CreateTask(store.NewTask{Identity: id, SnapshotID: "s1", Status: words.StatusInReview}); err != nil {
				return err
			}
			if _, err := tx.ImportPlan(id.Key(), 1, items); err != nil {
				return err
			}
			for n := range items {
				if _, err := tx.Approve(id.Key(), n+1); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		w.tasks = append(w.tasks, Task{Name: fmt.Sprintf("t%d", i), Identity: id})
	}
	w.srv, err = New(Options{Runner: c, Store: st, Clock: clock, Tasks: w.tasks, Output: hub})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.StopJobs(context.Background())
		<-c.Drained()
		loop.Stop()
		st.Close()
	})
	return w
}

// startAll starts every task's plan through the API, as the screen would.
func (w *loadWorld) startAll(b *testing.B, base string) {
	for i, t := range w.tasks {
		st, err := w.srv.status(t)
		if err != nil {
			b.Fatal(err)
		}
		body := fmt.Sprintf(`{"task":%q,"action":"start","expectedStateVersion":%d,"expectedReviewVersion":%d,"actionId":"10000000-0000-4000-8000-%012d"}`,
			t.Name, st.StateVersion, st.ReviewVersion, i)
		resp, err := http.Post(base+"/api/runner", "application/json", stringsReader(body))
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("start %s: %v %v", t.Name, err, resp)
		}
		resp.Body.Close()
	}
}

// noteWriter sends a change note every interval until stop, and counts
// them: the Store's write load beside the polling.
func (w *loadWorld) noteWriter(base string, interval time.Duration, stop <-chan struct{}, n *atomic.Int64) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(interval):
		}
		body := fmt.Sprintf(`{"task":%q,"action":"change-note","item":1,"text":"note %d","actionId":"20000000-0000-4000-8000-%012d"}`,
			w.tasks[i%len(w.tasks)].Name, i, i)
		resp, err := http.Post(base+"/api/review", "application/json", stringsReader(body))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				n.Add(1)
			}
		}
	}
}

// pollAtRate runs clients that each GET url every interval for d, and
// returns every request's latency.
func pollAtRate(b *testing.B, url string, clients int, interval, d time.Duration) []time.Duration {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Spread the clients over one interval, as independent
			// screens would be.
			next := time.Now().Add(interval * time.Duration(i) / time.Duration(clients))
			var mine []time.Duration
			for next.Before(end) {
				time.Sleep(time.Until(next))
				t0 := time.Now()
				if !get(b, cl, url) {
					return
				}
				mine = append(mine, time.Since(t0))
				next = next.Add(interval)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	return lat
}

// get fetches url and reads its body to the end; false after reporting an
// error.
func get(b *testing.B, cl *http.Client, url string) bool {
	resp, err := cl.Get(url)
	if err != nil {
		b.Error(err)
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return true
}

func percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func reportLatency(b *testing.B, lat []time.Duration, d time.Duration) {
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lat))/d.Seconds(), "req/s")
}

// BenchmarkPollAt400rps: 100 clients each poll GET /api/runner every 250 ms
// (400 requests/s) for 5 s while attempts run and a note arrives every
// 100 ms; reports p50 and p99 latency, the rate served and the Store's
// write rate (notes/s). The baseline serves a fixed body of the same size.
func BenchmarkPollAt400rps(b *testing.B) {
	const clients, interval, d = 100, 250 * time.Millisecond, 5 * time.Second
	size := 4096
	b.Run("server", func(b *testing.B) {
		w := newLoadWorld(b, 2)
		ts := httptest.NewServer(w.srv.Handler())
		defer ts.Close()
		w.startAll(b, ts.URL)
		var notes atomic.Int64
		stop := make(chan struct{})
		go w.noteWriter(ts.URL, 100*time.Millisecond, stop, &notes)
		b.ResetTimer()
		lat := pollAtRate(b, ts.URL+"/api/runner", clients, interval, d)
		b.StopTimer()
		close(stop)
		reportLatency(b, lat, d)
		b.ReportMetric(float64(notes.Load())/d.Seconds(), "notes/s")
		size = responseSize(b, ts.URL+"/api/runner")
		b.ReportMetric(float64(size), "B/resp")
	})
	b.Run("baseline", func(b *testing.B) {
		ts := fixedBodyServer(size)
		defer ts.Close()
		b.ResetTimer()
		lat := pollAtRate(b, ts.URL, clients, interval, d)
		b.StopTimer()
		reportLatency(b, lat, d)
	})
}

// BenchmarkPollSaturation: clients poll GET /api/runner back to back;
// ns/op over all of them is the inverse of the saturation throughput.
func BenchmarkPollSaturation(b *testing.B) {
	run := func(b *testing.B, url string) {
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		defer tr.CloseIdleConnections()
		cl := &http.Client{Transport: tr}
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !get(b, cl, url) {
					return
				}
			}
		})
	}
	size := 4096
	b.Run("server", func(b *testing.B) {
		w := newLoadWorld(b, 2)
		ts := httptest.NewServer(w.srv.Handler())
		defer ts.Close()
		w.startAll(b, ts.URL)
		size = responseSize(b, ts.URL+"/api/runner")
		run(b, ts.URL+"/api/runner")
	})
	b.Run("baseline", func(b *testing.B) {
		ts := fixedBodyServer(size)
		defer ts.Close()
		run(b, ts.URL)
	})
}

// fixedBodyServer is the baseline: plain net/http serving a fixed JSON
// body of size bytes, GET /api/runner's answer size in the same run.
func fixedBodyServer(size int) *httptest.Server {
	body := []byte(`{"tasks":[],"pad":"` + strings.Repeat("x", max(0, size-22)) + `"}`)
	return httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json; charset=utf-8")
		rw.Header().Set("Cache-Control", "no-store")
		rw.Write(body)
	}))
}

func responseSize(b *testing.B, url string) int {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return len(body)
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

package scenarios

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	gts "github.com/rogpeppe/go-internal/testscript"
)

// scenarioFile is one .txtar file and what its header says.
type scenarioFile struct {
	path  string
	name  string   // file name without .txtar
	id    string   // R017, F-3
	kills []string // mutants it claims to kill
}

func scenarioFiles(t *testing.T) []scenarioFile {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	sort.Strings(paths)
	var out []scenarioFile
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sf := scenarioFile{path: p, name: strings.TrimSuffix(filepath.Base(p), ".txtar")}
		sc := bufio.NewScanner(f)
		first := true
		for sc.Scan() {
			line := sc.Text()
			if first {
				first = false
				fields := strings.Fields(strings.TrimPrefix(line, "#"))
				if !strings.HasPrefix(line, "#") || len(fields) < 2 {
					t.Errorf("%s: the first line must be '# <ID> <title>'", p)
				} else {
					sf.id = fields[0]
				}
			}
			if rest, ok := strings.CutPrefix(line, "# kills:"); ok {
				sf.kills = append(sf.kills, strings.Fields(rest)...)
			}
		}
		f.Close()
		if !strings.HasPrefix(sf.name, sf.id+"-") {
			t.Errorf("%s: the file name must start with its case ID %s", p, sf.id)
		}
		out = append(out, sf)
	}
	return out
}

// recordingT is a testscript.T that records failure instead of failing the
// enclosing test: the bite test expects scenarios to fail under a mutant.
type recordingT struct {
	mu       sync.Mutex
	failed   bool
	log      strings.Builder
	parallel func() // non-nil: Run's subtests run at once (see runQuietParallel)
	wg       *sync.WaitGroup
}

func (r *recordingT) Skip(args ...any) { runtime.Goexit() }
func (r *recordingT) Fatal(args ...any) {
	r.Log(args...)
	r.FailNow()
}
func (r *recordingT) Parallel() {
	if r.parallel != nil {
		r.parallel()
	}
}
func (r *recordingT) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(&r.log, args...)
}
func (r *recordingT) FailNow() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recordingT) Verbose() bool { return false }
func (r *recordingT) Run(name string, f func(gts.T)) {
	child := &recordingT{}
	done := make(chan struct{})
	collect := func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if child.failed {
			r.failed = true
		}
		r.log.WriteString(child.log.String())
	}
	if r.wg != nil {
		// Parallel mode: start every subtest at once, as go test does
		// for t.Parallel subtests, and wait for all at the end.
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer collect()
			f(child)
		}()
		return
	}
	go func() {
		defer close(done)
		f(child)
	}()
	<-done
	collect()
}

// runQuietParallel is runQuiet with every script running at the same time.
func runQuietParallel(p gts.Params) (failed bool, log string) {
	r := &recordingT{wg: &sync.WaitGroup{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		gts.RunT(r, p)
		r.wg.Wait()
	}()
	<-done
	return r.failed, r.log.String()
}

package cli

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/codeboost/codeboost/scenarios"
	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

func runScenarios(args []string) int {
	fl := flag.NewFlagSet("scenarios", flag.ExitOnError)
	verbose := fl.Bool("v", false, "print each scenario's trace")
	run := fl.String("run", "", "only scenarios whose name matches this regexp")
	fl.Parse(args)
	re, err := regexp.Compile(*run)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir, err := os.MkdirTemp("", "codeboost-scenarios-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The real-process scenarios `exec codeboost`: put this very binary on
	// PATH under that name.
	if exe, err := os.Executable(); err == nil {
		bin := filepath.Join(dir, "bin")
		if os.Mkdir(bin, 0o700) == nil && os.Symlink(exe, filepath.Join(bin, "codeboost")) == nil {
			os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		}
	}
	var files []string
	fs.WalkDir(scenarios.Files, "testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !re.MatchString(strings.TrimSuffix(d.Name(), ".txtar")) {
			return err
		}
		data, _ := scenarios.Files.ReadFile(p)
		out := filepath.Join(dir, d.Name())
		files = append(files, out)
		return os.WriteFile(out, data, 0o644)
	})
	sort.Strings(files)
	var mu sync.Mutex
	traces := map[string][]string{}
	p := cbts.Params("", cbts.Options{Record: func(script string, trace []string) {
		mu.Lock()
		traces[script] = trace
		mu.Unlock()
	}})
	p.Files = files
	t := &cliT{name: "scenarios"}
	done := make(chan struct{})
	go func() { defer close(done); gts.RunT(t, p) }()
	<-done
	passed, failed := 0, 0
	for _, r := range t.results {
		status := "PASS"
		if r.failed {
			status = "FAIL"
			failed++
		} else {
			passed++
		}
		fmt.Printf("%s %s\n", status, r.name)
		if r.failed {
			fmt.Print(indent(r.log))
		}
		if *verbose {
			fmt.Print(indent(strings.Join(traces[r.name], "\n") + "\n"))
		}
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

type result struct {
	name   string
	failed bool
	log    string
}

// cliT is a testscript.T for running scenarios outside `go test`.
type cliT struct {
	name    string
	mu      sync.Mutex
	failed  bool
	log     strings.Builder
	results []result
}

func (t *cliT) Skip(args ...any) { runtime.Goexit() }
func (t *cliT) Fatal(args ...any) {
	t.Log(args...)
	t.FailNow()
}
func (t *cliT) Parallel() {}
func (t *cliT) Log(args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(&t.log, args...)
}
func (t *cliT) FailNow() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	runtime.Goexit()
}
func (t *cliT) Verbose() bool { return false }
func (t *cliT) Run(name string, f func(gts.T)) {
	child := &cliT{name: name}
	done := make(chan struct{})
	go func() { defer close(done); f(child) }()
	<-done
	t.mu.Lock()
	defer t.mu.Unlock()
	t.results = append(t.results, result{name: name, failed: child.failed, log: child.log.String()})
	t.results = append(t.results, child.results...)
}

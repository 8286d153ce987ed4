// Command bc_tmp runs one scenario under one mutant and prints its log (temporary helper, batch C).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

type rt struct {
	mu     sync.Mutex
	failed bool
	log    strings.Builder
}

func (r *rt) Skip(args ...any)  { runtime.Goexit() }
func (r *rt) Fatal(args ...any) { r.Log(args...); r.FailNow() }
func (r *rt) Parallel()         {}
func (r *rt) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(&r.log, args...)
}
func (r *rt) FailNow()      { r.mu.Lock(); r.failed = true; r.mu.Unlock(); runtime.Goexit() }
func (r *rt) Verbose() bool { return false }
func (r *rt) Run(name string, f func(gts.T)) {
	child := &rt{}
	done := make(chan struct{})
	go func() { defer close(done); f(child) }()
	<-done
	if child.failed {
		r.failed = true
	}
	r.log.WriteString(child.log.String())
}

func main() {
	m := os.Args[2]
	if m == "mutant/-" {
		m = ""
	}
	p := cbts.Params("", cbts.Options{Mutant: m})
	p.Files = []string{os.Args[1]}
	r := &rt{}
	done := make(chan struct{})
	go func() { defer close(done); gts.RunT(r, p) }()
	<-done
	log := r.log.String()
	if i := strings.Index(log, "FAIL:"); i >= 0 {
		end := strings.Index(log[i:], "trace so far")
		if end < 0 || end > 3000 {
			end = min(len(log)-i, 3000)
		}
		fmt.Println(log[i : i+end])
	}
	fmt.Println("failed:", r.failed)
}

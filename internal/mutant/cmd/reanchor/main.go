// Command reanchor follows the named mutants (scenarios/mutants/*.txtar)
// when the code they pin moves: each block of a mutant names the
// declaration that holds its original lines (its "in:" line), and after a
// function moves to another file of its package, or is renamed, reanchor
// finds the block again and, with -write, rewrites the mutant file's "in:"
// lines and block paths (and, in a block whose lines name a renamed
// declaration, that name; nothing else). A block whose lines it cannot place
// exactly once is listed for a person, and so is a mutant it moved that no
// longer compiles where it moved (-build, on by default: go build of its
// packages under its overlay), and it exits 1. Without -write it only
// reports. A mutant file without "in:" lines gets them.
//
//	go run ./internal/mutant/cmd/reanchor [-write] [-build=false] [-root .] [-dir scenarios/mutants]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/codeboost/codeboost/internal/mutant"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reanchor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.Bool("write", false, "rewrite the mutant files whose blocks moved")
	build := fs.Bool("build", true, "build the packages of each mutant whose blocks moved, with the mutant applied where they moved to")
	root := fs.String("root", ".", "the module root, where the mutants' paths start")
	dir := fs.String("dir", "", "the mutant files' directory (default ROOT/scenarios/mutants)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		*dir = filepath.Join(*root, "scenarios", "mutants")
	}
	ms, err := mutant.LoadDir(*dir)
	if err == nil && len(ms) == 0 {
		err = fmt.Errorf("no mutant files (*.txtar) in %s: run it from the module root, or give -root", *dir)
	}
	if err != nil {
		fmt.Fprintln(stderr, "reanchor:", err)
		return 2
	}
	var blocks, moved, unplaced, broken, files int
	all := mutant.ReanchorAll(*root, ms)
	for i, m := range ms {
		ps := all[i]
		changed, placed := false, true
		for _, p := range ps {
			blocks++
			switch {
			case !p.Placed():
				unplaced++
				placed = false
				fmt.Fprintf(stdout, "TO PLACE BY HAND %s block %d (%s %s): %s\n", m.Path, p.Block, p.File, p.Anchor, p.Why)
			case p.Changed():
				changed = true
				moved++
				if p.Why != "" {
					fmt.Fprintf(stdout, "%s block %d: %s %s -> %s %s: %s\n", m.Path, p.Block, p.File, p.Anchor, p.NewFile, p.NewAnchor, p.Why)
				}
			}
		}
		if !changed {
			continue
		}
		if *build && placed {
			if err := mutant.Moved(m, ps).Compiles(context.Background(), *root); err != nil {
				broken++
				fmt.Fprintf(stdout, "TO FIX BY HAND %s: placed, but it no longer compiles there (rewrite its mutant lines):\n%s\n", m.Path, indent(err.Error()))
			}
		}
		if !*write {
			continue
		}
		data, err := os.ReadFile(m.Path)
		if err == nil {
			data, err = mutant.Rewrite(data, ps)
		}
		if err == nil {
			err = os.WriteFile(m.Path, data, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "reanchor: %s: %v\n", m.Path, err)
			return 2
		}
		files++
	}
	verb := "to re-anchor (run with -write)"
	if *write {
		verb = fmt.Sprintf("re-anchored in %d files", files)
	}
	fmt.Fprintf(stdout, "%d mutants, %d blocks: %d in place, %d %s, %d to place by hand", len(ms), blocks, blocks-moved-unplaced, moved, verb, unplaced)
	if *build {
		fmt.Fprintf(stdout, ", %d moved mutants to fix by hand (they no longer compile)", broken)
	}
	fmt.Fprintln(stdout)
	if unplaced > 0 || broken > 0 {
		return 1
	}
	return 0
}

func indent(s string) string {
	return "\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t")
}

// Command mutate is the automatic mutation sweep over every guarded
// package (`make mutate`; see package internal/mutate for the packages,
// the test binaries each mutant runs against and the operators).
//
//	mutate [-seed N] [-n 300]   a seeded sample, spread over the packages in
//	                            proportion to their mutant counts (seed 0
//	                            picks one and prints it)
//	mutate -all                 every mutant
//	mutate -list                print the chosen mutants, run nothing
//	mutate -only ID[,ID…]       run the named mutants (equivalent ones too)
//	mutate -compile             only check that the chosen mutants compile
//
// -pkgs and -not-pkgs (package lists), -run (a regexp on IDs) and -ops
// narrow the mutants before sampling; -j sets the workers, -timeout each
// test binary's timeout (default: five times its baseline run, at least
// 1m), -o writes a JSON report, -recheck runs the mutants the equivalence
// file lists to confirm they survive, -baseline=false skips the unmutated
// run, -coverage=false runs every test of every stage for each mutant
// (by default a stage runs the tests that reach the mutant, and survivors
// run again whole). It prints a line per mutant as it finishes, then the seed, the
// counts, the score and the score per package, the wall time and every
// survivor with its diff; the exit status is 1 if an equivalence entry is
// stale or wrong, the sweep failed, or the score is below -min-score.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/codeboost/codeboost/internal/mutate"
	"golang.org/x/tools/cover"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		seed      = flag.Int64("seed", 0, "sample seed; 0 picks one from the clock and prints it")
		n         = flag.Int("n", 300, "sample size")
		all       = flag.Bool("all", false, "run every mutant instead of a sample")
		list      = flag.Bool("list", false, "print the chosen mutants and their edits; run nothing")
		only      = flag.String("only", "", "comma-separated mutant IDs to run (no sampling)")
		runRe     = flag.String("run", "", "only mutants whose ID matches this regexp")
		pkgsArg   = flag.String("pkgs", "", "only mutants of these comma-separated packages (default all: "+strings.Join(mutate.Dirs, ",")+")")
		notPkgs   = flag.String("not-pkgs", "", "no mutants of these comma-separated packages (e.g. dadapter/docker, whose every mutant runs its Docker suite)")
		ops       = flag.String("ops", "", "only these comma-separated operators ("+strings.Join(mutate.Operators, ",")+")")
		jobs      = flag.Int("j", runtime.GOMAXPROCS(0), "mutants run at once")
		timeout   = flag.Duration("timeout", 0, "each test binary's timeout; 0 takes 5x its baseline run, at least 1m")
		skip      = flag.String("skip", "Bites$", "-test.skip pattern for every test binary (the *Bites tests re-run others under named mutants)")
		equivArg  = flag.String("equiv", "", "equivalence file (default <root>/"+mutate.EquivalentFile+")")
		out       = flag.String("o", "", "also write the report as JSON to this file")
		rootArg   = flag.String("root", "", "module root (default: found from the working directory)")
		minScore  = flag.Float64("min-score", 0, "exit 1 if the score is below this percentage")
		compile   = flag.Bool("compile", false, "only check that each chosen mutant compiles (go build, no tests)")
		baseline  = flag.Bool("baseline", true, "first run the unmutated tests: they must pass, and they set the timeouts")
		recheck   = flag.Bool("recheck", false, "run the mutants the equivalence file lists too, to confirm they survive (-only always does)")
		testsRe   = flag.String("tests", "", "with -stages: run only the tests matching this -test.run pattern in each stage (e.g. 'TestStepOne'): the quickest loop while writing one killing test")
		stagesRe  = flag.String("stages", "", "run each mutant only against the test binaries whose package matches this regexp (e.g. '^./store$' for its own package's tests): a quick loop while writing tests for one file; a survivor may still die in a stage this leaves out, so the score is not the sweep's")
		unreached = flag.String("unreached", "", "comma-separated Go coverage profiles of the tests (make unreached writes one): print the drop-guard and ignore-error mutants whose guarded body no test ran, which every sweep that draws them scores as survivors, and run nothing")
		coverage  = flag.Bool("coverage", true, "run, per stage, only the tests whose baseline run entered the mutant's function (collected after the baseline, kept in "+mutate.CoverageFile+"), then every survivor again with every test")
	)
	flag.Parse()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "mutate:", err); return 2 }

	root := *rootArg
	if root == "" {
		r, err := moduleRoot()
		if err != nil {
			return fail(err)
		}
		root = r
	}
	ms, err := mutate.Generate(root, mutate.Dirs)
	if err != nil {
		return fail(err)
	}
	equivPath := *equivArg
	if equivPath == "" {
		equivPath = filepath.Join(root, filepath.FromSlash(mutate.EquivalentFile))
	}
	eq, err := mutate.LoadEquivalent(equivPath)
	if err != nil {
		return fail(err)
	}
	stale := mutate.Stale(eq, ms)
	reasons := map[string]string{}
	for _, e := range eq {
		reasons[e.ID] = e.Reason
	}

	pool := ms
	if *ops != "" {
		want := strings.Split(*ops, ",")
		for _, op := range want {
			if !slices.Contains(mutate.Operators, op) {
				return fail(fmt.Errorf("unknown operator %q (have %s)", op, strings.Join(mutate.Operators, ", ")))
			}
		}
		pool = slices.DeleteFunc(slices.Clone(pool), func(m mutate.Mutant) bool { return !slices.Contains(want, m.Op) })
	}
	for _, f := range []struct {
		list string
		keep bool
	}{{*pkgsArg, true}, {*notPkgs, false}} {
		if f.list == "" {
			continue
		}
		named := strings.Split(f.list, ",")
		for _, p := range named {
			if !slices.Contains(mutate.Dirs, p) {
				return fail(fmt.Errorf("no package %q is mutated (have %s)", p, strings.Join(mutate.Dirs, ", ")))
			}
		}
		pool = slices.DeleteFunc(slices.Clone(pool), func(m mutate.Mutant) bool {
			return slices.Contains(named, mutate.PackageOf(m.ID)) != f.keep
		})
	}
	if *runRe != "" {
		re, err := regexp.Compile(*runRe)
		if err != nil {
			return fail(err)
		}
		pool = slices.DeleteFunc(slices.Clone(pool), func(m mutate.Mutant) bool { return !re.MatchString(m.ID) })
	}
	if *unreached != "" {
		module, err := mutate.ModulePath(root)
		if err != nil {
			return fail(err)
		}
		return printUnreached(os.Stdout, pool, reasons, module, strings.Split(*unreached, ","))
	}
	sampled := 0
	var chosen []mutate.Mutant
	switch {
	case *only != "":
		byID := map[string]mutate.Mutant{}
		for _, m := range pool {
			byID[m.ID] = m
		}
		for _, id := range strings.Split(*only, ",") {
			m, ok := byID[strings.TrimSpace(id)]
			if !ok {
				return fail(fmt.Errorf("no mutant %q (see -list -all)", id))
			}
			chosen = append(chosen, m)
		}
	case *all:
		chosen = pool
	default:
		if *seed == 0 {
			*seed = time.Now().UnixNano()%1_000_000 + 1
		}
		chosen = mutate.Sample(pool, *seed, *n)
		sampled = len(chosen)
	}

	w := os.Stdout
	if sampled > 0 {
		fmt.Fprintf(w, "mutation sweep: seed %d, %d of %d mutants (%d after -ops/-run)\n", *seed, len(chosen), len(ms), len(pool))
	} else {
		fmt.Fprintf(w, "mutation sweep: %d of %d mutants\n", len(chosen), len(ms))
	}
	printStale(w, stale, equivPath)
	if *list {
		counts := map[string]int{}
		for _, m := range chosen {
			counts[m.Op]++
			eqMark := ""
			if _, ok := reasons[m.ID]; ok {
				eqMark = "  (equivalent)"
			}
			if m.Race {
				eqMark += "  (judged by -race too)"
			}
			fmt.Fprintf(w, "%s  %s  %s%s\n%s", m.Pos(), m.Op, m.ID, eqMark, m.Diff("    "))
		}
		var parts []string
		for _, op := range mutate.Operators {
			parts = append(parts, fmt.Sprintf("%s %d", op, counts[op]))
		}
		fmt.Fprintf(w, "%d mutants: %s\n", len(chosen), strings.Join(parts, ", "))
		if len(stale) > 0 {
			return 1
		}
		return 0
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *compile {
		return compileOnly(ctx, root, chosen, max(1, *jobs))
	}
	start := time.Now()
	opts := mutate.Options{Root: root, Jobs: max(1, *jobs), Timeout: *timeout, Skip: *skip}
	if *testsRe != "" && *stagesRe == "" {
		return fail(fmt.Errorf("-tests needs -stages: the sweep's own stages run whole"))
	}
	if *stagesRe != "" {
		re, err := regexp.Compile(*stagesRe)
		if err != nil {
			return fail(err)
		}
		opts.Stages = func(m mutate.Mutant) []mutate.Stage {
			sts := slices.DeleteFunc(mutate.Stages(m), func(st mutate.Stage) bool { return !re.MatchString(st.Pkg) })
			if *testsRe != "" {
				for i := range sts {
					sts[i].Run = *testsRe
				}
			}
			return sts
		}
		for _, m := range chosen {
			if len(opts.Stages(m)) == 0 {
				return fail(fmt.Errorf("-stages %s leaves %s no test binary to run", *stagesRe, m.ID))
			}
		}
		fmt.Fprintf(w, "-stages %s: not every stage runs, so this is not the sweep's score\n", *stagesRe)
	}
	opts.Progress = func(done, total int, r mutate.Result) {
		fmt.Fprintf(w, "[%*d/%d] %s\n", len(fmt.Sprint(total)), done, total, mutate.Line(r))
	}
	sw := mutate.NewSweep(opts)
	timeouts := map[string]string{"all": max(mutate.MinTimeout, *timeout).String()}
	if *baseline {
		fmt.Fprintf(w, "baseline: building and running the unmutated tests…\n")
		var took map[string]time.Duration
		var err error
		sw, took, err = mutate.Baseline(ctx, opts, chosen)
		if err != nil {
			mutate.RemoveScratch(root)
			return fail(err)
		}
		timeouts = map[string]string{}
		for _, pkg := range slices.Sorted(maps.Keys(took)) {
			to := sw.Timeouts()[pkg]
			timeouts[pkg] = to.String()
			fmt.Fprintf(w, "baseline: %s passes in %.1fs; timeout %s\n", pkg, took[pkg].Seconds(), to)
		}
	}
	if *coverage && *baseline {
		if err := collectCoverage(ctx, w, root, sw); err != nil {
			mutate.RemoveScratch(root)
			return fail(err)
		}
	}
	baselineTime := time.Since(start)
	results := sw.Run(ctx, chosen, reasons, *recheck || *only != "")
	if ran, killed := sw.Confirm(ctx, results); ran > 0 {
		fmt.Fprintf(w, "confirm: %d survivors run again with every test, %d killed there\n", ran, killed)
	}
	mutate.RemoveScratch(root)
	rep := mutate.NewReport(results)
	rep.Seed, rep.Sampled, rep.Generated, rep.Jobs, rep.Timeouts, rep.Stale = *seed, sampled, len(ms), opts.Jobs, timeouts, stale
	rep.Wall, rep.Baseline = time.Since(start), baselineTime
	rep.Print(w)
	if *out != "" {
		if err := rep.WriteJSON(*out); err != nil {
			return fail(err)
		}
		fmt.Fprintf(w, "report written to %s\n", *out)
	}
	wrong := slices.ContainsFunc(results, func(r mutate.Result) bool {
		return r.Listed && (r.Verdict == mutate.Killed || r.Verdict == mutate.TimedOut)
	})
	if rep.Counts[mutate.Error] > 0 || len(stale) > 0 || wrong || rep.Score < *minScore {
		return 1
	}
	return 0
}

// collectCoverage loads the coverage kept for this tree, collects what
// the baseline's stages lack, keeps it, and gives it to sw.
func collectCoverage(ctx context.Context, w *os.File, root string, sw *mutate.Sweep) error {
	key, err := mutate.TreeKey(root)
	if err != nil {
		return err
	}
	path := filepath.Join(root, filepath.FromSlash(mutate.CoverageFile))
	cov, err := mutate.LoadCoverage(path, key, mutate.Dirs)
	if err != nil {
		return err
	}
	err = sw.CollectCoverage(ctx, cov, func(pkg string, units, files int, took time.Duration) {
		fmt.Fprintf(w, "coverage: %s, %d tests run one by one in %.1fs, entering %d mutated files\n", pkg, units, took.Seconds(), files)
	})
	if err != nil {
		return err
	}
	if err := cov.Write(path); err != nil {
		return err
	}
	sw.UseCoverage(cov)
	return nil
}

// compileOnly builds each mutant's package and lists those that do not
// compile: an operator should not make them.
func compileOnly(ctx context.Context, root string, ms []mutate.Mutant, jobs int) int {
	errs := make([]error, len(ms))
	mutate.Each(len(ms), jobs, func(i int) { errs[i] = mutate.Compiles(ctx, root, ms[i]) })
	bad := 0
	for i, err := range errs {
		if err != nil {
			bad++
			fmt.Printf("invalid %s %s\n%s%s\n", ms[i].Pos(), ms[i].ID, ms[i].Diff("    "), err)
		}
	}
	fmt.Printf("%d of %d mutants do not compile\n", bad, len(ms))
	if bad > 0 {
		return 1
	}
	return 0
}

func printStale(w *os.File, stale []mutate.EquivEntry, path string) {
	for _, e := range stale {
		fmt.Fprintf(w, "stale: %s:%d names %s, which is no longer a mutant\n", path, e.Line, e.ID)
	}
}

// moduleRoot walks up from the working directory to the go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory; use -root")
		}
		dir = parent
	}
}

// printUnreached prints the mutants of pool (the equivalent ones left
// out) whose guarded body the profiles say no test ran, and their count
// per package against the package's mutants.
func printUnreached(w io.Writer, pool []mutate.Mutant, equivalent map[string]string, module string, files []string) int {
	var profiles []*cover.Profile
	for _, f := range files {
		ps, err := cover.ParseProfiles(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			return 2
		}
		profiles = append(profiles, ps...)
	}
	pool = slices.DeleteFunc(slices.Clone(pool), func(m mutate.Mutant) bool { _, ok := equivalent[m.ID]; return ok })
	u := mutate.Unreached(pool, profiles, module)
	total, per := map[string]int{}, map[string]int{}
	for _, m := range pool {
		total[mutate.PackageOf(m.ID)]++
	}
	for _, m := range u {
		per[mutate.PackageOf(m.ID)]++
		fmt.Fprintf(w, "%s  %s  %s\n%s", m.Pos(), m.Op, m.ID, m.Diff("    "))
	}
	fmt.Fprintf(w, "%d of %d mutants are on guards no test reached:\n", len(u), len(pool))
	for _, p := range slices.Sorted(maps.Keys(total)) {
		fmt.Fprintf(w, "  %-16s %4d of %4d\n", p, per[p], total[p])
	}
	return 0
}

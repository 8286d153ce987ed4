package mutate

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Report is a sweep's outcome, as printed and as written with -o.
type Report struct {
	Seed      int64             `json:"seed"`
	Sampled   int               `json:"sampled"`   // 0 when every mutant ran
	Generated int               `json:"generated"` // every mutant of the tree
	Jobs      int               `json:"jobs"`
	Timeouts  map[string]string `json:"timeouts"` // per package
	Counts    map[Verdict]int   `json:"counts"`
	// Score is killed (timeouts included) / (run − equivalent − invalid
	// − error), in percent.
	Score    float64       `json:"score"`
	Wall     time.Duration `json:"-"`
	Baseline time.Duration `json:"-"` // the part of Wall spent on the baseline
	WallText string        `json:"wall"`
	// PerMutant is the wall time after the baseline divided by the
	// mutants run, in seconds.
	PerMutant float64 `json:"perMutantSeconds"`
	// Packages scores each mutated package on its part of the results.
	Packages map[string]PackageScore `json:"packages"`
	Results  []Result                `json:"results"`
	Stale    []EquivEntry            `json:"stale,omitempty"`
}

// PackageScore is one package's part of a sweep.
type PackageScore struct {
	Counts map[Verdict]int `json:"counts"`
	Run    int             `json:"run"`   // its results, equivalent ones included
	Score  float64         `json:"score"` // as Report.Score, over its results
}

// score is killed (timeouts included) over the scored results, in
// percent, and that denominator.
func score(counts map[Verdict]int, n int) (float64, int) {
	d := n - counts[Equivalent] - counts[Invalid] - counts[Error]
	if d <= 0 {
		return 0, d
	}
	return 100 * float64(counts[Killed]+counts[TimedOut]) / float64(d), d
}

// NewReport counts the verdicts of rs and computes the score.
func NewReport(rs []Result) *Report {
	r := &Report{Results: rs, Counts: map[Verdict]int{}, Packages: map[string]PackageScore{}}
	for _, x := range rs {
		r.Counts[x.Verdict]++
		p := r.Packages[PackageOf(x.ID)]
		if p.Counts == nil {
			p.Counts = map[Verdict]int{}
		}
		p.Counts[x.Verdict]++
		p.Run++
		r.Packages[PackageOf(x.ID)] = p
	}
	r.Score, _ = score(r.Counts, len(rs))
	for k, p := range r.Packages {
		p.Score, _ = score(p.Counts, p.Run)
		r.Packages[k] = p
	}
	return r
}

// Line is the one-line account of a result.
func Line(x Result) string {
	by := x.By
	if by == "" {
		by = "-"
	}
	return fmt.Sprintf("%-10s %-28s %-15s %5.1fs  %s  by %s", x.Verdict, x.Pos, x.Op, x.Seconds, x.ID, by)
}

// Print writes the summary: the figures, then every survivor with its
// diff, then the invalid, equivalent and erroneous mutants and the stale
// equivalence entries.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\n== mutation sweep summary ==\n")
	if r.Sampled > 0 {
		fmt.Fprintf(w, "seed %d: a sample of %d of the %d mutants (repeat: -seed %d -n %d)\n", r.Seed, r.Sampled, r.Generated, r.Seed, r.Sampled)
	} else {
		fmt.Fprintf(w, "%d mutants run of the %d generated\n", len(r.Results), r.Generated)
	}
	var tos []string
	for _, k := range sortedKeys(r.Timeouts) {
		tos = append(tos, k+" "+r.Timeouts[k])
	}
	fmt.Fprintf(w, "workers %d; test binary timeouts: %s\n", r.Jobs, strings.Join(tos, ", "))
	c := r.Counts
	fmt.Fprintf(w, "killed %d (of which timeout %d), survived %d, equivalent %d, invalid %d, error %d\n",
		c[Killed]+c[TimedOut], c[TimedOut], c[Survived], c[Equivalent], c[Invalid], c[Error])
	fmt.Fprintf(w, "score %.1f%% = %d killed / (%d run - %d equivalent - %d invalid - %d error)\n",
		r.Score, c[Killed]+c[TimedOut], len(r.Results), c[Equivalent], c[Invalid], c[Error])
	ran := len(r.Results) - c[Equivalent]
	per := 0.0
	if ran > 0 {
		per = (r.Wall - r.Baseline).Seconds() / float64(ran)
	}
	fmt.Fprintf(w, "wall time %s (baseline %s, then %.1fs per mutant run with %d workers)\n",
		r.Wall.Round(time.Second), r.Baseline.Round(time.Second), per, r.Jobs)
	fmt.Fprintf(w, "score per package (killed/scored; survived, equivalent, invalid, error):\n")
	for _, k := range sortedKeys(r.Packages) {
		p := r.Packages[k]
		sc, d := score(p.Counts, p.Run)
		pc := p.Counts
		fmt.Fprintf(w, "  %-16s %5.1f%% = %3d/%-3d  (%d survived, %d equivalent, %d invalid, %d error)\n",
			k, sc, pc[Killed]+pc[TimedOut], d, pc[Survived], pc[Equivalent], pc[Invalid], pc[Error])
	}
	byOp := map[string][2]int{}
	for _, x := range r.Results {
		n := byOp[x.Op]
		switch x.Verdict {
		case Killed, TimedOut:
			n[0]++
			n[1]++
		case Survived:
			n[1]++
		}
		byOp[x.Op] = n
	}
	var ops []string
	for _, op := range Operators {
		if n, ok := byOp[op]; ok {
			ops = append(ops, fmt.Sprintf("%s %d/%d", op, n[0], n[1]))
		}
	}
	fmt.Fprintf(w, "killed per operator: %s\n", strings.Join(ops, ", "))
	section := func(v Verdict, title string, detail bool) {
		var xs []Result
		for _, x := range r.Results {
			if x.Verdict == v {
				xs = append(xs, x)
			}
		}
		if len(xs) == 0 {
			return
		}
		sort.SliceStable(xs, func(i, j int) bool { return xs[i].ID < xs[j].ID })
		fmt.Fprintf(w, "\n%s (%d):\n", title, len(xs))
		for _, x := range xs {
			fmt.Fprintf(w, "  %s  %s  %s\n", x.Pos, x.Op, x.ID)
			fmt.Fprint(w, indent(x.Diff, "      "))
			if detail && x.Detail != "" {
				fmt.Fprint(w, indent(x.Detail, "      | "))
			}
		}
	}
	section(Survived, "survivors: give each a scenario that kills it, or a reason in "+EquivalentFile, false)
	section(Invalid, "invalid (do not compile; not scored)", true)
	section(Error, "errors (the sweep failed; not scored)", true)
	section(Equivalent, "equivalent (not scored; reason from "+EquivalentFile+")", true)
	var wrong []Result
	for _, x := range r.Results {
		if x.Listed && (x.Verdict == Killed || x.Verdict == TimedOut) {
			wrong = append(wrong, x)
		}
	}
	if len(wrong) > 0 {
		fmt.Fprintf(w, "\nlisted in %s but killed (the entry is wrong: remove it):\n", EquivalentFile)
		for _, x := range wrong {
			fmt.Fprintf(w, "  %s  %s  by %s\n", x.Pos, x.ID, x.By)
		}
	}
	if len(r.Stale) > 0 {
		fmt.Fprintf(w, "\nstale entries in %s (no such mutant any more; remove or re-ID them):\n", EquivalentFile)
		for _, e := range r.Stale {
			fmt.Fprintf(w, "  line %d: %s\n", e.Line, e.ID)
		}
	}
}

func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	r.WallText = r.Wall.Round(time.Second).String()
	if ran := len(r.Results) - r.Counts[Equivalent]; ran > 0 {
		r.PerMutant = (r.Wall - r.Baseline).Seconds() / float64(ran)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package testscript

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/codeboost/codeboost/store"
	"github.com/google/go-cmp/cmp"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// Helpers the commands share.

func printResponse(ts *gts.TestScript, s *scenario, r store.Response) {
	fmt.Fprintf(ts.Stdout(), "outcome: %s\n", r.Outcome)
	if r.Message != "" {
		fmt.Fprintf(ts.Stdout(), "message: %s\n", r.Message)
	}
	if r.Replayed {
		fmt.Fprintf(ts.Stdout(), "replayed\n")
	}
	if r.AttemptID != "" {
		fmt.Fprintf(ts.Stdout(), "attempt: %s\n", s.w.Name(r.AttemptID))
	}
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

func setStr(b bool) string {
	if b {
		return "set"
	}
	return "unset"
}

func noneOr[T ~string](s T) string {
	if s == "" {
		return "none"
	}
	return string(s)
}

// compare checks every wanted key against got and fails with a diff.
func (s *scenario) compare(ts *gts.TestScript, what string, want map[string]string, got map[string]string) {
	sub := map[string]string{}
	var bad []string
	for k, v := range want {
		if strings.HasSuffix(k, "~") {
			g, ok := got[strings.TrimSuffix(k, "~")]
			if !ok {
				ts.Fatalf("%s: unknown field %s", what, k)
			}
			if !regexp.MustCompile(v).MatchString(g) {
				bad = append(bad, fmt.Sprintf("%s does not match %q: %q", strings.TrimSuffix(k, "~"), v, g))
			}
			continue
		}
		g, ok := got[k]
		if !ok {
			ts.Fatalf("%s: unknown field %s", what, k)
		}
		sub[k] = g
	}
	wantExact := map[string]string{}
	for k, v := range want {
		if !strings.HasSuffix(k, "~") {
			wantExact[k] = v
		}
	}
	if d := cmp.Diff(wantExact, sub); d != "" || len(bad) > 0 {
		sort.Strings(bad)
		s.fatal(ts, "%s (-want +got):\n%s%s", what, d, strings.Join(bad, "\n"))
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func atoi(ts *gts.TestScript, what, v string) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		ts.Fatalf("%s=%s: not a number", what, v)
	}
	return n
}

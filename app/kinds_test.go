package app

import (
	"slices"
	"testing"

	"github.com/codeboost/codeboost/words"
)

// TestProductionAdmitsExecuteAndCheckOnly: "The composed deps accept
// execute and credential-free check attempts (RunnerDeps.kinds);
// admission refuses every other kind before it writes anything." The
// demo's simulated agent runs every kind (nil: the runner's default).
//
// kills: mutant/production-admits-every-kind
func TestProductionAdmitsExecuteAndCheckOnly(t *testing.T) {
	kinds, why := (&App{}).kinds()
	if !slices.Equal(kinds, []string{words.KindExecute, words.KindCheck}) || why == "" {
		t.Errorf("production kinds %q (why %q), want execute and check, with the reason", kinds, why)
	}
	if kinds, _ := (&App{opt: Options{Demo: true}}).kinds(); kinds != nil {
		t.Errorf("demo kinds %q, want every kind", kinds)
	}
}

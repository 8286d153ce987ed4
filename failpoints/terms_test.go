package failpoints

import "testing"

// TestEnableAcceptsOnlyReplayableTerms: the terms a scenario or test may
// give are the ones whose firings depend only on how many times the point
// was evaluated. A probability or a real sleep is refused, also when it
// hides behind a count or inside a return value.
func TestEnableAcceptsOnlyReplayableTerms(t *testing.T) {
	for _, terms := range []string{
		"return", "1*return", "3*return", `return("step")`, "return(7)",
		"1*off->1*return", "12*off->1*return", `2*off->1*return("step")`,
	} {
		if err := New().Enable("store/statement", terms); err != nil {
			t.Errorf("Enable(%q): %v", terms, err)
		}
	}
	for _, terms := range []string{
		"50%return", "1*50%return", "sleep(10)", "1*sleep(10)", "panic", "pause",
		"1*off->50%return", "3*off->1*sleep(1)", "off->return", "1*off", "1*off->1*off->1*return",
		"return(1)->50%return(2)", "1*return->sleep(5)", "%return",
	} {
		if err := New().Enable("store/statement", terms); err == nil {
			t.Errorf("Enable(%q) accepted terms that cannot be replayed", terms)
		}
	}
	if err := New().Enable("store/no-such-point", "return"); err == nil {
		t.Errorf("Enable accepted a failpoint the catalog does not name")
	}
}

// TestCountThenReturn: "K*off->N*return" passes K evaluations over, fires
// N times, then stays off; Err names the failpoint when it fires.
func TestCountThenReturn(t *testing.T) {
	s := New()
	if err := s.Enable("store/statement", "2*off->1*return"); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for i := 0; i < 5; i++ {
		got = append(got, s.Fire("store/statement"))
	}
	want := []bool{false, false, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("evaluations: %v, want %v", got, want)
		}
	}
	if err := s.Enable("store/statement", `1*off->1*return("step")`); err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Eval("store/statement"); ok {
		t.Errorf("first evaluation fired (%v)", v)
	}
	if v, ok := s.Eval("store/statement"); !ok || v != "step" {
		t.Errorf("second evaluation: %v %v, want step true", v, ok)
	}
	if err := s.Enable("store/statement", "1*return"); err != nil {
		t.Fatal(err)
	}
	if err := s.Err("store/statement"); err == nil || err.Error() != "failpoint store/statement" {
		t.Errorf("Err: %v", err)
	}
	var nilSet *Set
	if nilSet.Fire("store/statement") {
		t.Errorf("a nil Set fired")
	}
}

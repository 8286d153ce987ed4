package testscript

import (
	"fmt"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
	gts "github.com/rogpeppe/go-internal/testscript"
)

// The Store's publication transaction, run by hand: a result that arrives
// late, after its job ended.

func init() {
	register(
		Command{Name: "publish", Kind: Action, Keys: []Key{K("output", Text), K("exit", Int)}, Usage: "[!] publish ATTEMPT [output=JSON] [exit=N]",
			Summary: "runs publication's transaction (step 3, Store.Publish) for the attempt now, as a result that arrives late, after its job ended; prints the state written, or the refusal's code and message",
			Example: "! publish A output='{\"late\":true}'", Run: cmdPublish},
	)
}

func cmdPublish(ts *gts.TestScript, neg bool, a argSet) {
	s := get(ts)
	if len(a.pos) != 1 {
		ts.Fatalf("usage: publish ATTEMPT [output=JSON] [exit=N]")
	}
	id := s.attempt(ts, a.pos[0])
	exit := 0
	if n, ok := a.num("exit"); ok {
		exit = n
	}
	output := []byte(or(a.str("output"), `{"ok":true}`))
	var state words.State
	err := s.world(ts).Store.Update(func(tx *store.Tx) (err error) {
		state, err = tx.Publish(id, output, "", exit)
		return err
	})
	if r, ok := store.IsRefusal(err); ok {
		fmt.Fprintf(ts.Stdout(), "outcome: refused\ncode: %s\nmessage: %s\n", r.Code, r.Message)
	} else if err == nil {
		fmt.Fprintf(ts.Stdout(), "outcome: %s\n", state)
	}
	s.expect(ts, neg, "publish", err)
}

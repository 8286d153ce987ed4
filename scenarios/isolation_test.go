package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/codeboost/codeboost/failpoints"

	cbts "github.com/codeboost/codeboost/testscript"
)

// TestFailpointIsolation runs many scripts in parallel in one process: half
// switch store/terminal-write on and expect the terminal write to fail, the
// other half expect it to succeed. With a process-global failpoint registry
// the second half would see the first half's fault.
func TestFailpointIsolation(t *testing.T) {
	dir := t.TempDir()
	faulty := `fail-point store/terminal-write
new-task T1
admit T1 review as=A
settle A exit=1
status T1 unresolved=result-not-saved
attempt A state=running
`
	clean := `new-task T1
admit T1 review as=A
settle A exit=1
status T1 unresolved=none
attempt A state=failed
`
	var files []string
	for i := 0; i < 16; i++ {
		body := clean
		if i%2 == 0 {
			body = faulty
		}
		p := filepath.Join(dir, fmt.Sprintf("iso-%02d.txtar", i))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	p := cbts.Params("", cbts.Options{})
	p.Files = files
	// testscript runs each script as a parallel subtest.
	for round := 0; round < 3; round++ {
		if failed, log := runQuietParallel(p); failed {
			t.Fatalf("a script saw another script's failpoint:\n%s", log)
		}
	}
	// The same scripts sharing one registry, as the library's global one
	// would make them, do see each other's faults: the test bites.
	shared := cbts.Params("", cbts.Options{SharedFailpoints: failpoints.New()})
	shared.Files = files
	if failed, _ := runQuietParallel(shared); !failed {
		t.Fatal("scripts sharing one failpoint registry did not interfere; the isolation check proves nothing")
	}
}

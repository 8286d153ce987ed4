package importrules

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyDSealsTaskStorage enforces "only D can construct task storage
// handles": dadapter.TaskFilesystems is sealed by an unexported method that
// a type gets only by embedding dadapter.StorageSeal, so no production file
// outside D's packages (dadapter/...) may name StorageSeal. Tests may, for
// their own test doubles of D.
func TestOnlyDSealsTaskStorage(t *testing.T) {
	root := "../.."
	var offenders []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || rel == "dadapter" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "StorageSeal") {
			offenders = append(offenders, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(offenders) > 0 {
		t.Errorf("only D's packages may build task storage handles, but these name dadapter.StorageSeal: %v", offenders)
	}
}

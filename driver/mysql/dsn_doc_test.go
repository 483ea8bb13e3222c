package mysql

import (
	"os"
	"strings"
	"testing"
)

// TestDSNOptionsDocumented: every MySQL DSN option baton passes through or
// refuses is in the DSN table of docs/dsn.md.
func TestDSNOptionsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/dsn.md")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range driverOptions {
		keys = append(keys, k)
	}
	for k := range refusedOptions {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/dsn.md does not document the MySQL DSN option %s", k)
		}
	}
}

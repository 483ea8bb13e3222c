package baton_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsStandAlone: the README, the changelog and docs/ link only to
// files inside the repository that exist (web addresses aside), and name
// no path outside it.
func TestDocsStandAlone(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "README.md", "CHANGELOG.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	upward := regexp.MustCompile(`(?:^|[\s"'(\x60])((?:\.\./)+[^\s"')\x60]*)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(filepath.Join(root, f))
		inside := func(target string) (string, bool) {
			p := filepath.Clean(filepath.Join(dir, target))
			return p, p == root || strings.HasPrefix(p, root+string(filepath.Separator))
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") ||
				strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p, ok := inside(target)
			if !ok {
				t.Errorf("%s links outside the repository: %s", f, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to a missing file: %s", f, m[1])
			}
		}
		for _, m := range upward.FindAllStringSubmatch(string(b), -1) {
			p, ok := inside(strings.TrimRight(m[1], ".,;:"))
			if !ok {
				t.Errorf("%s names a path outside the repository: %s", f, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s names a path that is not in the repository: %s", f, m[1])
			}
		}
	}
}

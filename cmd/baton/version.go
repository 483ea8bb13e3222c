package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// driverModules names the database driver each linked module provides.
// When the driver package gains a registry, linkedDrivers can ask it
// instead; the output stays the same.
var driverModules = map[string]string{
	"github.com/jackc/pgx/v5":        "postgres",
	"github.com/go-sql-driver/mysql": "mysql",
	"github.com/mattn/go-sqlite3":    "sqlite",
	"modernc.org/sqlite":             "sqlite",
}

// version, when set at link time (make release: -X main.version=v1.2.3),
// overrides the module version the build info carries.
var version string

// buildInfo is what `baton version` reports.
type buildInfo struct {
	Version  string   // module version: a tag, a pseudo-version or (devel)
	Commit   string   // VCS revision, "" when not stamped
	Time     string   // VCS commit time
	Modified bool     // built from a tree with uncommitted changes
	Go       string   // Go toolchain version
	Platform string   // GOOS/GOARCH
	CGO      string   // CGO_ENABLED at build time ("" when unknown)
	Drivers  []string // "postgres (github.com/jackc/pgx/v5 v5.12.0)", sorted
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: "(unknown)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Version = moduleVersion(bi.Main.Version)
	for _, s := range bi.Settings {
		if set, ok := buildSettings[s.Key]; ok {
			set(&b, s.Value)
		}
	}
	b.Drivers = linkedDrivers(bi.Deps)
	return b
}

// moduleVersion is the version set at link time, else the main module's.
func moduleVersion(mainVersion string) string {
	switch {
	case version != "":
		return version
	case mainVersion != "":
		return mainVersion
	}
	return "(unknown)"
}

// buildSettings record the build settings baton version reports.
var buildSettings = map[string]func(b *buildInfo, value string){
	"vcs.revision": func(b *buildInfo, v string) { b.Commit = v },
	"vcs.time":     func(b *buildInfo, v string) { b.Time = v },
	"vcs.modified": func(b *buildInfo, v string) { b.Modified = v == "true" },
	"CGO_ENABLED":  func(b *buildInfo, v string) { b.CGO = v },
}

// linkedDrivers lists the database drivers linked into the binary, each
// with the module that provides it.
func linkedDrivers(deps []*debug.Module) []string {
	var out []string
	for _, m := range deps {
		if m.Replace != nil {
			m = m.Replace
		}
		if name, ok := driverModules[m.Path]; ok {
			out = append(out, fmt.Sprintf("%s (%s %s)", name, m.Path, m.Version))
		}
	}
	sort.Strings(out)
	return out
}

func (b buildInfo) write(w io.Writer) {
	fmt.Fprintf(w, "baton %s\n", b.Version)
	fmt.Fprintf(w, "commit:  %s\n", b.commitLine())
	goLine := b.Go + " " + b.Platform
	if b.CGO != "" {
		goLine += " CGO_ENABLED=" + b.CGO
	}
	fmt.Fprintf(w, "go:      %s\n", goLine)
	drivers := "none"
	if len(b.Drivers) > 0 {
		drivers = strings.Join(b.Drivers, ", ")
	}
	fmt.Fprintf(w, "drivers: %s\n", drivers)
}

// commitLine says which commit the binary was built from, when, and
// whether the tree had changes.
func (b buildInfo) commitLine() string {
	if b.Commit == "" {
		return "unknown (built without version control information)"
	}
	commit := b.Commit
	if b.Time != "" {
		commit += " " + b.Time
	}
	if b.Modified {
		commit += " (modified)"
	}
	return commit
}

func versionCmd(*globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print baton's version, commit, Go version and linked database drivers",
		Long: `Print the version of this binary (a release tag, a pseudo-version, or
(devel) for a build from a checkout), the commit it was built from, the Go
version and platform, and the database drivers linked into it. Same as
baton --version.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			readBuildInfo().write(cmd.OutOrStdout())
			return nil
		},
	}
}

// setVersion makes `baton --version` print what `baton version` prints.
func setVersion(root *cobra.Command) {
	info := readBuildInfo()
	var b strings.Builder
	info.write(&b)
	root.Version = info.Version
	root.SetVersionTemplate(b.String())
}

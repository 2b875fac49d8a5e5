// Package buildinfo says which build of opavnic a binary is: the version
// its --version flag prints, its daemons log when they start, and their
// metrics export as opavnic_build_info. It reads what the Go toolchain
// stamped into the binary (runtime/debug.ReadBuildInfo): the module's
// version, and the commit it was built from when `go build` ran in a git
// checkout (the default, -buildvcs=auto).
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what a binary knows of its build.
type Info struct {
	// Version is the module's version: a tag or pseudo-version for a
	// binary built by `go install ...@version`, or in a git checkout with
	// VCS stamping (with "+dirty" when it had changes not committed);
	// "(devel)" for one built without stamping; "unknown" when the binary
	// carries no build information.
	Version string
	// Revision is the commit the binary was built from, "" when not
	// stamped (-buildvcs=false, no git, or not built in a checkout).
	Revision string
	// Time is the commit's time (RFC 3339), "" when not stamped.
	Time string
	// Modified reports that the checkout had changes not committed.
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// Read returns the running binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	return parse(bi)
}

// parse turns the toolchain's build information (nil when the binary has
// none) into an Info.
func parse(bi *debug.BuildInfo) Info {
	in := Info{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return in
	}
	if bi.Main.Version != "" {
		in.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		in.Platform = goos + "/" + goarch
	}
	return in
}

// ShortRevision is Revision cut to 12 hex digits, as git shows a commit.
func (in Info) ShortRevision() string {
	if len(in.Revision) > 12 {
		return in.Revision[:12]
	}
	return in.Revision
}

// String is the one line --version prints after the program's name, e.g.
// "v0.0.0-20261202023211-404fef65684d+dirty (commit 404fef65684d,
// 2026-12-02T02:32:11Z, modified), go1.26.8 linux/amd64" for a build in a
// git checkout with changes not committed, or "(devel), not stamped with its
// commit, go1.26.8 linux/amd64" for one built with -buildvcs=false.
func (in Info) String() string {
	var b strings.Builder
	b.WriteString(in.Version)
	if in.Revision != "" {
		notes := []string{"commit " + in.ShortRevision()}
		if in.Time != "" {
			notes = append(notes, in.Time)
		}
		if in.Modified {
			notes = append(notes, "modified")
		}
		b.WriteString(" (" + strings.Join(notes, ", ") + ")")
	} else if in.Version == "(devel)" {
		// A checkout's build with -buildvcs=false: nothing tells which
		// commit it is.
		b.WriteString(", not stamped with its commit")
	}
	b.WriteString(", " + in.GoVersion + " " + in.Platform)
	return b.String()
}

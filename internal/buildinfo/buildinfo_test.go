package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestParse(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want Info
		line string
	}{
		{
			name: "checkout, committed",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
				Settings: settings("GOOS", "linux", "GOARCH", "arm64", "vcs", "git",
					"vcs.revision", "404fef6a1b2c3d4e5f60718293a4b5c6d7e8f901", "vcs.time", "2026-12-02T02:35:11Z", "vcs.modified", "false")},
			want: Info{Version: "(devel)", Revision: "404fef6a1b2c3d4e5f60718293a4b5c6d7e8f901", Time: "2026-12-02T02:35:11Z",
				GoVersion: "go1.26.8", Platform: "linux/arm64"},
			line: "(devel) (commit 404fef6a1b2c, 2026-12-02T02:35:11Z), go1.26.8 linux/arm64",
		},
		{
			name: "checkout with changes",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261202023511-404fef6a1b2c+dirty"},
				Settings: settings("GOOS", "linux", "GOARCH", "amd64",
					"vcs.revision", "404fef6a1b2c3d4e5f60718293a4b5c6d7e8f901", "vcs.time", "2026-12-02T02:35:11Z", "vcs.modified", "true")},
			want: Info{Version: "v0.0.0-20261202023511-404fef6a1b2c+dirty", Revision: "404fef6a1b2c3d4e5f60718293a4b5c6d7e8f901", Time: "2026-12-02T02:35:11Z",
				Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"},
			line: "v0.0.0-20261202023511-404fef6a1b2c+dirty (commit 404fef6a1b2c, 2026-12-02T02:35:11Z, modified), go1.26.8 linux/amd64",
		},
		{
			name: "checkout, -buildvcs=false",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: settings("GOOS", "linux", "GOARCH", "amd64")},
			want: Info{Version: "(devel)", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			line: "(devel), not stamped with its commit, go1.26.8 linux/amd64",
		},
		{
			name: "go install at a version",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/opavnic/opavnic", Version: "v0.3.1"},
				Settings: settings("GOOS", "linux", "GOARCH", "amd64")},
			want: Info{Version: "v0.3.1", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			line: "v0.3.1, go1.26.8 linux/amd64",
		},
		{
			name: "short revision kept whole",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: settings("vcs.revision", "abc123")},
			want: Info{Version: "(devel)", Revision: "abc123", GoVersion: "go1.26.8", Platform: platform},
			line: "(devel) (commit abc123), go1.26.8 " + platform,
		},
		{
			name: "no build information",
			bi:   nil,
			want: Info{Version: "unknown", GoVersion: runtime.Version(), Platform: platform},
			line: "unknown, " + runtime.Version() + " " + platform,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parse(tc.bi)
			if got != tc.want {
				t.Errorf("parse:\n got %+v\nwant %+v", got, tc.want)
			}
			if s := got.String(); s != tc.line {
				t.Errorf("String:\n got %q\nwant %q", s, tc.line)
			}
		})
	}
}

// TestRead reads the test binary's own build information: the toolchain
// that built it, and the platform it runs on.
func TestRead(t *testing.T) {
	in := Read()
	if in.GoVersion != runtime.Version() {
		t.Errorf("GoVersion %q, want %q", in.GoVersion, runtime.Version())
	}
	if want := runtime.GOOS + "/" + runtime.GOARCH; in.Platform != want {
		t.Errorf("Platform %q, want %q", in.Platform, want)
	}
	if in.Version == "" {
		t.Error("empty Version")
	}
}

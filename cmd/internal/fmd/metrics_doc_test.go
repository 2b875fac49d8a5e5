package fmd

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opavnic/opavnic/cmd/internal/metrics"
	"github.com/opavnic/opavnic/hfi/hfimetrics"
	"github.com/opavnic/opavnic/vnicd"
)

// Every metric of the FM (and of vnicd's HFI and VNICs, and the build info
// both export) has a row in docs/metrics.md's table, and every label of it,
// constant or variable, is named, in backquotes, in that row. opafm_info's
// row gave the vesw metrics' labels (vesw, name) for its name, lid and guid.
func TestMetricsDocLabels(t *testing.T) {
	b, err := os.ReadFile("../../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| `opafm_") || strings.HasPrefix(l, "| `opavnic_") {
			rows = append(rows, l)
		}
	}
	reName := regexp.MustCompile(`fqName: "([^"]+)"`)
	reLabels := regexp.MustCompile(`(?:variableLabels|constLabels): \{([^}]*)\}`)
	ch := make(chan *prometheus.Desc, 1024)
	NewCollector(nil).Describe(ch)
	hfimetrics.New(nil, "n").Describe(ch)
	vnicd.NewVNICCollector(nil).Describe(ch)
	metrics.BuildInfoCollector().Describe(ch)
	close(ch)
	for d := range ch {
		s := d.String()
		name := reName.FindStringSubmatch(s)[1]
		if strings.HasPrefix(name, "opavnic_vnic_") && strings.HasSuffix(name, "_total") {
			continue // one row for all: opavnic_vnic_<name>_total
		}
		var row string
		for _, r := range rows {
			if cells := strings.Split(r, "|"); len(cells) > 1 && strings.Contains(expandBraces(cells[1]), "`"+name+"`") {
				row = r
			}
		}
		if row == "" {
			t.Errorf("%s: no row in docs/metrics.md's table", name)
			continue
		}
		labelCell := strings.Split(row, "|")[3]
		for _, m := range reLabels.FindAllStringSubmatch(s, -1) {
			if m[1] == "" {
				continue
			}
			for _, l := range strings.Split(m[1], ",") {
				l, _, _ = strings.Cut(l, "=") // a constant label: name="value"
				if !strings.Contains(labelCell, "`"+strings.TrimSpace(l)+"`") {
					t.Errorf("%s: label %s is not in its docs/metrics.md row's labels: %s", name, l, labelCell)
				}
			}
		}
	}
}

// expandBraces writes out each {a,b} of text as a table row's names use
// them ("x_{a,b}_y" -> "x_a_y` `x_b_y"), one backquoted name each.
func expandBraces(text string) string {
	var out []string
	for _, f := range strings.Split(text, "`") {
		names := []string{f}
		for {
			i := strings.IndexByte(names[0], '{')
			j := strings.IndexByte(names[0], '}')
			if i < 0 || j < i {
				break
			}
			var next []string
			for _, n := range names {
				i, j := strings.IndexByte(n, '{'), strings.IndexByte(n, '}')
				for _, alt := range strings.Split(n[i+1:j], ",") {
					next = append(next, n[:i]+alt+n[j+1:])
				}
			}
			names = next
		}
		out = append(out, strings.Join(names, "` `"))
	}
	return strings.Join(out, "`")
}

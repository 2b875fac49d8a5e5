package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"go.uber.org/zap"
)

// The json format logs every record, as console does: zap's production
// config samples (after 100 records of one message in a second, one in
// 100), which dropped, say, most "vnic port created" lines of a node with
// 255 VNICs, or "node joined" of an FM's start-up sweep, only when logging
// JSON.
func TestJSONLogsEveryRecord(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stderr := os.Stderr
	os.Stderr = w
	log, err := NewLogger("info", "json")
	os.Stderr = stderr
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	done := make(chan int)
	go func() {
		lines := 0
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Errorf("not JSON: %q", sc.Text())
			}
			lines++
		}
		done <- lines
	}()
	for i := range n {
		log.Info("vnic port created", zap.Int("vnic", i))
	}
	log.Sync() //nolint:errcheck
	w.Close()
	if got := <-done; got != n {
		t.Errorf("%d records logged, want %d", got, n)
	}
}

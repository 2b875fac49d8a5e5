package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"go.uber.org/zap"
)

// jsonLogger returns NewLogger's json logger writing into a pipe, and a
// function that ends the logging and returns the records, each of which
// must parse as JSON.
func jsonLogger(t *testing.T) (*zap.Logger, func() []map[string]any) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	stderr := os.Stderr
	os.Stderr = w // zap opens "stderr" when the logger is built
	log, err := NewLogger("info", "json")
	os.Stderr = stderr
	if err != nil {
		t.Fatal(err)
	}
	recs := make(chan []map[string]any, 1)
	go func() { // read as the logger writes: a pipe holds only 64 KB
		var out []map[string]any
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Errorf("not JSON: %q", sc.Text())
			}
			out = append(out, v)
		}
		recs <- out
	}()
	return log, func() []map[string]any {
		log.Sync() //nolint:errcheck
		w.Close()
		return <-recs
	}
}

// The json format logs every record, as console does: zap's production
// config samples (after 100 records of one message in a second, one in
// 100), which dropped, say, most "vnic port created" lines of a node with
// 255 VNICs, or "node joined" of an FM's start-up sweep, only when logging
// JSON.
func TestJSONLogsEveryRecord(t *testing.T) {
	log, end := jsonLogger(t)
	const n = 300
	for i := range n {
		log.Info("vnic port created", zap.Int("vnic", i))
	}
	if got := len(end()); got != n {
		t.Errorf("%d records logged, want %d", got, n)
	}
}

// An error logged in json format carries no Go stack trace, as in console
// format: the stack of main.run says nothing about a bad config or a TAP
// that cannot be made, and buries the reason.
func TestJSONErrorHasNoStackTrace(t *testing.T) {
	log, end := jsonLogger(t)
	log.Error("cannot start", zap.String("error", "boom"))
	for _, v := range end() {
		if st, ok := v["stacktrace"]; ok {
			t.Errorf("an error record carries a stack trace: %.200v", st)
		}
	}
}

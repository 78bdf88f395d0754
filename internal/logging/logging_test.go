package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestFormats: text gives key=value lines, json one object per line, both
// at the level asked; an unknown format or level is refused.
func TestFormats(t *testing.T) {
	var buf bytes.Buffer
	log, c, err := Options{Level: "warn", Format: "json"}.New(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	log.Info("hidden")
	log.Warn("unknown configuration key", "key", "tickTme")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["msg"] != "unknown configuration key" ||
		line["key"] != "tickTme" || line["level"] != "WARN" {
		t.Fatalf("json: %q (%v)", buf.String(), err)
	}

	buf.Reset()
	log, _, err = Options{Level: "info", Format: "text"}.New(&buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("serving", "client", "127.0.0.1:2181")
	if got := buf.String(); !strings.Contains(got, "level=INFO msg=serving client=127.0.0.1:2181\n") {
		t.Fatalf("text: %q", got)
	}

	for _, o := range []Options{{Level: "loud", Format: "text"}, {Level: "info", Format: "xml"}} {
		if _, _, err := o.New(&buf); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
}

// TestFileRotates: with a file, the log goes there, not to stderr, and a
// file past its size is rotated into a compressed backup.
func TestFileRotates(t *testing.T) {
	var fs pflag.FlagSet
	var o Options
	o.AddFlags(&fs)
	dir := t.TempDir()
	file := filepath.Join(dir, "giraffe.log")
	if err := fs.Parse([]string{"--log-file", file, "--log-max-size", "1", "--log-format", "json"}); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	log, c, err := o.New(&stderr)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 4096)
	for i := 0; i < 300; i++ { // about 1.2 MiB
		log.Info("filler", "i", i, "data", big)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr got %d bytes", stderr.Len())
	}
	deadline := 0
	for {
		names, _ := filepath.Glob(filepath.Join(dir, "giraffe-*.log.gz"))
		if len(names) == 1 {
			break
		}
		// lumberjack compresses a rotated file in the background.
		if deadline++; deadline > 200 {
			entries, _ := os.ReadDir(dir)
			t.Fatalf("no compressed backup in %v", entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, err := os.Stat(file); err != nil || st.Size() == 0 || st.Size() > 1<<20 {
		t.Fatalf("current file: %v %v", st, err)
	}
}

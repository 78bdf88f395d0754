package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What the sessions benchmark reads of the servers from outside: a
// Prometheus counter, the growth of their log files, their connection
// count.

// LogBytesMetric is the counter of Giraffe's log writes that the sessions
// benchmark reads from --metrics.
const LogBytesMetric = "giraffe_log_bytes_written_total"

// metricsURL makes a metrics address (host:port, or a URL) a URL of the
// metrics page.
func metricsURL(addr string) string {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	if strings.Count(addr, "/") == 2 {
		addr += "/metrics"
	}
	return addr
}

// scrapeCounter reads the sample of the metric name (without labels) from
// the Prometheus text page at url.
func scrapeCounter(url, name string) (float64, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(metricsURL(url))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("bench: %s: %s", metricsURL(url), resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("bench: %s has no %s", metricsURL(url), name)
}

// logFilesWritten sums what the transaction log files under dir hold:
// the files named log.* (ZooKeeper's dataDir/version-2/log.<zxid>,
// Giraffe's log segments), each up to its last byte that is not zero.
// ZooKeeper makes its log files 64 MiB long ahead of its writes
// (preallocation, filled with zeros), so their sizes say nothing of
// what was written; where the written part ends does. Its records end in
// a non-zero byte (0x42), so the count is exact for ZooKeeper; a Giraffe
// record whose payload ends in zeros at the end of a file is counted
// short by those few bytes.
func logFilesWritten(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a file purged meanwhile
			}
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), "log.") {
			return nil
		}
		n, err := writtenLength(path)
		if os.IsNotExist(err) {
			return nil
		}
		total += n
		return err
	})
	return total, err
}

// seekHole is lseek's SEEK_HOLE on Linux: the first hole at or after the
// offset. Elsewhere the seek fails and the file is read from its end.
const seekHole = 4

// writtenLength is the offset just past the last non-zero byte of the
// file at path. A sparse file (ZooKeeper extends its log by writing one
// byte 64 MiB ahead) is searched back from its first hole, not from its
// end, so that the zeros the hole stands for are not read.
func writtenLength(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := fi.Size()
	if hole, err := f.Seek(0, seekHole); err == nil && hole < end {
		end = hole
	}
	buf := make([]byte, 64<<10)
	for end > 0 {
		from := max(end-int64(len(buf)), 0)
		b := buf[:end-from]
		if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
			return 0, err
		}
		if i := lastNonZero(b); i >= 0 {
			return from + int64(i) + 1, nil
		}
		end = from
	}
	return 0, nil
}

// lastNonZero returns the index of b's last byte that is not zero, or -1.
func lastNonZero(b []byte) int {
	for len(b) > 0 {
		k := len(b) - 1
		if b[k] != 0 {
			return k
		}
		// Skip a run of zeros eight bytes at a time.
		for k >= 8 && bytes.Equal(b[k-8:k], zero8[:]) {
			k -= 8
		}
		b = b[:k]
	}
	return -1
}

var zero8 [8]byte

// aliveConnections asks the server at addr for its open client
// connections: zk_num_alive_connections of the mntr four-letter word,
// which ZooKeeper and Giraffe both answer (the asking connection may
// count itself).
func aliveConnections(addr string) (int, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte("mntr")); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(nc)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "zk_num_alive_connections"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("bench: %s: no zk_num_alive_connections in mntr (is mntr in 4lw.commands.whitelist?)", addr)
}

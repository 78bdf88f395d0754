package wal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const (
	crashDirEnv    = "GIRAFFE_WAL_CRASH_DIR"
	crashSeedEnv   = "GIRAFFE_WAL_CRASH_SEED"
	crashTaggedEnv = "GIRAFFE_WAL_CRASH_TAGGED"
	crashSegment   = 64 << 10
)

// crashSize is the payload size of record zxid in the crash test, a pure
// function of the zxid so that the parent can check every payload.
func crashSize(zxid int64) int { return int(uint64(zxid) * 0x9e3779b97f4a7c15 >> 53) } // 0..2047

// TestCrashChild is the child half of TestCrashRecovery; it does nothing
// unless started by it. It appends and syncs batches forever, printing the
// last zxid of each batch once Sync has returned: a printed zxid is an
// acknowledged write. It writes format version 2 when told to.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("child process of TestCrashRecovery")
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 0))
	l, err := Open(dir, Options{SegmentBytes: crashSegment, Tagged: os.Getenv(crashTaggedEnv) != ""})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	z := l.LastZxid()
	for {
		n := 1 + rng.IntN(32)
		for range n {
			z++
			if err := l.AppendTagged(z, maskFor(z), payloadFor(z, crashSize(z))); err != nil {
				fmt.Fprintln(os.Stderr, "child append:", err)
				os.Exit(2)
			}
		}
		if err := l.Sync(); err != nil {
			fmt.Fprintln(os.Stderr, "child sync:", err)
			os.Exit(2)
		}
		// One write(2) per line, straight to the pipe: no user-space
		// buffer can hold an acknowledgement back.
		if _, err := os.Stdout.WriteString(strconv.FormatInt(z, 10) + "\n"); err != nil {
			os.Exit(2)
		}
	}
}

// TestCrashRecovery kills a writing child process with SIGKILL at random
// moments (including during its recovery at startup) and checks after each
// kill that the log is a gap-free, intact prefix containing every zxid the
// child acknowledged. Every other kill also simulates a power failure,
// which (unlike SIGKILL) loses writes that no fsync covered. Each child
// writes format version 1 or 2 at random, so the log mixes segments of
// both and power failures damage either.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	var acked int64
	kills, repairs := 0, 0
	for iter := range 20 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, fmt.Sprintf("%s=%d", crashSeedEnv, rng.Uint64()))
		if rng.IntN(2) == 0 {
			cmd.Env = append(cmd.Env, crashTaggedEnv+"=1")
		}
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan int64, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if z, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
					lines <- z
				}
			}
		}()
		deadline := time.After(time.Duration(rng.IntN(300)) * time.Millisecond)
	run:
		for {
			select {
			case z, ok := <-lines:
				if !ok {
					t.Fatalf("iteration %d: child exited on its own: %v", iter, cmd.Wait())
				}
				if z <= acked {
					t.Fatalf("iteration %d: child acknowledged %d after %d", iter, z, acked)
				}
				acked = z
			case <-deadline:
				break run
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		kills++
		// Acknowledgements already in the pipe count too.
		for z := range lines {
			acked = z
		}
		cmd.Wait()
		if rng.IntN(2) == 0 {
			losePowerT(t, dir, acked, rng)
		}

		logs := &logRecorder{}
		l, err := Open(dir, Options{SegmentBytes: crashSegment, Logger: slog.New(logs)})
		if err != nil {
			t.Fatalf("iteration %d: reopening after SIGKILL: %v", iter, err)
		}
		want := int64(1)
		err = l.ReplayRecords(0, func(r Record) error {
			z := r.Zxid
			if z != want {
				return fmt.Errorf("found zxid %d, want %d: the log has a gap", z, want)
			}
			if string(r.Payload) != string(payloadFor(z, crashSize(z))) {
				return fmt.Errorf("payload of zxid %d is damaged", z)
			}
			if wantMask := maskFor(z); !r.Tagged && r.Mask != MaskAll || r.Tagged && r.Mask != wantMask {
				return fmt.Errorf("zxid %d (tagged %v) has mask %#x", z, r.Tagged, r.Mask)
			}
			want++
			return nil
		})
		last := l.LastZxid()
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		if last != want-1 || last < acked {
			t.Fatalf("iteration %d: log ends at %d (replayed to %d), but %d was acknowledged", iter, last, want-1, acked)
		}
		repairs += len(logs.warnings())
	}
	t.Logf("%d kills, %d records acknowledged, %d segments, %d repairs logged", kills, acked, len(segmentPaths(t, dir)), repairs)
}

// losePowerT damages the newest segment the way a power failure can: past
// the last acknowledged (hence synced) record, the file is cut short, its
// end reads as zeros, or some whole sectors read as zeros while later ones
// hold data. Older segments were synced in full before the newest one was
// created, so they are left alone.
func losePowerT(t *testing.T, dir string, acked int64, rng *rand.Rand) {
	t.Helper()
	paths := segmentPaths(t, dir)
	if len(paths) == 0 {
		return
	}
	path := paths[len(paths)-1]
	b := mustRead(t, path)
	hs := int64(recordHeaderSize(binary.LittleEndian.Uint32(b[4:8])))
	synced := int64(segmentHeaderSize)
	for _, off := range recordOffsets(t, path) {
		if off+hs > int64(len(b)) || int64(binary.LittleEndian.Uint64(b[off+8:])) > acked {
			break
		}
		synced = off + hs + int64(binary.LittleEndian.Uint32(b[off+4:]))
	}
	if synced >= int64(len(b)) {
		return
	}
	cut := synced + rng.Int64N(int64(len(b))-synced)
	switch rng.IntN(3) {
	case 0: // the size reached the disk, some data did not
		b = b[:cut]
	case 1: // the data did not reach the disk, the size did
		clear(b[cut:])
	default: // the disk persisted later sectors but not earlier ones
		from := (synced + sectorBytes - 1) / sectorBytes * sectorBytes
		if n := (int64(len(b)) - from) / sectorBytes; n > 0 {
			lost := from + rng.Int64N(n)*sectorBytes
			clear(b[lost : lost+sectorBytes*(1+rng.Int64N(min(n-(lost-from)/sectorBytes, 4)))])
		}
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

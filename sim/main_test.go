package sim

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	LightGC()
	os.Exit(m.Run())
}

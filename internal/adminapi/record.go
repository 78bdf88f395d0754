package adminapi

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/giraffe-coord/giraffe/internal/jsonfile"
)

// recordFile, in a joined server's data directory, holds its JoinRecord.
const recordFile = "ensemble.json"

// JoinRecord is what a server that joined a running ensemble keeps in its
// data directory, so that it restarts as a member without being told
// again: the ensemble's answer to its join.
type JoinRecord struct {
	Membership
	// Pending says that the change adding the server has not been
	// confirmed yet: the server asks for it again when it starts.
	Pending bool `json:"pending,omitempty"`
}

// SaveJoinRecord writes r to dataDir, atomically.
func SaveJoinRecord(dataDir string, r JoinRecord) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	return jsonfile.Write(filepath.Join(dataDir, recordFile), r)
}

// LoadJoinRecord reads what SaveJoinRecord wrote; ok is false when dataDir
// holds none (the server never joined).
func LoadJoinRecord(dataDir string) (r JoinRecord, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, recordFile))
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	return r, true, json.Unmarshal(b, &r)
}

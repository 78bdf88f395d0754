// Package jsonfile keeps a small record as an indented JSON file that
// readers see either whole or not at all: the launchers' layouts, a
// joining server's record and a server's quarantined namespaces.
package jsonfile

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// Write replaces path's content with v as indented JSON. It writes a
// temporary file beside path and renames it over path, so a reader, or a
// crash, never finds half a record.
func Write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Read decodes path into v. An error reading the file is returned as it
// is (os.IsNotExist holds for a missing one); an error decoding it names
// the file.
func Read(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteSynced is Write for a record that must survive a power failure once
// it returns: the temporary file is fsynced before the rename, and the
// directory after it.
func WriteSynced(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, b, false)
}

package slurmstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aicloud/gpusuite/internal/spool"
)

// FileSchema names the JSON document WriteFile writes: Slurm's view kept
// in a file by a process that has it (the demo's simulated Slurm), for
// readers that cannot ask that Slurm.
const FileSchema = "gpusuite.slurmview/v1"

// MaxFileBytes bounds ReadFile, as Reader bounds each scontrol output.
const MaxFileBytes = 16 << 20

type fileDoc struct {
	Schema string `json:"schema"`
	State  State  `json:"state"`
}

// WriteFile replaces path with st, atomically (a temporary file beside it,
// fsync'd, then renamed), so that a reader never sees half a view.
func WriteFile(path string, st State) error {
	data, err := json.MarshalIndent(fileDoc{Schema: FileSchema, State: st}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode Slurm's view: %w", err)
	}
	if err := spool.ReplaceFile(path, bytes.NewReader(append(data, '\n')), 0o644); err != nil {
		return fmt.Errorf("write Slurm's view %q: %w", path, err)
	}
	return nil
}

// ReadFile reads a view WriteFile wrote: a regular file (not followed
// through a link, not a FIFO) of at most MaxFileBytes, strict JSON of
// FileSchema. Its errors are one line that names the file.
func ReadFile(path string) (State, error) {
	data, _, err := spool.ReadRegular(path, MaxFileBytes)
	switch {
	case errors.Is(err, spool.ErrNotRegular):
		return State{}, fmt.Errorf("read Slurm's view %q: not a regular file", path)
	case errors.Is(err, spool.ErrTooLarge), errors.Is(err, spool.ErrGrew):
		return State{}, fmt.Errorf("read Slurm's view %q: larger than %d MiB", path, MaxFileBytes>>20)
	case err != nil:
		return State{}, fmt.Errorf("read Slurm's view %q: %w", path, err)
	}
	var doc fileDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return State{}, fmt.Errorf("read Slurm's view %q: not a Slurm view file (%s): %w", path, FileSchema, err)
	}
	if dec.More() {
		return State{}, fmt.Errorf("read Slurm's view %q: not a Slurm view file (%s): data after the document", path, FileSchema)
	}
	if doc.Schema != FileSchema {
		return State{}, fmt.Errorf("read Slurm's view %q: schema %q, want %q", path, clip(doc.Schema), FileSchema)
	}
	if doc.State.At.IsZero() {
		return State{}, fmt.Errorf("read Slurm's view %q: it does not say when Slurm was read (no state.At)", path)
	}
	return doc.State, nil
}

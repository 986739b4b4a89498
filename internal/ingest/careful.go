package ingest

import (
	"errors"
	"fmt"

	"github.com/aicloud/gpusuite/internal/store"
)

// On PostgreSQL a batch's writes wait in a pipeline and reach the server
// together (store.Batch.Pipelined). Sending them after each file, so that
// a write the server refuses is known to be that file's, costs a round
// trip a file; a pass sends them at the next read instead, and only when
// something fails does it learn too little to set the right file aside.
// Then the batch is rolled back and the pass done again file by file
// (careful), which finds the file, sets it aside and goes on.

// redoCarefully is a batch failure that a careful pass may pin on a file.
type redoCarefully struct{ err error }

func (r *redoCarefully) Error() string {
	return fmt.Sprintf("a write of the batch failed (%v); the pass is done again file by file", r.err)
}
func (r *redoCarefully) Unwrap() error { return r.err }

// mayRedo is err as the batch returns it: a failure of a batch that sent
// its writes together (not careful) asks for a careful pass, unless it is
// about the machine or the pass was stopped, which a careful pass would
// meet the same way.
func mayRedo(careful bool, err error) error {
	if err == nil || careful || resourceError(err) {
		return err
	}
	return &redoCarefully{err}
}

func asRedo(err error) (*redoCarefully, bool) {
	var r *redoCarefully
	return r, errors.As(err, &r)
}

// carried is what a pass done again keeps of the attempt before it: the
// files that attempt committed or set aside are gone from incoming.
func carried(r Result) Result {
	return Result{Files: r.Files, Records: r.Records, Samples: r.Samples, Duplicates: r.Duplicates, Quarantined: r.Quarantined}
}

// seenFiles answers "ingested before with this content?" for a pass's
// files from one query per chunk of them, in the order the writer takes
// them, in place of one query a file.
type seenFiles struct {
	files []file
	at    map[string]int // node/name -> index in files
	next  int            // files[:next] were asked about
	known map[string]string
}

func newSeenFiles(files []file) *seenFiles {
	s := &seenFiles{files: files, at: make(map[string]int, len(files)), known: map[string]string{}}
	for i, f := range files {
		s.at[f.node+"/"+f.name] = i
	}
	return s
}

// seen reports whether f was ingested with content hash already.
func (s *seenFiles) seen(b *store.Batch, f file, hash string) (bool, error) {
	k := f.node + "/" + f.name
	i, listed := s.at[k]
	if !listed {
		return b.FileSeen(f.node, f.name, hash)
	}
	if i >= s.next {
		if err := s.ask(b, i); err != nil {
			return false, err
		}
	}
	h, ok := s.known[k]
	return ok && h == hash, nil
}

// ask looks up the files from index i on, up to store.MaxFilesAsked of
// them, one query per node among them.
func (s *seenFiles) ask(b *store.Batch, i int) error {
	end := min(len(s.files), i+store.MaxFilesAsked)
	byNode := map[string][]string{}
	var nodes []string
	for _, f := range s.files[i:end] {
		if byNode[f.node] == nil {
			nodes = append(nodes, f.node)
		}
		byNode[f.node] = append(byNode[f.node], f.name)
	}
	for _, n := range nodes {
		known, err := b.FilesKnown(n, byNode[n])
		if err != nil {
			return err
		}
		for name, h := range known {
			s.known[n+"/"+name] = h
		}
	}
	s.next = end
	return nil
}

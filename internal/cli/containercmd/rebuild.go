package containercmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/container"
)

// rebuild builds the new container under a name of its own and swaps it
// in only once it exists: a wrong tag, a refused key or a failed setup
// leaves the user with the container they had. busy is the user's jobs
// by container, as sbuild found them before the build.
func rebuild(c *cli.Context, e *env, p *plan, busy map[string][]string) error {
	sys, name := e.sys, p.build.Name
	fresh, old := name+container.NewSuffix, name+container.OldSuffix
	// Leftovers of an earlier rebuild are sbuild's own: pyxis's :create
	// would refuse the first, the swap the second. One that a job still
	// builds belongs to a rebuild running now.
	if jobs := busy[fresh]; len(jobs) > 0 {
		return fmt.Errorf("another sbuild --rebuild of %s is running (job %s); wait for it or scancel %s", container.EnrootName(name), strings.Join(jobs, ","), strings.Join(jobs, " "))
	}
	for _, n := range []string{fresh, old} {
		if ok, _ := container.Exists(e.paths.Data, n); ok {
			if err := e.remove(c.Context, n); err != nil {
				return fmt.Errorf("remove the leftover %s of an earlier rebuild: %w", container.EnrootName(n), err)
			}
		}
	}
	b := p.build
	b.Name = fresh
	fmt.Fprintln(sys.Stderr, e.tr.T("sbuild: creating the new %s from %s as %s; the old one stays until it is ready", container.EnrootName(name), b.Ref, container.EnrootName(fresh)))
	code, tail, err := runBuild(c.Context, sys, b)
	if err != nil {
		return fmt.Errorf("%w; %s is kept as it was", err, container.EnrootName(name))
	}
	created, _ := container.Exists(e.paths.Data, fresh)
	meta := p.meta(e, sys.Now())
	if code != 0 {
		if created && p.setup != "" {
			meta.Name, meta.SetupExit = fresh, code
			if err := container.WriteMeta(e.paths.Data, meta); err != nil {
				sys.Logger.Warn("cannot record metadata", "err", err)
			}
			return &cliwire.ExitError{Code: code, Err: fmt.Errorf("setup script %s failed with exit code %d; the old %s is kept, and the new one is %s so you can look inside (srun-wrap --name %s); fix the script and run sbuild --rebuild --setup %s", p.setup, code, container.EnrootName(name), container.EnrootName(fresh), fresh, p.setup)}
		}
		if created {
			if err := e.remove(c.Context, fresh); err != nil {
				sys.Logger.Warn("cannot remove the failed new container", "name", container.EnrootName(fresh), "err", err)
			}
		}
		return &cliwire.ExitError{Code: code, Err: fmt.Errorf("creating the new %s failed (srun exit %d): %s; the old %s is kept", container.EnrootName(name), code, diagnose(tail, e), container.EnrootName(name))}
	}
	if !created {
		return fmt.Errorf("srun succeeded but the new %s is not in %s, so it cannot replace the old one, which is kept: the GPU servers keep containers elsewhere (set container.data_path) or pyxis uses container_scope=job", container.EnrootName(fresh), e.paths.Data)
	}
	// A job may have started in the old container while the new one was
	// built; removing it now would pull its files from under the job.
	if _, err := e.notBusy(c.Context, name); err != nil {
		if rerr := e.remove(c.Context, fresh); rerr != nil {
			sys.Logger.Warn("cannot remove the new container", "name", container.EnrootName(fresh), "err", rerr)
		}
		return fmt.Errorf("%w (it started during the build; the old container is kept and the new one removed)", err)
	}
	if err := container.Swap(e.paths.Data, name, fresh, old); err != nil {
		return fmt.Errorf("replace %s: %w", container.EnrootName(name), err)
	}
	if err := container.WriteMeta(e.paths.Data, meta); err != nil {
		fmt.Fprintf(sys.Stderr, "warning: %v\n", err)
	}
	if err := e.remove(c.Context, old); err != nil {
		fmt.Fprintln(sys.Stderr, e.tr.T("warning: the old container is left as %s (%v); remove it with sbuild rm %s", container.EnrootName(old), err, old))
	}
	return done(e, name)
}

// runBuild runs the build's srun, showing its output and keeping the end
// of it to explain a failure.
func runBuild(ctx context.Context, sys container.Sys, b container.Build) (code int, tail string, err error) {
	t := &tailBuffer{max: 64 << 10}
	code, err = sys.Run(ctx, container.Cmd{Argv: container.BuildArgv(b), Stdin: sys.Stdin, Stdout: sys.Stdout, Stderr: io.MultiWriter(sys.Stderr, t)})
	return code, t.String(), err
}

// askRegistry asks the image's registry, as enroot will, whether the tag
// exists and the user's enroot credentials may pull it, within timeout.
func (e *env) askRegistry(ctx context.Context, img container.Image, timeout time.Duration) *container.Finding {
	if e.sys.HTTP == nil || img.Path != "" {
		return nil
	}
	if timeout <= 0 {
		return &container.Finding{Level: container.Warn, Check: "registry", Msg: "--registry-timeout is not positive; the image's registry was not asked"}
	}
	cf := e.credentials()
	var creds []container.Credential
	if cf.err == nil {
		// A malformed file is the credentials check's to report; what
		// parses is what enroot's curl would send.
		creds, _ = container.ParseCredentials(string(cf.data))
	} else if !isNotExist(cf.err) {
		e.sys.Logger.Debug("enroot credentials unreadable", "path", cf.path, "err", cf.err)
	}
	allow := strings.ToLower(e.sys.Getenv("ENROOT_ALLOW_HTTP"))
	q := container.RegistryQuery{Client: e.sys.HTTP, Creds: creds, CredPath: cf.path, HTTP: allow == "y" || allow == "yes" || allow == "true" || allow == "1"}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return container.CheckRegistry(ctx, q, img)
}

// maxCredentials bounds the read of the enroot credentials file.
const maxCredentials = 1 << 20

// credsFile is the user's enroot credentials file as read: its bytes
// (at most maxCredentials), its mode, or why it could not be read.
type credsFile struct {
	path string
	data []byte
	mode os.FileMode
	err  error
}

// credentials reads the enroot credentials file once, for both the
// credentials check and the registry's question.
func (e *env) credentials() *credsFile {
	if e.creds == nil {
		cf := &credsFile{path: filepath.Join(e.paths.Config, ".credentials")}
		cf.data, cf.mode, cf.err = readBounded(cf.path, maxCredentials)
		e.creds = cf
	}
	return e.creds
}

// readBounded reads at most max bytes of the file at path, and its mode.
func readBounded(path string, max int64) ([]byte, os.FileMode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var mode os.FileMode
	if fi, err := f.Stat(); err == nil {
		mode = fi.Mode()
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	return data, mode, err
}

// notBusy asks squeue for the user's jobs by container, and refuses to
// replace container name while one of them runs in it.
func (e *env) notBusy(ctx context.Context, name string) (map[string][]string, error) {
	busy, err := e.busy(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot tell whether a job uses %s, so not replacing it: %w", container.EnrootName(name), err)
	}
	if jobs := busy[name]; len(jobs) > 0 {
		return busy, fmt.Errorf("refusing to rebuild %s: your job %s is using it; wait for it or scancel %s", container.EnrootName(name), strings.Join(jobs, ","), strings.Join(jobs, " "))
	}
	return busy, nil
}

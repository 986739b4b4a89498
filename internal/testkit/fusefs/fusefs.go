// Package fusefs serves a directory through FUSE the way an NFS server
// with 1 s timestamps looks to its clients: every timestamp is cut to a
// whole second, attributes are fetched again on every open and stat (close-
// to-open consistency), and the kernel keeps a file's cached pages across
// opens, dropping them only when it sees the mtime or size change (go-fuse's
// automatic invalidation). Two mounts of one directory behave like two
// clients of one server.
package fusefs

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mount is one client's view of the backing directory.
type Mount struct {
	Dir    string
	server *fuse.Server
}

// Options tune a mount.
type Options struct {
	// AttrTimeout is how long the kernel trusts attributes (default 0:
	// ask on every stat, like an NFS open does).
	AttrTimeout time.Duration
	// Granularity is the timestamp resolution (default 1 s).
	Granularity time.Duration
}

// New mounts backing at dir. Unmount with Close.
func New(backing, dir string, o Options) (*Mount, error) {
	if o.Granularity == 0 {
		o.Granularity = time.Second
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("stat %q: %w", backing, err)
	}
	data := &fs.LoopbackRoot{Path: backing, Dev: st.Dev}
	data.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}}
	}
	root := &node{LoopbackNode: fs.LoopbackNode{RootData: data}}
	data.RootNode = root
	attr, entry := o.AttrTimeout, o.AttrTimeout
	opts := &fs.Options{AttrTimeout: &attr, EntryTimeout: &entry}
	opts.MountOptions = fuse.MountOptions{
		FsName:             "fusetest",
		Name:               "fusetest",
		DisableReadDirPlus: true,
		// Leave automatic data cache invalidation on: the kernel drops
		// cached pages when a fresh mtime or size differs.
		ExplicitDataCacheControl: false,
		DirectMount:              true,
	}
	raw := &coarse{RawFileSystem: fs.NewNodeFS(root, opts), g: uint64(o.Granularity / time.Nanosecond)}
	srv, err := fuse.NewServer(raw, dir, &opts.MountOptions)
	if err != nil {
		return nil, fmt.Errorf("mount %q: %w", dir, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		return nil, fmt.Errorf("mount %q: %w", dir, err)
	}
	return &Mount{Dir: dir, server: srv}, nil
}

// Close unmounts, retrying while the mount is busy.
func (m *Mount) Close() error {
	var err error
	for i := 0; i < 50; i++ {
		if err = m.server.Unmount(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("unmount %q: %w", m.Dir, err)
}

// Path joins the mount directory and a name.
func (m *Mount) Path(name string) string { return m.Dir + string(os.PathSeparator) + name }

// coarse cuts timestamps to the granularity and keeps page caches across
// opens.
type coarse struct {
	fuse.RawFileSystem
	g uint64 // granularity in ns
}

func (c *coarse) cut(a *fuse.Attr) {
	cut := func(sec *uint64, nsec *uint32) {
		t := *sec*1e9 + uint64(*nsec)
		t -= t % c.g
		*sec, *nsec = t/1e9, uint32(t%1e9)
	}
	cut(&a.Atime, &a.Atimensec)
	cut(&a.Mtime, &a.Mtimensec)
	cut(&a.Ctime, &a.Ctimensec)
}

// cutAttr is cut(a) after the call that filled a returned st.
func (c *coarse) cutAttr(st fuse.Status, a *fuse.Attr) fuse.Status {
	c.cut(a)
	return st
}

func (c *coarse) cutx(a *fuse.SxTime) {
	t := a.Sec*1e9 + uint64(a.Nsec)
	t -= t % c.g
	a.Sec, a.Nsec = t/1e9, uint32(t%1e9)
}

func (c *coarse) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	return c.cutAttr(c.RawFileSystem.Lookup(cancel, h, name, out), &out.Attr)
}

func (c *coarse) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	return c.cutAttr(c.RawFileSystem.GetAttr(cancel, in, out), &out.Attr)
}

func (c *coarse) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	return c.cutAttr(c.RawFileSystem.SetAttr(cancel, in, out), &out.Attr)
}

func (c *coarse) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	st := c.RawFileSystem.Statx(cancel, in, out)
	c.cutx(&out.Atime)
	c.cutx(&out.Mtime)
	c.cutx(&out.Ctime)
	c.cutx(&out.Btime)
	return st
}

func (c *coarse) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	return c.cutAttr(c.RawFileSystem.Mknod(cancel, in, name, out), &out.Attr)
}

func (c *coarse) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return c.cutAttr(c.RawFileSystem.Mkdir(cancel, in, name, out), &out.Attr)
}

func (c *coarse) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	return c.cutAttr(c.RawFileSystem.Link(cancel, in, name, out), &out.Attr)
}

func (c *coarse) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	return c.cutAttr(c.RawFileSystem.Symlink(cancel, h, target, name, out), &out.Attr)
}

func (c *coarse) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	st := c.RawFileSystem.Create(cancel, in, name, out)
	c.cut(&out.Attr)
	out.OpenFlags |= fuse.FOPEN_KEEP_CACHE
	return st
}

func (c *coarse) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	st := c.RawFileSystem.Open(cancel, in, out)
	out.OpenFlags |= fuse.FOPEN_KEEP_CACHE
	return st
}

// node is a loopback node whose open files are served through the page
// cache (FUSE passthrough, which bypasses it, is kept off).
type node struct {
	fs.LoopbackNode
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{fh}, fl, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, &file{fh}, fl, 0
}

// file forwards to the loopback file but hides its PassthroughFd.
type file struct{ h fs.FileHandle }

func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return f.h.(fs.FileReader).Read(ctx, dest, off)
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return f.h.(fs.FileWriter).Write(ctx, data, off)
}

func (f *file) Flush(ctx context.Context) syscall.Errno { return f.h.(fs.FileFlusher).Flush(ctx) }

func (f *file) Release(ctx context.Context) syscall.Errno {
	return f.h.(fs.FileReleaser).Release(ctx)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return f.h.(fs.FileFsyncer).Fsync(ctx, flags)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.h.(fs.FileGetattrer).Getattr(ctx, out)
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.h.(fs.FileSetattrer).Setattr(ctx, in, out)
}

package container

import (
	"fmt"
	"strconv"
	"strings"
)

// Image is a parsed image reference as sbuild accepts it: Docker's form
// (nvcr.io/nvidia/pytorch:24.05-py3, ubuntu:22.04), enroot's form
// ([USER@][REGISTRY#]IMAGE[:TAG][@DIGEST]), or a path to a squashfs file.
type Image struct {
	// User is enroot's USER@ prefix (registry login), rarely used.
	User string
	// Registry is the registry host (nvcr.io, ghcr.io, localhost:5000);
	// empty means Docker Hub.
	Registry string
	// Repo is the repository path (nvidia/pytorch, ubuntu).
	Repo string
	// Tag is the tag; empty means "latest" unless Digest is set.
	Tag string
	// Digest is sha256:... when given.
	Digest string
	// Path is set instead of the rest for a squashfs file.
	Path string
	// HashForm records that the reference used enroot's '#' separator.
	HashForm bool
}

// ParseImage parses ref. It refuses what neither Docker nor enroot would
// accept, with a message that says how to write it.
func ParseImage(ref string) (Image, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Image{}, fmt.Errorf("image reference is empty; give one such as nvcr.io/nvidia/pytorch:24.05-py3")
	}
	if strings.HasPrefix(ref, "docker://") || strings.HasPrefix(ref, "dockerd://") || strings.HasPrefix(ref, "podman://") {
		return Image{}, fmt.Errorf("image %q: leave out the %s prefix; pyxis adds docker:// itself", ref, ref[:strings.Index(ref, "://")+3])
	}
	if strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "./") || strings.HasPrefix(ref, "../") || strings.HasSuffix(ref, ".sqsh") || strings.HasSuffix(ref, ".squashfs") {
		return Image{Path: ref}, nil
	}
	if strings.ContainsAny(ref, " \t\n,") {
		return Image{}, fmt.Errorf("image %q contains a space or ','; an image reference has neither", ref)
	}
	var img Image
	rest := ref
	if i := strings.Index(rest, "#"); i >= 0 {
		img.HashForm = true
		reg := rest[:i]
		rest = rest[i+1:]
		if j := strings.Index(reg, "@"); j >= 0 {
			img.User, reg = reg[:j], reg[j+1:]
		}
		if reg == "" || strings.Contains(reg, "/") {
			return Image{}, fmt.Errorf("image %q: the part before '#' must be a registry host such as nvcr.io", ref)
		}
		img.Registry = reg
		if strings.Contains(rest, "#") {
			return Image{}, fmt.Errorf("image %q has more than one '#'", ref)
		}
	} else if j := strings.Index(rest, "@"); j >= 0 && !strings.HasPrefix(rest[j+1:], "sha256:") {
		img.User, rest = rest[:j], rest[j+1:]
	}
	if i := strings.Index(rest, "@"); i >= 0 {
		img.Digest = rest[i+1:]
		rest = rest[:i]
		if !strings.HasPrefix(img.Digest, "sha256:") || len(img.Digest) != len("sha256:")+64 || strings.Trim(img.Digest[7:], "0123456789abcdef") != "" {
			return Image{}, fmt.Errorf("image %q: digest %q is not sha256: followed by 64 hex digits", ref, img.Digest)
		}
	}
	if !img.HashForm {
		if i := strings.Index(rest, "/"); i >= 0 {
			first := rest[:i]
			if strings.ContainsAny(first, ".:") || first == "localhost" {
				img.Registry, rest = first, rest[i+1:]
			}
		}
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		img.Tag = rest[i+1:]
		rest = rest[:i]
		if img.Tag == "" || strings.Contains(img.Tag, "/") {
			return Image{}, fmt.Errorf("image %q: tag after ':' is empty or holds '/'", ref)
		}
	}
	img.Repo = rest
	if img.Repo == "" || strings.HasPrefix(img.Repo, "/") || strings.HasSuffix(img.Repo, "/") || strings.Contains(img.Repo, "//") || strings.Contains(img.Repo, ":") {
		return Image{}, fmt.Errorf("image %q: repository %q is not a path such as nvidia/pytorch", ref, img.Repo)
	}
	if img.Repo != strings.ToLower(img.Repo) {
		return Image{}, fmt.Errorf("image %q: repository names are lower case; use %q", ref, strings.ToLower(img.Repo))
	}
	return img, nil
}

// Docker writes the reference in Docker's form.
func (i Image) Docker() string {
	if i.Path != "" {
		return i.Path
	}
	s := i.Repo
	if i.Registry != "" {
		s = i.Registry + "/" + s
	}
	return s + i.suffix()
}

// Enroot writes the reference in enroot's REGISTRY#IMAGE form, which every
// enroot version reads the same way.
func (i Image) Enroot() string {
	if i.Path != "" {
		return i.Path
	}
	s := i.Repo + i.suffix()
	if i.Registry != "" {
		s = i.Registry + "#" + s
	}
	if i.User != "" {
		s = i.User + "@" + s
	}
	return s
}

func (i Image) suffix() string {
	s := ""
	if i.Tag != "" {
		s += ":" + i.Tag
	}
	if i.Digest != "" {
		s += "@" + i.Digest
	}
	return s
}

// ResolvedTag is the tag the registry will serve: the given one, or
// "latest" when neither tag nor digest is given.
func (i Image) ResolvedTag() string {
	if i.Tag == "" && i.Digest == "" && i.Path == "" {
		return "latest"
	}
	return i.Tag
}

// ForEnroot returns the reference to hand to pyxis for an enroot of the
// given version, and a note when it had to be rewritten. enroot before 4
// reads "nvcr.io/nvidia/x" as the Docker Hub repository nvcr.io/nvidia/x
// and fails with an authentication error; "nvcr.io#nvidia/x" works in all
// versions. An unknown version is treated as old.
func (i Image) ForEnroot(original string, v Version) (ref, note string) {
	if i.Path != "" || i.HashForm || i.Registry == "" {
		return original, ""
	}
	if v.Known() && v.Major >= 4 {
		return original, ""
	}
	ref = i.Enroot()
	which := "enroot " + v.String()
	if !v.Known() {
		which = "enroot of unknown version"
	}
	return ref, fmt.Sprintf("note: %s would look for %q on Docker Hub; using %q instead", which, original, ref)
}

// Version is an enroot version such as 3.4.1.
type Version struct {
	Major, Minor, Patch int
	known               bool
}

// ParseVersion reads the output of `enroot version` ("3.4.1").
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "v")
	if f := strings.Fields(s); len(f) > 0 {
		s = f[len(f)-1]
	}
	if i := strings.IndexAny(s, "-+~"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("enroot version %q is not MAJOR.MINOR[.PATCH]", s)
	}
	var n [3]int
	for k, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Version{}, fmt.Errorf("enroot version %q is not MAJOR.MINOR[.PATCH]", s)
		}
		n[k] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2], known: true}, nil
}

// Known reports whether the version was found.
func (v Version) Known() bool { return v.known }

func (v Version) String() string {
	if !v.known {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

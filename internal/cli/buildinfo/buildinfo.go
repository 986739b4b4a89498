// Package buildinfo is the suite's version: the variables of
// github.com/prometheus/common/version, set at build time with
//
//	-ldflags "-X github.com/prometheus/common/version.Version=... -X ...Revision=..."
//
// (see the Makefile). It stays small so the hooks can print it cheaply.
package buildinfo

import "github.com/prometheus/common/version"

// Version is the release, "unknown" when the build did not set one.
func Version() string {
	if version.Version == "" {
		return "unknown"
	}
	return version.Version
}

// Print is the --version text of program.
func Print(program string) string {
	if version.Version == "" {
		// A build without -ldflags still says something readable.
		version.Version = "unknown"
	}
	return version.Print(program)
}

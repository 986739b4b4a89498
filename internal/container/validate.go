package container

import (
	"fmt"
	"regexp"
	"strings"
)

// slurmTime matches the time limits srun and sbatch accept: minutes,
// minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes
// and days-hours:minutes:seconds.
var slurmTime = regexp.MustCompile(`^[0-9]{1,9}(:[0-9]{1,9}){0,2}$|^[0-9]{1,9}-[0-9]{1,9}(:[0-9]{1,9}){0,2}$`)

// CheckTime refuses a time limit Slurm would not read, naming the forms
// it does, so the mistake shows here and not in srun's own words later.
func CheckTime(t string) error {
	if slurmTime.MatchString(t) || strings.EqualFold(t, "UNLIMITED") || strings.EqualFold(t, "INFINITE") {
		return nil
	}
	return fmt.Errorf("%q is not a Slurm time limit; write MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED, e.g. 4:00:00", t)
}

// JobTime is the time limit from --time (or its variable) or else the
// configuration, checked.
func JobTime(flagSet bool, flag, configured string) (string, error) {
	if flagSet {
		if err := CheckTime(flag); err != nil {
			return "", usagef("--time %v", err)
		}
		return flag, nil
	}
	if configured != "" {
		if err := CheckTime(configured); err != nil {
			return "", fmt.Errorf("key \"container.time\": %v", err)
		}
	}
	return configured, nil
}

// CheckProject refuses to use dir as the project directory when it is
// "/": the whole file system would be mounted writable at the workdir.
func CheckProject(prog, dir string) error {
	if err := CheckPath("project directory", dir); err != nil {
		return err
	}
	if dir == "/" {
		return usagef("the current directory is /, which %s would mount writable in the container; cd to your project directory first (e.g. cd ~/myproject)", prog)
	}
	return nil
}

package cliwire

import (
	"fmt"
	"os/user"
	"strconv"
)

// Me is the name a user flag (--user, --users) takes for whoever runs
// the command.
const Me = "me"

// Caller is the user name of uid, the process's real uid (os.Getuid:
// under sudo the user sudo runs as, not the one who typed it), through
// lookup (user.LookupId for the real process).
func Caller(uid int, lookup func(uid string) (*user.User, error)) (string, error) {
	u, err := lookup(strconv.Itoa(uid))
	if err != nil {
		return "", fmt.Errorf("user %s: uid %d has no user name; name the user instead: %w", Me, uid, err)
	}
	return u.Username, nil
}

// ResolveMe is names with each "me" replaced by the caller's name; caller
// is asked once, and only when a name is "me".
func ResolveMe(names []string, caller func() (string, error)) ([]string, error) {
	var name string
	asked := false
	var out []string
	for _, n := range names {
		if n == Me {
			if !asked {
				var err error
				if name, err = caller(); err != nil {
					return nil, err
				}
				asked = true
			}
			n = name
		}
		out = append(out, n)
	}
	return out, nil
}

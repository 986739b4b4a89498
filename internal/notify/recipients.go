package notify

import (
	"bufio"
	"bytes"
	"fmt"
	"net/mail"
	"strings"

	"github.com/aicloud/gpusuite/internal/config"
)

// addresses maps users to mail addresses (notify.mail.addresses_file).
type addresses map[string]string

// maxAddresses bounds the lines of the addresses file.
const maxAddresses = 100_000

// readAddresses reads path ("" : none): "user address" a line, # starts
// a comment. A bad line is refused with its number.
func readAddresses(path string) (addresses, error) {
	out := addresses{}
	if path == "" {
		return out, nil
	}
	data, err := config.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read notify.mail.addresses_file %q: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("notify.mail.addresses_file %q line %d: want \"user address\"", path, line)
		}
		if _, err := mail.ParseAddress(f[1]); err != nil {
			return nil, fmt.Errorf("notify.mail.addresses_file %q line %d: %q is not a mail address", path, line, f[1])
		}
		if len(out) >= maxAddresses {
			return nil, fmt.Errorf("notify.mail.addresses_file %q: more than %d users", path, maxAddresses)
		}
		out[f[0]] = f[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read notify.mail.addresses_file %q: %w", path, err)
	}
	return out, nil
}

// address is user's mail address: the addresses file's, else
// notify.mail.address's; "" when neither gives one (the message is kept
// and given up with the reason).
func (n *Notifier) address(user string) string {
	if a, ok := n.addrs[user]; ok {
		return a
	}
	if n.cfg.Mail.Address == "" || user == "" {
		return ""
	}
	a := strings.ReplaceAll(n.cfg.Mail.Address, "{user}", user)
	if _, err := mail.ParseAddress(a); err != nil {
		return ""
	}
	return a
}

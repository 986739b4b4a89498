package agent

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// scrapeHas says whether the agent's /metrics at addr has a line starting
// with prefix.
func scrapeHas(addr, prefix string) bool {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

package agent

import (
	"context"
	"net"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
)

// serveProfiles answers profile requests until ln is closed.
func (a *Agent) serveProfiles(ctx context.Context, ln *net.UnixListener) {
	a.accept(ctx, ln, "profile", a.profLim, func(uint32) string { return "" }, a.handleProfile)
}

// handleProfile answers the request of uid (SO_PEERCRED, taken at accept),
// within the deadlines accept set.
func (a *Agent) handleProfile(ctx context.Context, c *net.UnixConn, uid uint32, _ time.Time) {
	defer c.Close()
	reply := func(r agentproto.ProfileResponse) { agentproto.Reply(c, r) }
	var req agentproto.ProfileRequest
	if sent, err := agentproto.Read(c, agentproto.MaxProfileMessage, &req); !sent {
		return
	} else if err != nil {
		reply(agentproto.ProfileResponse{Error: "bad request: " + err.Error()})
		return
	}
	r := profileReq{req: req, uid: uid, reply: make(chan agentproto.ProfileResponse, 1)}
	wait := time.NewTimer(4 * time.Second)
	defer wait.Stop()
	select {
	case a.profReq <- r:
	case <-ctx.Done():
		reply(agentproto.ProfileResponse{Error: "agent stopping"})
		return
	case <-wait.C:
		reply(agentproto.ProfileResponse{Error: "agent busy; try again"})
		return
	}
	select {
	case resp := <-r.reply:
		reply(resp)
	case <-ctx.Done():
		reply(agentproto.ProfileResponse{Error: "agent stopping"})
	case <-wait.C:
		reply(agentproto.ProfileResponse{Error: "agent busy; try again"})
	}
}

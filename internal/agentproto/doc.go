// Package agentproto is the line protocol spoken over the agent's unix
// sockets, both sides: one JSON request line and one JSON answer line, all
// within a deadline. The hooks (internal/hook), hook-gpus
// (internal/hookgpus), `gpuacct profile` and the agent (internal/agent)
// import it; it imports none of them, and links no NVML, no cgo and no CLI
// library, so the hooks stay static (prolog/deps_test.go holds the layers).
//
// On the hook socket, {"op":"identify","minors":[0,1],"procs":true} asks
// for each minor's GPU identity with a fresh energy reading and, for the
// prolog's health check, the processes; given "key" (the event the hook is
// about to write) the answer carries no energy and the agent reads the
// counters right after answering, for that event. {"op":"announce",
// "event":{...}} hands over the event just spooled; the hook does not wait
// for that answer. With a fresh inventory file of the listening process
// (SO_PEERCRED) a hook sends both without waiting for either (Expect).
//
//	line.go       the line on a unix socket: Dial, Exchange, Send, Lines, Reply, PeerCred
//	hook.go       the agent (hook) socket: Request, Response and its Proc lists,
//	              Identify, Announce; Direct, what a hook gives hook-gpus instead
//	inventory.go  the GPU inventory the agent publishes beside that socket, and
//	              Expect/Ask: a job's start that waits on no other process
//	profile.go    the profile socket: ProfileRequest, ProfileResponse, AskProfile
package agentproto

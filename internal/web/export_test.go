package web

// HoursOf is how pages format GPU-hours, for the browser test's expectations.
var HoursOf = hoursOf

// Streams is how many board event streams are open.
func (h *Handler) Streams() int { return h.hub.subscribers() }

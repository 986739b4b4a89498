package web

// HoursOf is how pages format GPU-hours, for the browser test's expectations.
var HoursOf = hoursOf

// Package ctl is the control protocol of the opavnic daemons (vnicd, opafm)
// over their Unix socket: a client connects, writes one JSON request on one
// line ({"cmd": "vnics", "args": {...}}), reads one JSON response line
// ({"ok": true, "data": ...} or {"ok": false, "error": "...", "code":
// "busy"}), and the daemon closes the connection. It has the server
// (Listen, Server.Handle), the commands' names (Cmd*), the error codes
// (Code*, Error and its sentinels), the client (Client, with a method per
// command), and the requests' and answers' types, so that a client such as
// vnicctl needs nothing else of the daemon.
package ctl

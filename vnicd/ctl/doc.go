// Package ctl is the control protocol of the opavnic daemons (vnicd, opafm)
// over their Unix socket: a client connects, writes one JSON request on one
// line ({"cmd": "vnics", "args": {...}}), reads one JSON response line
// ({"ok": true, "data": ...} or {"ok": false, "error": "..."}), and the
// daemon closes the connection. It has the server (Listen, Server.Handle),
// the client (Call), and the requests' and answers' types, so that a client
// such as vnicctl needs nothing else of the daemon.
package ctl

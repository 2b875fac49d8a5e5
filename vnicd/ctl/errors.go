package ctl

import (
	"errors"
	"fmt"
)

// Code classifies a failed answer, so that a client decides by it (retry,
// give up, report) and not by the error's text. An answer without a code is
// a failure the protocol does not classify (its message says why), or the
// answer of a daemon older than the codes.
type Code string

// The codes a daemon sets (docs/operating.md, The control protocol).
const (
	// CodeBusy: the daemon served MaxConns connections and refused this one
	// without reading it (ErrBusy). Nothing was done; the same request
	// later goes through.
	CodeBusy Code = "busy"
	// CodeLate: a state-changing request waited for the ones before it
	// until less than LateMargin of its time was left, and was not started
	// (ErrLate). Nothing was done; try again.
	CodeLate Code = "late"
	// CodeNoFreePort: a managed node has no port on the vesw it can give
	// (ErrNoFreePort): the fabric manager has not configured it yet, or
	// every port is taken until a container goes. Try again later.
	CodeNoFreePort Code = "no_free_port"
	// CodeBadRequest: the request line was not a request (not JSON, longer
	// than 1 MiB, not complete within Timeout).
	CodeBadRequest Code = "bad_request"
	// CodeUnknownCommand: the daemon has no such command ("commands" lists
	// those it has).
	CodeUnknownCommand Code = "unknown_command"
	// CodeInvalidArgument: the arguments do not decode or fail the
	// command's checks; the message names the field.
	CodeInvalidArgument Code = "invalid_argument"
	// CodeNotFound: the vport, claim, LID or node the arguments name does
	// not exist.
	CodeNotFound Code = "not_found"
	// CodeInternal: the daemon could not encode its answer.
	CodeInternal Code = "internal"
)

// Error is a failed answer: its code and its message. Handlers return one
// (Errorf, WithCode, or a sentinel wrapped with %w) to set the answer's
// code; Call returns one for every answer with "ok": false. errors.Is
// matches it against the sentinels by code: errors.Is(err, ErrBusy) holds
// for any answer coded busy, whatever its message.
type Error struct {
	Code    Code
	Message string
	err     error // the cause, on the daemon's side
}

// Error returns the message, as the daemon wrote it.
func (e *Error) Error() string {
	if e.Message == "" {
		return "the daemon failed without a message (code " + string(e.Code) + ")"
	}
	return e.Message
}

// Unwrap returns the cause of an Error made by WithCode or Errorf.
func (e *Error) Unwrap() error { return e.err }

// Is reports whether target is an *Error of the same, non-empty, code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != "" && t.Code == e.Code
}

// busyPrefix begins the messages of ErrBusy and ErrLate, for people; clients
// tell them by their codes.
const busyPrefix = "vnicd: busy: "

// The sentinels, one per code, for errors.Is and for wrapping with %w
// (fmt.Errorf("%w: vesw %d ...", ErrNoFreePort, ...) answers no_free_port).
var (
	// ErrBusy is the answer to a connection beyond MaxConns.
	ErrBusy error = &Error{Code: CodeBusy,
		Message: fmt.Sprintf(busyPrefix+"%d control connections are being served; try again", MaxConns)}
	// ErrLate is the answer to a request that changes state (vnic_add) and
	// waited for the requests before it until too little of its time was
	// left (LateMargin): its client may be gone before it is done, and
	// would not learn of a VNIC made for it. Nothing was done.
	ErrLate error = &Error{Code: CodeLate,
		Message: busyPrefix + "this request waited for others until too close to its timeout, and was not started; try again"}
	// ErrNoFreePort is wrapped by vnic_add's error in managed mode when
	// the vesw has no port this node can give a container.
	ErrNoFreePort      error = &Error{Code: CodeNoFreePort, Message: "no free port"}
	ErrBadRequest      error = &Error{Code: CodeBadRequest, Message: "bad request"}
	ErrUnknownCommand  error = &Error{Code: CodeUnknownCommand, Message: "unknown command"}
	ErrInvalidArgument error = &Error{Code: CodeInvalidArgument, Message: "bad arguments"}
	ErrNotFound        error = &Error{Code: CodeNotFound, Message: "not found"}
	ErrInternal        error = &Error{Code: CodeInternal, Message: "internal error"}
)

// Errorf is fmt.Errorf's error with code: its message is fmt.Errorf's, and
// what format wraps with %w stays reachable through errors.Is and As.
func Errorf(code Code, format string, args ...any) error {
	return WithCode(code, fmt.Errorf(format, args...))
}

// WithCode gives err the code, keeping its message and its chain; nil stays
// nil.
func WithCode(code Code, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Message: err.Error(), err: err}
}

// CodeOf is the code an answer carries for err: that of the first *Error in
// its chain, "" for none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Error is etcd's answer that a request failed: its message ("etcdserver:
// requested lease not found"), gRPC status code and HTTP status.
type Error struct {
	Message string
	Code    int // the gRPC status code (5: not found, 14: unavailable, ...)
	Status  int // the HTTP status
}

func (e *Error) Error() string { return e.Message }

// Is matches errors of the same message, so that errors.Is(err,
// ErrLeaseNotFound) holds for every answer that says so.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == e.Message
}

func serverError(msg string) *Error { return &Error{Message: msg} }

// etcd's answers this package's users tell apart (its rpctypes' messages).
var (
	ErrLeaseNotFound    = serverError("etcdserver: requested lease not found")
	ErrCompacted        = serverError("etcdserver: mvcc: required revision has been compacted")
	ErrAuthFailed       = serverError("etcdserver: authentication failed, invalid user ID or password")
	ErrUserEmpty        = serverError("etcdserver: user name is empty")
	ErrInvalidAuthToken = serverError("etcdserver: invalid auth token")
	ErrPermissionDenied = serverError("etcdserver: permission denied")
	ErrAuthNotEnabled   = serverError("etcdserver: authentication is not enabled")
	// ErrCommonName: with authentication on and --client-cert-auth, etcd's
	// gateway refuses a client certificate that carries a Common Name (it
	// cannot pass that identity on; etcd's embed/serve.go).
	ErrCommonName = serverError("CommonName of client sending a request against gateway will be ignored and not used as expected")

	// Transient: etcd could not commit a write in time; it may or may not
	// have happened, and may succeed a moment later.
	ErrTimeout                    = serverError("etcdserver: request timed out")
	ErrTooManyRequests            = serverError("etcdserver: too many requests")
	ErrTimeoutDueToLeaderFail     = serverError("etcdserver: request timed out, possibly due to previous leader failure")
	ErrTimeoutDueToConnectionLost = serverError("etcdserver: request timed out, possibly due to connection lost")
	ErrLeaderChanged              = serverError("etcdserver: leader changed")
	ErrNoLeader                   = serverError("etcdserver: no leader")
	ErrTimeoutWaitAppliedIndex    = serverError("etcdserver: request timed out, waiting for the applied index took too long")
)

// statusBody is an error answer's JSON: etcd 3.4 and 3.5 (grpc-gateway v1)
// write error, message and code; 3.6 (grpc-gateway v2) code and message.
type statusBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func (s statusBody) text() string {
	if s.Message != "" {
		return s.Message
	}
	return s.Error
}

// answerError is the error of an answer with HTTP status code and body msg
// from base/v3/path: etcd's own (JSON), or a server that is no etcd gateway.
func answerError(base, path string, code int, msg []byte) error {
	var s statusBody
	if json.Unmarshal(msg, &s) == nil && s.text() != "" {
		return &Error{Message: s.text(), Code: s.Code, Status: code}
	}
	text := strings.TrimSpace(string(msg))
	switch {
	case strings.HasPrefix(text, ErrCommonName.Message):
		return &Error{Status: code, Message: ErrCommonName.Message}
	case code == http.StatusNotFound:
		return &Error{Status: code, Message: fmt.Sprintf("POST %s/v3/%s: HTTP 404 %q: no v3 JSON gateway there: "+
			"give --rdzv-endpoint the client URL of an etcd 3.4 or later, started with its gateway on (--enable-grpc-gateway, the default)", base, path, text)}
	}
	return &Error{Status: code, Message: fmt.Sprintf("POST %s/v3/%s: HTTP %d %s: %q (not an etcd answer: is this etcd's client URL?)",
		base, path, code, http.StatusText(code), text)}
}

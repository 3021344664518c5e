package ops

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Limits on what a client may send. The server answers four fixed GET
// paths for scrapers and probes, so every request that fits them is far
// below these.
const (
	// maxLineBytes bounds the request line and each header line; it is
	// also the size of a connection's read buffer.
	maxLineBytes = 4 << 10
	// maxHeadBytes bounds the request line and all headers together.
	maxHeadBytes = 16 << 10
	// maxHeaders bounds the header lines of one request.
	maxHeaders = 64
)

// httpError is a request the server refuses: the status it answers with
// and why. The connection is closed after the answer.
type httpError struct {
	status int
	reason string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s", e.status, e.reason) }

func badRequest(format string, args ...any) *httpError {
	return &httpError{status: 400, reason: fmt.Sprintf(format, args...)}
}

// request is what the server needs of an HTTP/1.x request: no body is
// accepted, so there is none.
type request struct {
	method string
	// path is the request target without its query.
	path string
	// minor is the 1 of HTTP/1.1 or the 0 of HTTP/1.0.
	minor int
	// keepAlive: the client lets the connection serve another request
	// (HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with
	// "Connection: keep-alive").
	keepAlive bool
}

// parseRequest reads one request head (request line and headers, up to
// the empty line) from r, whose buffer must be at least maxLineBytes. It
// returns io.EOF when the client closed the connection before sending a
// byte, and an *httpError for anything it refuses. It reads nothing past
// the head.
func parseRequest(r *bufio.Reader) (request, error) {
	var req request
	used := 0
	line, err := readLine(r, &used)
	if err != nil {
		if errors.Is(err, io.EOF) && used == 0 {
			return req, io.EOF
		}
		if he := (*httpError)(nil); errors.As(err, &he) && he.status == 431 {
			return req, &httpError{status: 414, reason: "request line too long"}
		}
		return req, err
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !isToken(method) {
		return req, badRequest("malformed request line")
	}
	req.method = method
	switch proto {
	case "HTTP/1.1":
		req.minor, req.keepAlive = 1, true
	case "HTTP/1.0":
		req.minor = 0
	default:
		if len(proto) == len("HTTP/1.1") && strings.HasPrefix(proto, "HTTP/") && isDigit(proto[5]) && proto[6] == '.' && isDigit(proto[7]) {
			return req, &httpError{status: 505, reason: "only HTTP/1.0 and HTTP/1.1 are served"}
		}
		return req, badRequest("malformed request line")
	}
	if target == "" || target[0] != '/' {
		return req, badRequest("the request target must be a path")
	}
	req.path, _, _ = strings.Cut(target, "?")
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c >= 0x7f {
			return req, badRequest("the request target has a control character, space or non-ASCII byte")
		}
	}

	host := false
	for n := 0; ; n++ {
		line, err := readLine(r, &used)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return req, badRequest("the request head ended early")
			}
			return req, err
		}
		if line == "" {
			break
		}
		if n == maxHeaders {
			return req, &httpError{status: 431, reason: fmt.Sprintf("more than %d header lines", maxHeaders)}
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			// A line starting with a space or tab is an obsolete line
			// folding, which RFC 9112 lets a server refuse.
			return req, badRequest("malformed header line")
		}
		value = strings.Trim(value, " \t")
		for i := 0; i < len(value); i++ {
			if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
				return req, badRequest("header %s has a control character", name)
			}
		}
		switch strings.ToLower(name) {
		case "host":
			if host {
				return req, badRequest("more than one Host header")
			}
			host = true
		case "connection":
			for _, opt := range strings.Split(value, ",") {
				switch strings.ToLower(strings.Trim(opt, " \t")) {
				case "close":
					req.keepAlive = false
				case "keep-alive":
					if req.minor == 0 {
						req.keepAlive = true
					}
				}
			}
		case "content-length":
			if n, err := strconv.ParseUint(value, 10, 63); err != nil || n != 0 {
				return req, badRequest("a request body is not accepted")
			}
		case "transfer-encoding":
			return req, badRequest("a request body is not accepted")
		}
	}
	if req.minor == 1 && !host {
		return req, badRequest("missing required Host header")
	}
	return req, nil
}

// readLine reads one line ending in LF (CRLF or a bare LF, as RFC 9112
// lets a recipient accept) without its ending, counting its bytes into
// *used and refusing a line past maxLineBytes or a head past maxHeadBytes.
func readLine(r *bufio.Reader, used *int) (string, error) {
	b, err := r.ReadSlice('\n')
	*used += len(b)
	if errors.Is(err, bufio.ErrBufferFull) || len(b) > maxLineBytes {
		return "", &httpError{status: 431, reason: fmt.Sprintf("a line longer than %d bytes", maxLineBytes)}
	}
	if *used > maxHeadBytes {
		return "", &httpError{status: 431, reason: fmt.Sprintf("a request head longer than %d bytes", maxHeadBytes)}
	}
	if err != nil {
		return "", err
	}
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return string(b), nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isToken: s is a non-empty RFC 9110 token (method and header names).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// response is one answer: always with a Content-Length, so a keep-alive
// client knows where it ends.
type response struct {
	status      int
	contentType string
	body        []byte
	// allow is the Allow header of a 405.
	allow string
}

func plain(status int, text string) response {
	return response{status: status, contentType: "text/plain; charset=utf-8", body: []byte(text + "\n")}
}

// statusText holds the reason phrases of the statuses the server sends.
var statusText = map[int]string{
	200: "OK",
	400: "Bad Request",
	404: "Not Found",
	405: "Method Not Allowed",
	414: "URI Too Long",
	431: "Request Header Fields Too Large",
	500: "Internal Server Error",
	503: "Service Unavailable",
	505: "HTTP Version Not Supported",
}

// httpDate is RFC 9110's IMF-fixdate.
const httpDate = "Mon, 02 Jan 2006 15:04:05 GMT"

// appendResponse appends resp's status line and headers, and its body
// unless head (a HEAD request gets the headers a GET would).
func appendResponse(buf []byte, resp response, head, keepAlive bool, now time.Time) []byte {
	text := statusText[resp.status]
	buf = fmt.Appendf(buf, "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Length: %d\r\n",
		resp.status, text, now.UTC().Format(httpDate), len(resp.body))
	if resp.contentType != "" {
		buf = append(buf, "Content-Type: "+resp.contentType+"\r\n"...)
	}
	if resp.allow != "" {
		buf = append(buf, "Allow: "+resp.allow+"\r\n"...)
	}
	if keepAlive {
		buf = append(buf, "Connection: keep-alive\r\n"...)
	} else {
		buf = append(buf, "Connection: close\r\n"...)
	}
	buf = append(buf, "\r\n"...)
	if !head {
		buf = append(buf, resp.body...)
	}
	return buf
}

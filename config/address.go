package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners:
// NAME://host:port, as in Kafka.
type Listener struct {
	// Name is upper case: Kafka normalises listener names that way, so
	// "plaintext://" and "PLAINTEXT://" are the same listener.
	Name string
	// Host is empty to bind every interface.
	Host string
	// Port 0 asks the kernel for a free port (tests).
	Port int
}

// Addr is host:port, as net.Listen and net.Dial take it.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// Voter is one entry of controller.quorum.voters: id@host:port, the
// address of that node's controller listener.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Addr is host:port.
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Addr() }

// ParseListener parses NAME://host:port. IPv6 hosts go in brackets.
func ParseListener(s string) (Listener, error) {
	name, addr, ok := strings.Cut(s, "://")
	if !ok {
		return Listener{}, fmt.Errorf("listener %q is not NAME://host:port", s)
	}
	if !validListenerName(name) {
		return Listener{}, fmt.Errorf("listener %q: name %q must be letters, digits and _", s, name)
	}
	host, port, err := splitHostPort(addr, 0)
	if err != nil {
		return Listener{}, fmt.Errorf("listener %q: %v", s, err)
	}
	return Listener{Name: strings.ToUpper(name), Host: host, Port: port}, nil
}

// ParseVoter parses id@host:port.
func ParseVoter(s string) (Voter, error) {
	idText, addr, ok := strings.Cut(s, "@")
	if !ok {
		return Voter{}, fmt.Errorf("voter %q is not id@host:port", s)
	}
	id, err := strconv.ParseInt(idText, 10, 32)
	if err != nil || id < 0 {
		return Voter{}, fmt.Errorf("voter %q: node id %q is not a number from 0 to %d", s, idText, int32(1<<31-1))
	}
	host, port, err := splitHostPort(addr, 1)
	if err != nil {
		return Voter{}, fmt.Errorf("voter %q: %v", s, err)
	}
	if host == "" {
		return Voter{}, fmt.Errorf("voter %q: the host is empty, and peers need an address to dial", s)
	}
	return Voter{ID: int32(id), Host: host, Port: port}, nil
}

func validListenerName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// splitHostPort checks host:port with a port of at least minPort.
func splitHostPort(addr string, minPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port", addr)
	}
	if !validHost(host) {
		return "", 0, fmt.Errorf("host %q is not a host name or IP address", host)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < minPort || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from %d to 65535", portText, minPort)
	}
	return host, port, nil
}

// validHost accepts host names and IP addresses (IPv6 with a zone), and
// rejects what could only be a typo or an injection: spaces, slashes, quotes.
func validHost(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, c := range h {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == ':' || c == '%') {
			return false
		}
	}
	return true
}

// isWildcard reports whether host binds every interface and so cannot be
// given to clients as an address to dial.
func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

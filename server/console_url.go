package server

import (
	"net"

	"github.com/entityd/entityd/console"
)

// consoleURL is the address a person opens for the console, printed at start-up: an
// unspecified listen address (":4437") is shown as localhost.
func consoleURL(addr net.Addr, https bool) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return console.Prefix + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
		host = "localhost"
	}
	scheme := "http://"
	if https {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port) + console.Prefix + "/"
}

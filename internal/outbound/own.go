package outbound

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// A service bound to 0.0.0.0 (or ::) answers on every address of the machine, not only
// on loopback: refusing loopback alone would still let a URL naming the machine's public
// address reach it. So in jwt mode the addresses of this machine's interfaces are
// refused too, read again when they may have changed (DHCP, an added interface).

// ownAddrsTTL is how long a reading of the interface addresses is trusted: reading them
// is one netlink round trip, cheap next to a connection, but there is no need to make
// it for every dial of a burst of webhook deliveries.
const ownAddrsTTL = time.Second

// hostAddrs is the machine's interface addresses, read through list at most once per
// ownAddrsTTL.
type hostAddrs struct {
	list func() ([]net.Addr, error)

	mu   sync.Mutex // one reader at a time
	seen atomic.Pointer[addrSet]
}

type addrSet struct {
	at    time.Time
	addrs map[netip.Addr]bool
}

var ownAddrs = &hostAddrs{list: net.InterfaceAddrs}

// has reports whether ip is an address of one of the machine's interfaces.
func (h *hostAddrs) has(ip netip.Addr) bool {
	return h.current().addrs[ip.Unmap()]
}

func (h *hostAddrs) current() *addrSet {
	if s := h.seen.Load(); s != nil && time.Since(s.at) < ownAddrsTTL {
		return s
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.seen.Load(); s != nil && time.Since(s.at) < ownAddrsTTL {
		return s
	}
	addrs, err := h.list()
	if err != nil {
		// keep the last reading (an interface that was the machine's most likely still
		// is); with none, refuse nothing more than the other rules do and try again
		if s := h.seen.Load(); s != nil {
			return s
		}
		return &addrSet{}
	}
	s := &addrSet{at: time.Now(), addrs: make(map[netip.Addr]bool, len(addrs))}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			s.addrs[p.Addr().Unmap()] = true
		}
	}
	h.seen.Store(s)
	return s
}

// forget drops the last reading (tests change list).
func (h *hostAddrs) forget() { h.seen.Store(nil) }

// unroutable reports an address that is never a destination: unspecified (0.0.0.0 and
// :: connect to this machine), the rest of 0.0.0.0/8, multicast and broadcast.
func unroutable(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsValid() || ip.IsUnspecified() || ip.IsMulticast() || thisNetwork.Contains(ip) || ip == broadcast
}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	broadcast   = netip.MustParseAddr("255.255.255.255")
)

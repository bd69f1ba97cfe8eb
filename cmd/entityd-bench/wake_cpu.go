package main

import (
	"bytes"
	"os"
	goruntime "runtime"
	"strconv"
)

// CPU accounting from /proc, like bench/run.sh: ticks (1/100 s) of the server process, of
// the postmaster and its children (PostgreSQL), of this process (the load generator), and
// the machine's busy ticks from /proc/stat; "other" is the rest of the busy time. A
// process's own ticks include those of its reaped children (cutime, cstime), so PostgreSQL
// backends that exit inside the interval still count.

const wakeClockTicks = 100 // USER_HZ

type wakeCPUSnap struct {
	ok                       bool
	mono                     int64
	busy, server, pg, self   int64
	serverIsSelf, pgMeasured bool
}

func takeWakeCPUSnap(serverPID, pgPID int) wakeCPUSnap {
	s := wakeCPUSnap{mono: monoNow()}
	busy, ok := wakeMachineBusyTicks()
	if !ok {
		return s
	}
	s.busy = busy
	s.self, _ = wakeProcTicks("self")
	if serverPID == os.Getpid() {
		s.serverIsSelf = true
		s.server = s.self
	} else if serverPID > 0 {
		s.server, _ = wakeProcTicks(strconv.Itoa(serverPID))
	}
	if pgPID > 0 {
		s.pg, s.pgMeasured = wakePostgresTicks(pgPID), true
	}
	s.ok = true
	return s
}

// sub is the split over the interval a → s, per message for msgs messages.
func (s wakeCPUSnap) sub(a wakeCPUSnap, msgs int) WakeCPU {
	wall := float64(s.mono-a.mono) / 1e9
	cores := goruntime.NumCPU()
	c := WakeCPU{WallS: wall, Cores: cores, Messages: msgs}
	capacity := wall * float64(cores) * wakeClockTicks / 100 // ticks per percent
	if capacity <= 0 {
		return c
	}
	busy, server, pg, self := s.busy-a.busy, s.server-a.server, s.pg-a.pg, s.self-a.self
	load := self
	if s.serverIsSelf {
		load = 0 // one process: its whole time is booked as the server's
	}
	c.BusyPct = float64(busy) / capacity
	c.ServerPct = float64(server) / capacity
	c.PostgresPct = float64(pg) / capacity
	c.LoadgenPct = float64(load) / capacity
	c.OtherPct = float64(busy-server-pg-load) / capacity
	if msgs > 0 {
		us := func(t int64) float64 { return float64(t) * 1e6 / wakeClockTicks / float64(msgs) }
		c.ServerUsPerMsg, c.PGUsPerMsg, c.LoadUsPerMsg = us(server), us(pg), us(load)
	}
	return c
}

// machineBusyTicks is user+nice+system+irq+softirq+steal of all CPUs.
func wakeMachineBusyTicks() (int64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, false
	}
	var sum int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseInt(string(f[i]), 10, 64)
		sum += v
	}
	return sum, true
}

// procStat returns the fields of /proc/<pid>/stat after the command name: index 0 is
// field 3 (state), so field k is at k-3.
func wakeProcStat(pid string) ([][]byte, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 15 {
		return nil, false
	}
	return f, true
}

// procTicks is utime+stime+cutime+cstime (fields 14–17).
func wakeProcTicks(pid string) (int64, bool) {
	f, ok := wakeProcStat(pid)
	if !ok {
		return 0, false
	}
	var sum int64
	for k := 14; k <= 17; k++ {
		v, _ := strconv.ParseInt(string(f[k-3]), 10, 64)
		sum += v
	}
	return sum, true
}

// postgresTicks is the postmaster's ticks plus those of its live children.
func wakePostgresTicks(pm int) int64 {
	total, _ := wakeProcTicks(strconv.Itoa(pm))
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return total
	}
	want := []byte(strconv.Itoa(pm))
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		f, ok := wakeProcStat(name)
		if !ok || !bytes.Equal(f[4-3], want) {
			continue
		}
		t, _ := wakeProcTicks(name)
		total += t
	}
	return total
}

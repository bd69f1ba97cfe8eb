//go:build !unix

package server

func defaultMaxConns() int { return 10_000 }

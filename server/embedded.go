package server

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/pgcluster"
)

// embeddedStopTimeout bounds the shutdown of the embedded cluster at exit.
const embeddedStopTimeout = 30 * time.Second

// startEmbedded starts the private PostgreSQL cluster that serves when DATABASE_URL is
// empty, and returns its URL and the function that stops it.
//
// The cluster belongs to this process alone: it is reachable only over a Unix socket
// in a directory of the cluster's OS user (no TCP; pg_hba.conf allows local connections
// only), its data directory is locked so that a second server on it fails at once with
// a one-line *pgcluster.InUseError, a server left running by an entityd that was killed
// is taken over, and a supervisor restarts PostgreSQL if it dies while we run. opts
// names the data directory, the database and durability; the lockdown options are set
// here.
func startEmbedded(ctx context.Context, opts pgcluster.Options) (dbURL string, stop func(), err error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	opts.SocketOnly = true
	opts.Exclusive = true
	cluster, err := pgcluster.Start(ctx, opts)
	if err != nil {
		return "", func() {}, fmt.Errorf("embedded Postgres: %w", err)
	}
	stop = func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), embeddedStopTimeout)
		defer cancel()
		if err := cluster.Stop(stopCtx); err != nil {
			log.Warn("embedded Postgres did not stop cleanly", zap.Error(err))
		}
	}
	log.Info("using the embedded Postgres cluster", zap.String("data_dir", opts.DataDir),
		zap.String("socket_dir", cluster.SocketDir()), zap.Int("port", cluster.Port()))
	return cluster.URL(), stop, nil
}

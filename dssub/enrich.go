package dssub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// WakeContext is what an Enricher is told about a webhook wake.
type WakeContext struct {
	SubscriptionID string
	WakeID         string
	Generation     int64
	// StreamPath is the wake's primary stream ("/<path>": the first listed stream with
	// pending work), TailOffset its tail when the wake was taken.
	StreamPath, TailOffset string
	// CallbackToken is the wake's bearer token for callbacks; Origin is where clients
	// reach this server (for callback URLs of its own).
	CallbackToken, Origin string
}

// Enricher adds members to the body of a webhook wake (Electric's entity context: the
// agents server's view of a Durable Streams wake). It returns nil to leave a wake as the
// Durable Streams protocol has it; ErrNotWanted to finish the wake without delivering
// it; another error fails the attempt, which is retried.
type Enricher func(ctx context.Context, w WakeContext) (map[string]any, error)

// ErrNotWanted is an Enricher's answer for a wake that must not reach the receiver (in
// Electric: the entity is paused or stopped). The wake is finished as if the receiver
// had answered {"done":true}: what it listed is acknowledged.
var ErrNotWanted = errors.New("dssub: the wake is not to be delivered")

// enrich encodes a delivery's body with what the Enricher adds: the protocol's members
// first, then the added ones. As Electric's agents server writes them, each listed
// stream's path gets its leading "/" ("/chat/a/main": Electric's runtime looks its
// offset up by streamPath) and its tail as "offset" (where the runtime's wake starts);
// the other Durable Streams fields stay (entityd's own runtime reads acked_offset).
// A wake that is not enriched (any stream but an entity's main stream) keeps the
// Durable Streams body exactly.
func (s *Service) enrich(ctx context.Context, job *delivery) ([]byte, error) {
	if s.opts.Enrich == nil || job.primary == "" {
		return json.Marshal(job.body)
	}
	extra, err := s.opts.Enrich(ctx, WakeContext{
		SubscriptionID: job.subID, WakeID: job.wakeID, Generation: job.generation,
		StreamPath: streamRoot + job.primary, TailOffset: job.primaryTail,
		CallbackToken: job.token, Origin: job.origin,
	})
	if err != nil {
		return nil, err
	}
	if len(extra) == 0 {
		return json.Marshal(job.body)
	}
	body := job.body
	body.Streams = make([]streamInfo, len(job.body.Streams))
	for i, st := range job.body.Streams {
		st.Path, st.Offset = streamRoot+st.Path, st.TailOffset
		body.Streams[i] = st
	}
	for k := range extra {
		if protocolMembers[k] {
			return nil, fmt.Errorf("dssub: the Enricher's member %q would replace the protocol's", k)
		}
	}
	// Two encodings joined, not a map of both: decoding the body again to merge costed
	// each wake more than the rest of its encoding.
	base, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	added, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	return append(append(base[:len(base)-1], ','), added[1:]...), nil
}

// protocolMembers are the members of a Durable Streams webhook wake (webhookBody): an
// Enricher adds others.
var protocolMembers = map[string]bool{
	"subscription_id": true, "wake_id": true, "generation": true, "streams": true,
	"callback_url": true, "callback_token": true,
}

package dssub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// enrich merges what the Enricher adds into a delivery's body: the protocol's members
// stay, the added ones come after them, and each listed stream also gets its tail as
// "offset" (the field Electric's runtimes read).
func (s *Service) enrich(ctx context.Context, job *delivery) ([]byte, error) {
	if s.opts.Enrich == nil || job.primary == "" {
		return job.body, nil
	}
	extra, err := s.opts.Enrich(ctx, WakeContext{
		SubscriptionID: job.subID, WakeID: job.wakeID, Generation: job.generation,
		StreamPath: streamRoot + job.primary, TailOffset: job.primaryTail,
		CallbackToken: job.token, Origin: job.origin,
	})
	if err != nil || extra == nil {
		return job.body, err
	}
	var body map[string]any
	dec := json.NewDecoder(strings.NewReader(string(job.body)))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		return nil, err
	}
	if streams, ok := body["streams"].([]any); ok {
		for _, st := range streams {
			if m, ok := st.(map[string]any); ok {
				m["offset"] = m["tail_offset"]
			}
		}
	}
	for k, v := range extra {
		body[k] = v
	}
	return json.Marshal(body)
}

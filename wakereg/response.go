package wakereg

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// EntityInfo tells the evaluator about a source entity: its type and parent (ok false
// when there is no entity at url).
type EntityInfo func(ctx context.Context, url string) (typ, parent string, ok bool, err error)

// maxResponseScan bounds the bytes of a child's stream read to collect a finished run's
// response.
const maxResponseScan = 64 << 20

// finishedChild is the finished_child of a runFinished wake whose source is a child of
// the subscriber: {url, type, run_status, response?, error?}. The response is the run's
// text_delta text, the error its error messages (for a failed run), unless the
// registration asked for no response. nil when the source is not the subscriber's child.
func (s *Service) finishedChild(ctx context.Context, source *streamdb.Meta, d *delivery) ([]byte, error) {
	typ, parent, ok, err := s.entities(ctx, d.reg.source)
	if err != nil {
		return nil, err
	}
	if !ok || parent != d.reg.subscriber {
		return nil, nil
	}
	var o rawjson.Object
	o.String("url", d.reg.source).String("type", typ).String("run_status", d.runStatus)
	runKey := lastChangeKey(d.changes)
	if d.reg.includeResponse && runKey != "" && source != nil {
		response, failure, err := s.runResponse(ctx, source, runKey, d.runStatus == "failed", d.runSeq)
		if err != nil {
			return nil, err
		}
		if response != "" {
			o.String("response", response)
		}
		if failure != "" {
			o.String("error", failure)
		}
	}
	return o.Bytes(), nil
}

func lastChangeKey(changes []json.RawMessage) string {
	if len(changes) == 0 {
		return ""
	}
	var c struct {
		Key string `json:"key"`
	}
	_ = json.Unmarshal(changes[len(changes)-1], &c)
	return c.Key
}

// runResponse reads the source stream up to the run's end and joins the deltas of the
// run's text_delta events (and, for a failed run, its error messages).
func (s *Service) runResponse(ctx context.Context, m *streamdb.Meta, runKey string, failed bool, upTo int64) (string, string, error) {
	if upTo <= 0 || upTo > m.Tail.Seq {
		upTo = m.Tail.Seq
	}
	var text, errs strings.Builder
	nErrs := 0
	from, scanned := streamdb.Offset{}, 0
	for from.Seq < upTo && scanned < maxResponseScan {
		msgs, err := s.store.Read(ctx, m, from, streamdb.Offset{Seq: upTo})
		if err != nil {
			return "", "", err
		}
		if len(msgs) == 0 {
			break
		}
		for _, msg := range msgs {
			scanned += len(msg.Data)
			if msg.End.Seq > upTo {
				break
			}
			if !strings.Contains(string(msg.Data), runKey) {
				continue // cheap: most events are of other runs or carry no run id
			}
			var ev struct {
				Type  string `json:"type"`
				Value struct {
					RunID   string `json:"run_id"`
					Delta   string `json:"delta"`
					Message string `json:"message"`
				} `json:"value"`
			}
			if json.Unmarshal(msg.Data, &ev) != nil || ev.Value.RunID != runKey {
				continue
			}
			switch {
			case ev.Type == "text_delta":
				text.WriteString(ev.Value.Delta)
			case ev.Type == "error" && failed:
				if nErrs > 0 {
					errs.WriteByte('\n')
				}
				errs.WriteString(ev.Value.Message)
				nErrs++
			}
		}
		from = msgs[len(msgs)-1].End
	}
	return text.String(), errs.String(), nil
}

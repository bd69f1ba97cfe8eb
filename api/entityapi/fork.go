package entityapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/wakereg"
)

// Fork error codes (the reference's).
const (
	CodeForkInProgress  = "FORK_IN_PROGRESS"
	CodeForkWaitTimeout = "FORK_WAIT_TIMEOUT"
)

// Fork input bounds.
const (
	// maxForkOffsetLength bounds fork_pointer.offset (an offset is 33 bytes).
	maxForkOffsetLength = 64
	// maxForkSubOffset bounds fork_pointer.sub_offset: JSON numbers beyond 2^53 are not
	// integers a client can mean exactly.
	maxForkSubOffset = 1 << 53
)

// fork is POST /_electric/entities/:type/:id/fork: copy a top-level entity and its
// descendants (package entity's Fork), then link, wake and message the copy as a spawn
// does. 201 {root, entities} is written once the copy committed.
func (s *handlers) fork(w http.ResponseWriter, r *http.Request) error {
	if err := refusePrincipalEntity(r, "forked"); err != nil {
		return err
	}
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	p := api.Caller(r)
	req := entity.ForkRequest{Source: e.URL, CreatedBy: p.URL(), Wait: entity.DefaultForkWait}
	if id, ok := b.Str("instance_id"); ok {
		if !validSegment(id, entity.MaxInstanceIDLength) {
			b.Details.Add("/instance_id",
				"must be 1-256 characters of letters, digits, '-', '_', '.', ':' and '@'")
		}
		req.InstanceID = id
	}
	if ms, ok := b.Number("waitTimeoutMs"); ok {
		if ms < 0 || ms > float64(entity.MaxForkWait/time.Millisecond) {
			b.Details.Add("/waitTimeoutMs", fmt.Sprintf("must be from 0 to %d", entity.MaxForkWait/time.Millisecond))
		}
		req.Wait = time.Duration(ms * float64(time.Millisecond))
	}
	if b.Present("fork_pointer") {
		req.Pointer = forkPointer(b)
	}
	if a, ok := b.Enum("anchor", "latest_completed_run"); ok {
		req.LatestCompletedRun = a != ""
	}
	req.Parent, _ = b.Str("parent")
	b.MaxLen("parent", req.Parent, maxURLLength)
	req.Tags = b.StringMap("tags", maxTagKeyLength, maxTagValueLength)
	if err := b.Fail(); err != nil {
		return err
	}
	if req.Pointer != nil && req.LatestCompletedRun {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "fork_pointer and anchor are mutually exclusive")
	}
	if b.Present("parent") {
		// a fork under a parent needs spawn on the parent, as a spawn under it does
		pe, err := s.registry.Get(r.Context(), req.Parent)
		if errors.Is(err, entity.ErrNotFound) {
			return httpx.New(http.StatusNotFound, api.CodeNotFound, "Parent entity not found")
		}
		if err != nil {
			return err
		}
		if err := s.kit.RequireEntity(r, p, pe, authz.Spawn); err != nil {
			return err
		}
	}
	wakeInTx, wakeAfter, err := s.forkWake(r, b, req.Parent)
	if err != nil {
		return err
	}
	var initial *inbox.SendRequest
	if b.Has("initialMessage") {
		// checked before anything is forked, against the schemas the copy will have
		initial = &inbox.SendRequest{Payload: b.Raw("initialMessage"), Sender: p.URL()}
		if req.Parent != "" {
			initial.Sender = req.Parent
		}
		t, err := s.registry.Type(r.Context(), e.Type)
		if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
			return err
		}
		if err := s.sender.Validate(e, t, initial); err != nil {
			return sendError(err)
		}
	}
	req.InTx = func(ctx context.Context, tx *streamdb.Tx, res *entity.ForkResult, urls map[string]string) error {
		if err := wakereg.CopyForFork(ctx, tx, urls, p.String()); err != nil {
			return err
		}
		for _, c := range res.Entities {
			if err := wake.ForkTx(ctx, tx, res.Sources[c.URL], c.URL, res.ForkSeq[c.URL]); err != nil {
				return err
			}
			if err := s.forkAttachments(ctx, tx, res.Sources[c.URL], c.URL, res.ForkSeq[c.URL]); err != nil {
				return err
			}
		}
		if wakeInTx != nil {
			return wakeInTx(ctx, tx, res.Root)
		}
		return nil
	}
	// The origin the client reached us at names the callback URLs of the dispatch
	// subscriptions the copies may get, as for a spawn.
	ctx := httpx.WithOrigin(r.Context(), httpx.RequestOrigin(r))
	res, err := s.registry.Fork(ctx, req)
	if errors.Is(err, entity.ErrTooManyTags) {
		return s.tooManyTags() // the source's tags and the request's together, as a spawn's
	}
	if err != nil {
		return forkError(err, e.URL, req.InstanceID)
	}
	if wakeAfter != nil {
		wakeAfter()
	}
	if initial != nil {
		// after the copy committed and was linked, as the reference does: a refused
		// message leaves the copy in place, and the answer says so
		if _, err := s.sender.Send(r.Context(), res.Root, initial); err != nil {
			return sendError(err)
		}
	}
	out := struct {
		Root     *entity.Entity   `json:"root"`
		Entities []*entity.Entity `json:"entities"`
		Txid     int64            `json:"txid"`
	}{res.Root, res.Entities, res.Txid}
	httpx.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// forkPointer reads fork_pointer {offset: string|null, sub_offset: integer >= 1}.
func forkPointer(b *jsonbody.Body) *entity.ForkPointer {
	raw := b.Raw("fork_pointer")
	if jsonbody.Kind(raw) != 'o' {
		b.Details.Add("/fork_pointer", "must be object")
		return nil
	}
	var v struct {
		Offset    json.RawMessage `json:"offset"`
		SubOffset json.RawMessage `json:"sub_offset"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		b.Details.Add("/fork_pointer", "must be object")
		return nil
	}
	fp := &entity.ForkPointer{}
	switch jsonbody.Kind(v.Offset) {
	case 'n':
	case 's':
		var off string
		if json.Unmarshal(v.Offset, &off) != nil || len(off) > maxForkOffsetLength {
			b.Details.Add("/fork_pointer/offset", fmt.Sprintf("must be a string of at most %d bytes, or null", maxForkOffsetLength))
			return nil
		}
		fp.Offset = &off
	default:
		b.Details.Add("/fork_pointer/offset", "must be string or null")
		return nil
	}
	var sub float64
	if jsonbody.Kind(v.SubOffset) != '#' || json.Unmarshal(v.SubOffset, &sub) != nil {
		b.Details.Add("/fork_pointer/sub_offset", "must be number")
		return nil
	}
	if sub != float64(int64(sub)) || sub < 1 || sub > maxForkSubOffset {
		b.Details.Add("/fork_pointer/sub_offset", "must be an integer from 1 to 2^53")
		return nil
	}
	fp.Sub = int64(sub)
	return fp
}

// forkWake is the fork's wake {subscriberUrl, condition, ...}: as on a spawn, on the root
// copy, made in the fork's transaction. As the reference, it needs a parent and fires to
// that parent only (anything else could wake an entity the caller does not own).
func (s *handlers) forkWake(r *http.Request, b *jsonbody.Body, parent string) (func(context.Context, *streamdb.Tx, *entity.Entity) error, func(), error) {
	if !b.Has("wake") {
		return nil, nil, nil
	}
	spec, d := wakereg.ParseSpec(b.Raw("wake"), "/wake", false)
	if len(d) > 0 {
		return nil, nil, jsonbody.SchemaMismatch(d)
	}
	if parent == "" {
		return nil, nil, httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			"wake requires parent (the fork's wake fires to its parent)")
	}
	if spec.SubscriberURL != parent {
		return nil, nil, httpx.New(http.StatusUnauthorized, api.CodeUnauthorized, "wake.subscriberUrl must match parent")
	}
	p := api.Caller(r)
	if _, err := s.wakeSubscriber(r, p, spec.SubscriberURL); err != nil {
		return nil, nil, err
	}
	if err := s.quotas.wakes(r.Context(), p); err != nil {
		return nil, nil, err
	}
	reg := &wakereg.Registration{Spec: spec, CreatedBy: p.String()}
	inTx := func(ctx context.Context, tx *streamdb.Tx, root *entity.Entity) error {
		reg.Spec.SourceURL = root.URL
		reg.SourceStream = wakereg.EntitySource(root.URL)
		return wakereg.RegisterTx(ctx, tx, reg)
	}
	after := func() { s.wakes.Noted(context.WithoutCancel(r.Context()), reg.SourceStream) }
	return inTx, after, nil
}

func forkError(err error, url, instanceID string) error {
	var tooLarge *entity.ForkTooLargeError
	var timeout *entity.ForkWaitTimeoutError
	var pointer *entity.ForkPointerError
	var ve *entity.ValidationError
	switch {
	case errors.Is(err, entity.ErrNotFound):
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity not found at "+url)
	case errors.Is(err, entity.ErrForkTerminal):
		return httpx.New(http.StatusConflict, api.CodeNotRunning, "Cannot fork terminal entity \""+url+"\" or a descendant of it")
	case errors.Is(err, entity.ErrForkNotTopLevel):
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Only top-level entities can be forked")
	case errors.Is(err, entity.ErrForkInProgress):
		return forkInProgress()
	case errors.Is(err, entity.ErrDuplicate):
		if instanceID != "" {
			return httpx.New(http.StatusConflict, CodeDuplicateURL, "An entity already exists at the fork's URL (instance_id "+instanceID+")")
		}
		return httpx.New(http.StatusConflict, CodeDuplicateURL, "An entity already exists at a fork's URL; try again")
	case errors.As(err, &tooLarge):
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, tooLarge.Error())
	case errors.As(err, &pointer):
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, pointer.Message)
	case errors.As(err, &timeout):
		// the reference's details are {active: [urls]}; ours keep the envelope's shape,
		// one {path: url, message} per entity still active
		var d validation.Details
		for _, u := range timeout.Active {
			d.Add(u, "is still running")
		}
		return httpx.New(http.StatusConflict, CodeForkWaitTimeout, "Timed out waiting for the subtree to become idle").WithDetails(d)
	case errors.As(err, &ve):
		return httpx.New(http.StatusUnprocessableEntity, api.CodeSchemaValidationFailed, ve.Message).WithDetails(ve.Details)
	}
	return err
}

func forkInProgress() *httpx.Error {
	return httpx.New(http.StatusConflict, CodeForkInProgress, "Entity subtree is being forked")
}

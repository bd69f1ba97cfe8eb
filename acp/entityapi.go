package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds what the adapter reads of one answer (a stream chunk, a
// command list): the server bounds its chunks far below this, so hitting it means
// something is wrong, and the adapter's memory stays bounded either way.
const maxResponseBytes = 16 << 20

// callTimeout bounds every request that is not a long-poll, so a stuck server turns
// into an error the editor sees instead of a prompt that never returns.
const callTimeout = 30 * time.Second

// longPollLimit bounds one long-poll request.
const longPollLimit = 2 * time.Minute

// APIError is an answer of the entityd API other than success, with its error envelope
// ({"error":{"code","message","details"}}) when it had one.
type APIError struct {
	Status  int
	Code    string
	Message string
	Details []Detail
}

// Detail is one {path,message} of a refusal, as the server reports it.
type Detail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("entityd: %d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("entityd: %d %s", e.Status, e.Message)
}

// notFound reports whether err is the server's 404.
func notFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// retryable reports whether a failed call may succeed later unchanged: the network,
// timeouts, throttling and the server's 5xx (503 while its database is away).
func retryable(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return true
	}
	return ae.Status >= 500 || ae.Status == http.StatusRequestTimeout || ae.Status == http.StatusTooManyRequests
}

// entityAPI is the client of one entity's part of the entityd HTTP API.
type entityAPI struct {
	base      string // server URL without a trailing slash
	typ, id   string
	token     string // Authorization: Bearer (jwt mode)
	principal string // Electric-Principal (dev mode)
	http      *http.Client
}

func newEntityAPI(o Options) *entityAPI {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Long-polls of two streams plus sends and status reads run at once; keep their
	// connections warm instead of dialing per request.
	t.MaxIdleConnsPerHost = 16
	return &entityAPI{base: strings.TrimRight(o.Server, "/"), typ: o.EntityType, id: o.EntityID,
		token: o.Token, principal: o.Principal, http: &http.Client{Transport: t}}
}

// forEntity is a client of another entity of the same server, with the same
// credentials and connections (a loaded session may attach to any entity).
func (c *entityAPI) forEntity(typ, id string) *entityAPI {
	other := *c
	other.typ, other.id = typ, id
	return &other
}

// url is the entity's URL in the entity API ("/assistant/a1").
func (c *entityAPI) url() string { return "/" + c.typ + "/" + c.id }

func (c *entityAPI) entityPath(suffix string) string {
	return "/_electric/entities/" + url.PathEscape(c.typ) + "/" + url.PathEscape(c.id) + suffix
}

func (c *entityAPI) streamPath(suffix string) string {
	return "/" + url.PathEscape(c.typ) + "/" + url.PathEscape(c.id) + suffix
}

// do sends one request and returns the answer with its body read (bounded); any status
// of 300 or more is an *APIError.
func (c *entityAPI) do(ctx context.Context, method, path string, body []byte) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.principal != "" {
		req.Header.Set("Electric-Principal", c.principal)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxResponseBytes {
		return nil, nil, fmt.Errorf("entityd: %s %s: answer larger than %d bytes", method, path, maxResponseBytes)
	}
	if res.StatusCode >= 300 && res.StatusCode != http.StatusNotModified {
		return res, data, decodeAPIError(res.StatusCode, data)
	}
	return res, data, nil
}

func decodeAPIError(status int, data []byte) *APIError {
	e := &APIError{Status: status}
	var env struct {
		Error struct {
			Code    string   `json:"code"`
			Message string   `json:"message"`
			Details []Detail `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &env) == nil && env.Error.Message != "" {
		e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
	} else {
		e.Message = http.StatusText(status)
	}
	return e
}

// call is do with the call timeout, for everything but long-polls.
func (c *entityAPI) call(ctx context.Context, method, path string, body []byte) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return c.do(ctx, method, path, body)
}

// entityInfo is what the adapter needs of GET /_electric/entities/:type/:id.
type entityInfo struct {
	URL    string `json:"url"`
	Status string `json:"status"`
}

func (c *entityAPI) get(ctx context.Context) (*entityInfo, error) {
	_, data, err := c.call(ctx, http.MethodGet, c.entityPath(""), nil)
	if err != nil {
		return nil, err
	}
	var e entityInfo
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("entityd: entity answer: %w", err)
	}
	return &e, nil
}

// spawn creates the entity with no args; it reports whether this call created it (a
// 409 means someone else did first, which is just as good).
func (c *entityAPI) spawn(ctx context.Context) (bool, error) {
	_, _, err := c.call(ctx, http.MethodPut, c.entityPath(""), []byte(`{}`))
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return false, nil
	}
	return err == nil, err
}

// sendResult is the answer to a send: the entity's main-stream offset just after the
// message, and the message's sequence number (the offset's first number).
type sendResult struct {
	Txid   string `json:"txid"`
	Offset string `json:"offset"`
	Seq    int64  `json:"-"`
}

// sendComposerInput sends payload (a composer_input, raw JSON) with an idempotency key.
func (c *entityAPI) sendComposerInput(ctx context.Context, key string, payload []byte) (*sendResult, error) {
	return c.send(ctx, "composer_input", key, payload)
}

// send sends payload (raw JSON) as a message of type typ with an idempotency key.
func (c *entityAPI) send(ctx context.Context, typ, key string, payload []byte) (*sendResult, error) {
	body := make([]byte, 0, len(payload)+len(key)+len(typ)+64)
	t, _ := json.Marshal(typ)
	body = append(body, `{"type":`...)
	body = append(body, t...)
	body = append(body, `,"key":`...)
	k, _ := json.Marshal(key)
	body = append(body, k...)
	body = append(body, `,"payload":`...)
	body = append(body, payload...)
	body = append(body, '}')
	_, data, err := c.call(ctx, http.MethodPost, c.entityPath("/send"), body)
	if err != nil {
		return nil, err
	}
	var r sendResult
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("entityd: send answer: %w", err)
	}
	seq, err := offsetSeq(r.Offset)
	if err != nil {
		return nil, fmt.Errorf("entityd: send answer has no usable offset (%q); is the server older than the ACP adapter?", r.Offset)
	}
	r.Seq = seq
	return &r, nil
}

// offsetSeq is the sequence number of a stream offset "<seq>_<pos>".
func offsetSeq(o string) (int64, error) {
	s, _, ok := strings.Cut(o, "_")
	if !ok {
		return 0, errors.New("malformed offset")
	}
	return strconv.ParseInt(s, 10, 64)
}

// signal sends a signal (SIGINT on session/cancel) to the entity.
func (c *entityAPI) signal(ctx context.Context, sig string) error {
	body, _ := json.Marshal(map[string]string{"signal": sig})
	_, _, err := c.call(ctx, http.MethodPost, c.entityPath("/signal"), body)
	return err
}

// wakeStatus is what the adapter reads of GET …/wake: how far the entity's stream has
// been handled, and the units of work given up on.
type wakeStatus struct {
	ScannedSeq int64 `json:"scanned_seq"`
	Failures   []struct {
		Seq int64  `json:"seq"`
		Key string `json:"key"`
	} `json:"failures"`
}

func (c *entityAPI) wake(ctx context.Context) (*wakeStatus, error) {
	_, data, err := c.call(ctx, http.MethodGet, c.entityPath("/wake"), nil)
	if err != nil {
		return nil, err
	}
	var st wakeStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("entityd: wake status: %w", err)
	}
	return &st, nil
}

// commandRow is one effective slash command as the list endpoint shows it (fields the
// adapter does not use are left out).
type commandRow struct {
	Name        string     `json:"name"`
	Description *string    `json:"description"`
	Arguments   []argument `json:"arguments"`
	Source      string     `json:"source"`
}

type argument struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"`
	Required    *bool   `json:"required"`
	Description *string `json:"description"`
}

// listCommands reads the effective commands and the collection stream's tail (the
// ETag), from which changes after this list can be followed.
func (c *entityAPI) listCommands(ctx context.Context) ([]commandRow, string, error) {
	res, data, err := c.call(ctx, http.MethodGet, c.entityPath("/slash-commands"), nil)
	if err != nil {
		return nil, "", err
	}
	var rows []commandRow
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, "", fmt.Errorf("entityd: slash-command list: %w", err)
	}
	return rows, strings.Trim(res.Header.Get("ETag"), `"`), nil
}

// event is one State Protocol event of a stream read.
type event struct {
	Type    string          `json:"type"`
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Headers struct {
		Operation string `json:"operation"`
		Control   string `json:"control"`
		Offset    string `json:"offset"` // the offset just after the event
	} `json:"headers"`
}

// batch is one answer of a stream read.
type batch struct {
	events   []event
	next     string // Stream-Next-Offset: where the next read starts
	cursor   string // Stream-Cursor, echoed on the next long-poll
	closed   bool   // Stream-Closed: nothing will follow
	upToDate bool   // Stream-Up-To-Date: the read reached the stream's tail
}

// readStream reads the entity stream at suffix ("/main", "/slash-commands") after
// offset: with live, a long-poll (an empty batch when it timed out, 204); without, a
// catch-up chunk.
func (c *entityAPI) readStream(ctx context.Context, suffix, offset, cursor string, live bool) (*batch, error) {
	q := url.Values{"offset": {offset}}
	if live {
		q.Set("live", "long-poll")
		if cursor != "" {
			q.Set("cursor", cursor)
		}
	}
	timeout := callTimeout
	if live {
		// The server answers a long-poll within its timeout (20s by default); this only
		// catches a server or proxy that never answers.
		timeout = longPollLimit
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, data, err := c.do(ctx, http.MethodGet, c.streamPath(suffix)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	b := &batch{next: res.Header.Get("Stream-Next-Offset"), cursor: res.Header.Get("Stream-Cursor"),
		closed: res.Header.Get("Stream-Closed") == "true", upToDate: res.Header.Get("Stream-Up-To-Date") == "true"}
	if b.next == "" {
		b.next = offset
	}
	if res.StatusCode == http.StatusOK && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &b.events); err != nil {
			return nil, fmt.Errorf("entityd: stream %s: %w", suffix, err)
		}
	}
	return b, nil
}

// entityRow is what the adapter reads of one entity in the entity list.
type entityRow struct {
	URL       string `json:"url"`
	Status    string `json:"status"`
	UpdatedAt int64  `json:"updated_at"` // Unix milliseconds
}

// listEntities reads one page of GET /_electric/entities?type=typ: at most limit
// entities after the one at after ("" for the first page), oldest first, without those
// the caller may not read; next is where the following page starts ("" when this was
// the last). A type-level call, on whichever entity's client.
func (c *entityAPI) listEntities(ctx context.Context, typ, after string, limit int) ([]entityRow, string, error) {
	q := url.Values{"type": {typ}, "limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	res, data, err := c.call(ctx, http.MethodGet, "/_electric/entities?"+q.Encode(), nil)
	if err != nil {
		return nil, "", err
	}
	var rows []entityRow
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, "", fmt.Errorf("entityd: entity list: %w", err)
	}
	return rows, res.Header.Get("Entityd-Next-After"), nil
}

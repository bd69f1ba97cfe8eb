package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxResponse bounds what the SDK reads from one response (a stream chunk, a list).
const maxResponse = 64 << 20

// APIError is an error answer of the server.
type APIError struct {
	Status int
	Code   string
	Msg    string
	URL    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: %d %s %s", e.URL, e.Status, e.Code, e.Msg)
}

// call sends a request with a JSON body (nil: none) and decodes a JSON answer into out
// (nil: ignored). A 204 leaves out alone and reports ok=false.
func (r *External) call(ctx context.Context, method, target, token string, body, out any) (ok bool, err error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return false, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.abs(target), rd)
	if err != nil {
		return false, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r.decorate(req, token)
	res, err := r.client.Do(req)
	if err != nil {
		return false, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return false, err
	}
	if res.StatusCode >= 300 {
		return false, apiError(req.URL.String(), res.StatusCode, data)
	}
	if res.StatusCode == http.StatusNoContent {
		return false, nil
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return false, fmt.Errorf("%s: %w", req.URL, err)
		}
	}
	return true, nil
}

func apiError(u string, status int, data []byte) error {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &e)
	out := &APIError{Status: status, URL: u, Code: e.Error.Code, Msg: e.Error.Message}
	if out.Code == "" {
		out.Code, out.Msg = e.Code, e.Message
	}
	if out.Code == "" && out.Msg == "" {
		out.Msg = strings.TrimSpace(string(data[:min(len(data), 256)]))
	}
	return out
}

// abs resolves a server path (or passes an absolute URL through).
func (r *External) abs(target string) string {
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		return target
	}
	return r.server + target
}

func (r *External) decorate(req *http.Request, token string) {
	for k, vs := range r.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

// streamChunk is one read of a JSON stream: its messages and where the next read starts.
type streamChunk struct {
	events   [][]byte
	next     string
	upToDate bool
}

// readStream reads the JSON stream at path from offset: a catch-up read, or with live
// a long-poll that waits for something after offset (204 when it timed out, with the
// same offset as next).
func (r *External) readStream(ctx context.Context, path, offset string, live bool) (*streamChunk, error) {
	target := r.abs(path) + "?offset=" + url.QueryEscape(offset)
	if live {
		target += "&live=long-poll"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	r.decorate(req, "")
	res, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return nil, err
	}
	c := &streamChunk{next: res.Header.Get("Stream-Next-Offset"), upToDate: res.Header.Get("Stream-Up-To-Date") == "true"}
	switch {
	case live && res.StatusCode == http.StatusNoContent:
		if c.next == "" {
			c.next = offset
		}
		return c, nil
	case res.StatusCode != http.StatusOK:
		return nil, apiError(req.URL.String(), res.StatusCode, data)
	}
	var events []json.RawMessage
	if err := json.Unmarshal(data, &events); err != nil {
		return nil, fmt.Errorf("%s: not a JSON stream: %w", req.URL, err)
	}
	if c.next == "" {
		return nil, errors.New(req.URL.String() + ": no Stream-Next-Offset")
	}
	for _, ev := range events {
		c.events = append(c.events, ev)
	}
	return c, nil
}

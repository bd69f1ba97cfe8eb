package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"go.uber.org/zap"
)

// maxLine is the longest JSON-RPC message the adapter reads: the SDK's own limit (a
// longer line would end the SDK's connection, so the guard answers it instead).
const maxLine = 10 << 20

// wireOut is the client's side of stdout: every write is one whole JSON-RPC message (the
// SDK writes a message and its newline in one call; the guard does the same), serialized
// by one lock so the SDK's messages and the guard's error answers never interleave.
//
// It also tells a session when the answer to its session/new is on the wire: ACP clients
// look sessions up by id, so an available_commands_update sent before that answer could
// be dropped as belonging to no session.
type wireOut struct {
	mu      sync.Mutex
	w       io.Writer
	pending map[string]chan struct{} // session id → closed after its session/new answer
}

func newWireOut(w io.Writer) *wireOut {
	return &wireOut{w: w, pending: map[string]chan struct{}{}}
}

func (o *wireOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.w.Write(p)
	if err == nil && len(o.pending) > 0 {
		o.answeredLocked(p)
	}
	return n, err
}

// answeredLocked closes the channel of the session whose session/new answer p is. Only
// small messages are looked at (the answer is), and only while a session waits.
func (o *wireOut) answeredLocked(p []byte) {
	if len(p) > 4096 || !bytes.Contains(p, []byte(`"sessionId"`)) {
		return
	}
	var m struct {
		Method string `json:"method"`
		Result *struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if json.Unmarshal(p, &m) != nil || m.Method != "" || m.Result == nil {
		return
	}
	if ch, ok := o.pending[m.Result.SessionID]; ok {
		close(ch)
		delete(o.pending, m.Result.SessionID)
	}
}

// afterAnswer returns a channel closed once the answer announcing session id is written.
func (o *wireOut) afterAnswer(id string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := make(chan struct{})
	o.pending[id] = ch
	return ch
}

// forget drops the wait of afterAnswer's channel ch for id, if it is still pending (the
// session ended before its answer went out). Only that channel: a session id is free
// again once its session is closed, and the next session/new may be waiting under it.
func (o *wireOut) forget(id string, ch <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.pending[id]; ok && (<-chan struct{})(cur) == ch {
		delete(o.pending, id)
	}
}

// JSON-RPC error answers the guard writes itself (id null: the message had no usable id).
var (
	parseErrorLine   = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"error":"the line is not valid JSON"}}}` + "\n")
	batchErrorLine   = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"a message must be a JSON object (batches are not supported)"}}}` + "\n")
	tooLongErrorLine = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"message longer than 10 MiB"}}}` + "\n")
)

// guardInput copies the client's messages to the SDK, one line each, and answers itself
// what the SDK would drop without a word (it logs a line it cannot parse and goes on, so
// the client would wait forever): lines that are not JSON (-32700), JSON that is not a
// JSON-RPC 2.0 message object, and lines past maxLine (-32600). Unknown methods and bad
// params reach the SDK, which answers them (-32601, -32602). It closes sdkIn when in ends.
func guardInput(in io.Reader, sdkIn *io.PipeWriter, out *wireOut, log *zap.Logger) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		switch {
		case tooLong:
			_, _ = out.Write(tooLongErrorLine)
		case len(bytes.TrimSpace(line)) > 0:
			if answer := checkMessage(line); answer != nil {
				log.Debug("refused a malformed JSON-RPC message", zap.ByteString("answer", answer))
				_, _ = out.Write(answer)
			} else if _, werr := sdkIn.Write(append(line, '\n')); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				log.Warn("reading the client's messages", zap.Error(err))
			}
			_ = sdkIn.Close()
			return
		}
	}
}

// readLine reads one line without its newline; a line longer than maxLine is read to its
// end, dropped, and reported as tooLong.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxLine+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte{'\n'}), tooLong, err
	}
}

// checkMessage returns the error answer for a line that is not a JSON-RPC 2.0 message
// object, nil for one the SDK should handle.
func checkMessage(line []byte) []byte {
	if !json.Valid(line) {
		return parseErrorLine
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		return batchErrorLine
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return parseErrorLine
	}
	id, hasID := m["id"]
	idText := "null"
	if hasID {
		switch {
		case bytes.Equal(id, []byte("null")):
		case len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9'):
			idText = string(id)
		default:
			return shapeError("null", "id must be a string, a number or null")
		}
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return shapeError(idText, `jsonrpc must be "2.0"`)
	}
	method, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case hasMethod && (len(method) < 3 || method[0] != '"'):
		return shapeError(idText, "method must be a non-empty string")
	case !hasMethod && !(hasID && (hasResult || hasError)):
		return shapeError(idText, "a message needs a method (a request or notification) or an id with a result or error (a response)")
	}
	return nil
}

func shapeError(id, msg string) []byte {
	b, _ := json.Marshal(msg)
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"Invalid request","data":{"error":` + string(b) + `}}}` + "\n")
}

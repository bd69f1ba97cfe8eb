package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/wire"
	"github.com/entityd/entityd/wire/composer"
)

// sendInput is the send tool's input: a prompt invocation, free text, or both (the
// text follows the command).
type sendInput struct {
	Prompt    string            `json:"prompt,omitempty" jsonschema:"the prompt (slash command) to invoke, without the leading slash"`
	Arguments map[string]string `json:"arguments,omitempty" jsonschema:"the prompt's arguments, as for prompts/get"`
	Text      string            `json:"text,omitempty" jsonschema:"text to send; after the command when prompt is given"`
	Mode      string            `json:"mode,omitempty" jsonschema:"immediate (default), queued, paused or steer"`
	Key       string            `json:"key,omitempty" jsonschema:"idempotency key: a retry with the same key and message is not delivered twice"`
}

// sendOutput is what the entity's send answered.
type sendOutput struct {
	Txid   string `json:"txid" jsonschema:"the transaction id of the append"`
	Offset string `json:"offset" jsonschema:"the entity stream's offset just after the message, to follow the reply from"`
}

// maxSendKey mirrors the HTTP send's key bound.
const maxSendKey = 256

func (en *entry) addSendTool() {
	mcp.AddTool(en.server, &mcp.Tool{Name: "send",
		Description: "Send a composer_input message to the entity " + en.url +
			": the prompt invocation (/name arguments) and/or text, with slash commands marked as nodes."},
		en.send)
}

// send builds the composer_input the way a composer would (slash_command nodes at
// UTF-16 spans, unknown commands flagged) and delivers it with the caller's identity
// after checking their write permission, exactly as POST …/send would.
func (en *entry) send(ctx context.Context, req *mcp.CallToolRequest, in sendInput) (*mcp.CallToolResult, sendOutput, error) {
	e, p, err := en.writer(ctx, req)
	if err != nil {
		return nil, sendOutput{}, err
	}
	text, err := en.messageText(in)
	if err != nil {
		return nil, sendOutput{}, err
	}
	mode := in.Mode
	switch mode {
	case "":
		mode = wire.ModeImmediate
	case wire.ModeImmediate, wire.ModeQueued, wire.ModePaused, wire.ModeSteer:
	default:
		return nil, sendOutput{}, fmt.Errorf("mode must be immediate, queued, paused or steer")
	}
	if len(in.Key) > maxSendKey {
		return nil, sendOutput{}, fmt.Errorf("key must be at most %d characters", maxSendKey)
	}
	res, err := en.s.deps.Sender.Send(ctx, e, &inbox.SendRequest{Type: composer.InputType,
		Payload: composer.Serialize(text, en.known), Key: in.Key, Mode: mode, Sender: p.URL()})
	if err != nil {
		return nil, sendOutput{}, sendFailure(err)
	}
	return nil, sendOutput{Txid: res.Txid, Offset: res.Offset.String()}, nil
}

// writer is the entity and the caller of a tool call that sends, once the caller's
// write permission is checked, exactly as POST …/send checks it.
func (en *entry) writer(ctx context.Context, req *mcp.CallToolRequest) (*entity.Entity, principal.Principal, error) {
	p, err := callerOf(req)
	if err != nil {
		return nil, p, err
	}
	e, err := en.s.deps.Entities.Known(ctx, en.url)
	if err != nil {
		if errors.Is(err, entity.ErrNotFound) {
			return nil, p, fmt.Errorf("entity %s no longer exists", en.url)
		}
		return nil, p, err
	}
	if c := en.s.deps.Checker; c != nil {
		ok, err := c.Entity(ctx, p, e, authz.Write)
		if err != nil {
			return nil, p, err
		}
		if !ok {
			return nil, p, fmt.Errorf("%s may not write to %s", p, en.url)
		}
	}
	return e, p, nil
}

// messageText is the composer text of a send: the invocation, then the free text.
func (en *entry) messageText(in sendInput) (string, error) {
	var parts []string
	if in.Prompt != "" {
		row, ok := en.row(strings.TrimPrefix(in.Prompt, "/"))
		if !ok {
			return "", fmt.Errorf("the entity has no prompt %q", in.Prompt)
		}
		if err := checkArguments(row, in.Arguments); err != nil {
			// a tool's bad input is the tool's error (isError), not the protocol's
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				return "", errors.New(je.Message)
			}
			return "", err
		}
		parts = append(parts, invocation(row, in.Arguments))
	} else if len(in.Arguments) > 0 {
		return "", errors.New("arguments need a prompt")
	}
	if t := strings.TrimSpace(in.Text); t != "" {
		parts = append(parts, in.Text)
	}
	if len(parts) == 0 {
		return "", errors.New("give a prompt, text, or both")
	}
	return strings.Join(parts, " "), nil
}

// sendFailure says why the server refused the message, with the validator's details.
func sendFailure(err error) error {
	var invalid *inbox.InvalidPayloadError
	switch {
	case errors.Is(err, entity.ErrNotRunning):
		return errors.New("the entity is not accepting messages (NOT_RUNNING)")
	case errors.Is(err, inbox.ErrKeyReused):
		return errors.New("this key was already used for a different message (IDEMPOTENCY_KEY_REUSED)")
	case errors.As(err, &invalid):
		var b strings.Builder
		b.WriteString("the message is not valid (SCHEMA_VALIDATION_FAILED):")
		for _, d := range invalid.Details {
			fmt.Fprintf(&b, " %s %s;", d.Path, d.Message)
		}
		return errors.New(strings.TrimSuffix(b.String(), ";"))
	}
	return err
}

// callerOf is the principal the request's session belongs to (see sessionOwner).
func callerOf(req *mcp.CallToolRequest) (principal.Principal, error) {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return principal.Principal{}, errors.New("no authenticated principal")
	}
	p, ok := principal.Parse(req.Extra.TokenInfo.UserID)
	if !ok {
		return principal.Principal{}, errors.New("no authenticated principal")
	}
	return p, nil
}
